"""env=atari (EnvPool's ALE): episodic life for training only, whole games and raw scores in the statistics,
same-step resets that agree with the single env, evaluation on whole games, videos, one-line errors."""

import importlib.util

import numpy as np
import pytest

from raylab.config import EnvConfig
from raylab.envs import atari, make_env, make_vector_env
from raylab.envs.registry import check_env_config, make_render_env
from raylab.errors import ConfigError

DEEPMIND = {"frame_skip": 4, "grayscale": True, "resize": (84, 84), "frame_stack": 4, "noop_max": 30}


def test_episodic_life_ends_training_episodes_at_each_lost_life_and_reports_whole_games_on_raw_scores():
    """Breakout has 5 lives: random play loses them in ~25 agent steps each. Every lost life is a terminal step
    for the learner, the game goes on (no reset to a fresh board), and the episode statistics count whole games:
    their return is the raw score (the learner's rewards are clipped) and their length every step of the game."""
    cfg = EnvConfig(family="atari", id="Breakout-v5", reward_clip=0.5, **DEEPMIND)
    venv = make_vector_env(cfg, num_envs=2, seed=3)
    venv.reset()
    rng = np.random.default_rng(0)
    terminals, steps = np.zeros(2, int), np.zeros(2, int)
    games: list[tuple[int, dict[str, float], int, int]] = []
    while len(games) < 4:
        step = venv.step(rng.integers(0, 4, 2))
        assert np.all(np.abs(step.rewards) <= 0.5)
        steps += 1
        terminals += step.terminated
        for i, record in step.episodes:
            games.append((i, record, int(steps[i]), int(terminals[i])))
            steps[i] = terminals[i] = 0
    for i, record, length, lives_lost in games:
        assert lives_lost == 5, f"env {i}: a game of Breakout ends at its 5th lost life ({lives_lost} terminals)"
        assert record["length"] == length
        assert record["return"] >= 0 and record["return"] == int(record["return"])
    venv.close()


@pytest.mark.parametrize(("clip", "scale"), [(1.0, 1.0), (None, 0.5)])
def test_raw_scores_reach_the_statistics_and_the_learner_sees_the_transformed_rewards(clip, scale):
    """Space Invaders pays 5-30 points an alien: the statistics must hold the raw score (EnvPool's own reward
    clip off), while the learner's rewards are clipped to [-1, 1] (one per alien) or scaled."""
    cfg = EnvConfig(family="atari", id="SpaceInvaders-v5", reward_clip=clip, reward_scale=scale, **DEEPMIND)
    venv = make_vector_env(cfg, num_envs=4, seed=1)
    venv.reset()
    rng = np.random.default_rng(1)
    learner = np.zeros(4)
    records = []
    while len(records) < 4:
        step = venv.step(rng.integers(0, 6, 4))
        learner += step.rewards
        for i, record in step.episodes:
            records.append((record["return"], learner[i]))
            learner[i] = 0.0
    assert all(raw > 0 for raw, _ in records), "random Space Invaders shoots an alien now and then"
    for raw, seen in records:
        if clip is None:
            assert seen == pytest.approx(scale * raw)
        else:
            assert seen > 0 and raw >= 5 * seen  # one clipped reward per alien worth >= 5 points
    venv.close()


def test_the_single_env_plays_whole_games_continuing_after_each_lost_life():
    """make_env's single env (videos, the env checker) ends its episode only when the game is over: after a
    lost life it takes EnvPool's life-loss reset (no-ops, FIRE) as training does, and goes on."""
    env = make_env(EnvConfig(family="atari", id="Breakout-v5", **DEEPMIND), seed=4)
    lives = [env.step(0)[4]["lives"]]
    rng = np.random.default_rng(4)
    for _ in range(5000):
        _, _, terminated, truncated, info = env.step(int(rng.integers(0, 4)))
        lives.append(info["lives"])
        if terminated or truncated:
            break
    assert terminated and not truncated and lives[-1] == 0
    assert sorted(set(lives), reverse=True) == [5, 4, 3, 2, 1, 0]  # every life lost inside one episode
    env.close()


@pytest.mark.parametrize("limit", [60, None])
def test_the_vector_env_matches_the_single_env_and_resets_on_the_same_step(limit):
    """Whole games (no episodic life) ended by Pong itself or by env.max_episode_steps (60 agent steps): the
    EnvPool adapter agrees with the single env frame for frame, resets on the same step, and hands back the real
    last frame of truncated episodes."""
    cfg = EnvConfig(family="atari", id="Pong-v5", max_episode_steps=limit, options={"episodic_life": False}, **DEEPMIND)
    venv = make_vector_env(cfg, num_envs=1, seed=7)
    single = make_env(cfg, seed=7)
    np.testing.assert_array_equal(venv.reset()[0], single.reset(seed=7)[0])
    actions = np.random.default_rng(3).integers(0, 6, 400 if limit else 1800)
    ended = 0
    for t, a in enumerate(actions):
        step = venv.step(np.array([a]))
        obs, _, terminated, truncated, _ = single.step(int(a))
        assert (bool(step.terminated[0]), bool(step.truncated[0])) == (terminated, truncated), f"step {t}"
        if terminated or truncated:
            ended += 1
            if truncated and not terminated:
                np.testing.assert_array_equal(step.final_obs[0][1], obs)
            assert len(step.episodes) == 1 and step.episodes[0][1]["length"] == (limit or step.episodes[0][1]["length"])
            obs, _ = single.reset()
        np.testing.assert_array_equal(step.obs[0], obs, err_msg=f"step {t}")
    assert ended >= (6 if limit else 1)


def test_reset_actions_follow_every_reset_alike_in_the_vector_env_and_the_single_env():
    """env.options.reset_actions=[2] (baselines' FIRE reset: FIRE, then action 2) on BeamRider, whose next life
    waits for a move: in a batch of 3 games, where EnvPool's partial steps come back in its own order, each game
    after each lost life plays the reset step and action 2 as a single env of its seed does (the vector env a
    terminal for the learner, the single env going on), frame for frame; each game ends on the same step in both,
    its raw score the single env's rewards summed (action 2's included) and its length every agent step played,
    the 3 reset-action steps (the start, 2 lost lives) among them."""
    cfg = EnvConfig(family="atari", id="BeamRider-v5", options={"reset_actions": [2]}, **DEEPMIND)
    venv = make_vector_env(cfg, num_envs=3, seed=2)
    singles = [make_env(cfg, seed=2 + i) for i in range(3)]
    first = venv.reset()
    for i, single in enumerate(singles):
        np.testing.assert_array_equal(first[i], single.reset(seed=2 + i)[0])
    rng = np.random.default_rng(2)
    lives_lost, scores, ended = np.zeros(3, int), np.zeros(3), {}
    for t in range(27_000):
        actions = rng.integers(0, 9, 3)
        step = venv.step(actions)
        games = dict(step.episodes)
        for i, single in enumerate(singles):
            if i in ended:
                continue
            obs, reward, terminated, truncated, _ = single.step(int(actions[i]))
            scores[i] += reward
            if i in games:  # the vector env is at the next game's first frame already
                assert terminated and not truncated, f"game {i}: the single env plays on"
                ended[i] = (t, games[i])
                continue
            assert not (terminated or truncated), f"game {i}, step {t}: the single env ended its game first"
            np.testing.assert_array_equal(step.obs[i], obs, err_msg=f"game {i}, step {t}")
            lives_lost[i] += int(step.terminated[i])
        if len(ended) == 3:
            break
    assert list(lives_lost) == [2, 2, 2], "BeamRider's 3 lives, each ended by the game"
    for i, (t, record) in ended.items():
        assert record["return"] == scores[i], f"game {i}"
        assert record["length"] == t + 1 + 3, f"game {i}: its {t + 1} steps and the 3 reset-action steps"
    assert scores.sum() > 0
    venv.close()
    for single in singles:
        single.close()


def test_reset_actions_start_beamriders_next_life_where_fire_alone_leaves_it_waiting():
    """After the first lost life a policy that only plays NOOP: with EnvPool's FIRE reset alone BeamRider shows
    the same waiting screen for 1,500 agent steps (no reward, no life lost); with reset_actions=[2] the next
    life starts and is lost."""
    outcomes = {}
    for options in ({}, {"reset_actions": [2]}):
        venv = make_vector_env(EnvConfig(family="atari", id="BeamRider-v5", options=options, **DEEPMIND), 1, seed=0)
        venv.reset()
        rng = np.random.default_rng(0)
        while not venv.step(rng.integers(0, 9, 1)).terminated[0]:
            pass
        went_on = None
        for t in range(1500):
            step = venv.step(np.zeros(1, np.int64))
            if step.rewards[0] or step.terminated[0] or step.truncated[0]:
                went_on = t
                break
        outcomes[bool(options)] = went_on
        venv.close()
    assert outcomes[False] is None and outcomes[True] is not None


def test_workers_play_different_games():
    """Pong's opening screens are the same whatever the seed; the seeded no-op starts make the games differ."""
    cfg = EnvConfig(family="atari", id="Pong-v5", **DEEPMIND)
    first, second = (make_vector_env(cfg, num_envs=2, seed=5, worker_index=w) for w in (0, 1))
    first.reset(), second.reset()
    actions = np.zeros(2, np.int64)
    differ = False
    for _ in range(100):
        differ |= not np.array_equal(first.step(actions).obs, second.step(actions).obs)
    assert differ


def test_videos_render_the_rgb_screen():
    env = make_render_env(EnvConfig(family="atari", id="Pong-v5", **DEEPMIND), seed=0)
    env.step(0)
    frame = env.render()
    assert frame.shape == (210, 160, 3) and frame.dtype == np.uint8 and frame.any()
    assert env.metadata["render_fps"] == 15
    env.close()


@pytest.mark.parametrize(
    ("cfg", "message"),
    [
        (EnvConfig(family="atari", id="Pongg-v5"), "did you mean Pong-v5"),
        (EnvConfig(family="atari", id="pong", options={"sticky": 0.25}), "valid options are episodic_life"),
        (EnvConfig(family="atari", id="pong", options={"repeat_action_probability": 1.5}), "in \\[0, 1\\)"),
        (EnvConfig(family="atari", id="pong", options={"episodic_life": "yes"}), "true or false"),
        (EnvConfig(family="atari", id="pong", options={"num_threads": 0}), "integer >= 1"),
        (EnvConfig(family="atari", id="pong", options={"reset_actions": 2}), "list of action indices.*\\[2\\]"),
        (EnvConfig(family="atari", id="pong", options={"reset_actions": [True]}), "list of action indices"),
        (EnvConfig(family="atari", id="pong", normalize_reward=True), "env.normalize_reward=false"),
    ],
)
def test_bad_ids_and_options_are_one_line_naming_the_fix(cfg, message):
    with pytest.raises(ConfigError, match=message) as info:
        check_env_config(cfg)
    assert "\n" not in str(info.value)


def test_a_reset_action_the_game_lacks_is_one_line_naming_the_fix():
    cfg = EnvConfig(family="atari", id="BeamRider-v5", options={"reset_actions": [9]}, **DEEPMIND)
    for make in (lambda: make_vector_env(cfg, num_envs=1, seed=0), lambda: make_env(cfg, seed=0)):
        with pytest.raises(ConfigError, match=r"names an action BeamRider-v5 lacks: it has 9 \(0-8\).*reset_actions"):
            make()


def test_game_names_resolve_to_envpool_ids():
    expected = {"Pong-v5": "Pong-v5", "pong": "Pong-v5", "Pong": "Pong-v5", "MontezumaRevenge": "MontezumaRevenge-v5"}
    assert {name: atari.task_id(EnvConfig(family="atari", id=name)) for name in expected} == expected


def test_missing_envpool_names_the_atari_extra(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "envpool" else real(name, *a))
    with pytest.raises(ConfigError, match=r"pip install '.*\[atari\]'"):
        check_env_config(EnvConfig(family="atari", id="Pong-v5"))

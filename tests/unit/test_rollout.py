"""Vector env, rollout worker and evaluator on the fake env (no Ray)."""

import numpy as np
import pytest

from raylab.builders import build_evaluator, build_rollout_worker
from raylab.config import EnvConfig
from raylab.envs import env_spaces, make_env, make_vector_env
from raylab.errors import ConfigError
from raylab.types import EvalTarget, Weights
from tests.conftest import FAKE, make_config


def test_vector_env_resets_in_the_same_step_and_returns_truncated_final_obs():
    cfg = EnvConfig(family="fake", id="Fake-v0", max_episode_steps=3, options={"episode_length": 5})
    venv = make_vector_env(cfg, num_envs=2, seed=0)
    venv.reset()
    finals = []
    for _ in range(3):
        step = venv.step(np.zeros(2, np.int64))
        finals.append(step.final_obs)
    assert step.truncated.all() and not step.terminated.any()
    assert [i for i, _ in finals[-1]] == [0, 1]
    assert finals[0] == [] and finals[1] == []


def test_make_env_seeds_per_worker():
    cfg = EnvConfig(family="gymnasium", id="CartPole-v1")
    a, b, c = make_env(cfg, 7, 0), make_env(cfg, 7, 0), make_env(cfg, 7, 1)
    oa, ob, oc = a.reset()[0], b.reset()[0], c.reset()[0]  # each continues its seeded stream
    np.testing.assert_array_equal(oa, ob)
    assert not np.array_equal(oa, oc)


@pytest.mark.parametrize("obs_shape", [[4], [2, 8, 8]])
def test_chunks_have_steps_by_envs_layout_and_the_env_dtype(tmp_path, obs_shape):
    cfg = make_config(
        tmp_path, *FAKE, f"env.options.obs_shape={obs_shape}", "env.max_episode_steps=7",
        "topology.envs_per_worker=3", "topology.rollout_length=10", "topology.num_workers=2",
        "model.hidden_sizes=[8]",
    )  # fmt: skip
    spaces = env_spaces(cfg.env)
    worker = build_rollout_worker(cfg, spaces, worker_id=1)
    chunk, stats = worker.sample()
    dtype = np.uint8 if len(obs_shape) == 3 else np.float32
    assert chunk.obs.shape == (11, 3, *obs_shape) and chunk.obs.dtype == dtype
    assert chunk.actions.shape == chunk.rewards.shape == chunk.terminated.shape == (10, 3)
    assert (chunk.worker_id, chunk.seq, chunk.policy_version) == (1, 0, -1)
    assert chunk.truncated[6].all() and chunk.final_index.tolist() == [[6, 0], [6, 1], [6, 2]]
    assert chunk.final_obs.shape == (3, *obs_shape) and chunk.final_obs.dtype == dtype
    assert stats.num_steps == 30 and len(stats.episodes) == 3
    np.testing.assert_array_equal(stats.episodes.lengths, [7, 7, 7])
    assert {"env", "inference"} <= set(stats.timings)
    chunk2, _ = worker.sample()
    np.testing.assert_array_equal(chunk2.obs[0], chunk.obs[-1])  # chunks follow on
    assert chunk2.seq == 1


def test_same_seed_same_chunks(tmp_path):
    cfg = make_config(tmp_path, *FAKE, "topology.envs_per_worker=2", "model.hidden_sizes=[8]")
    spaces = env_spaces(cfg.env)
    a, b = build_rollout_worker(cfg, spaces, 0), build_rollout_worker(cfg, spaces, 0)
    weights = Weights(0, {k: v.numpy().copy() for k, v in a.policy.q_net.state_dict().items()})
    b.set_weights(weights)
    a.set_weights(weights)
    ca, cb = a.sample()[0], b.sample()[0]
    np.testing.assert_array_equal(ca.obs, cb.obs)
    np.testing.assert_array_equal(ca.actions, cb.actions)
    other = build_rollout_worker(cfg, spaces, 1)
    assert not np.array_equal(other.sample()[0].obs, ca.obs)


def test_worker_epsilons_follow_the_apex_ladder(tmp_path):
    cfg = make_config(tmp_path, *FAKE, "topology.num_workers=2", "topology.envs_per_worker=4",
                      "algo.epsilon.anneal_env_steps=0")  # fmt: skip
    spaces = env_spaces(cfg.env)
    w0, w1 = build_rollout_worker(cfg, spaces, 0), build_rollout_worker(cfg, spaces, 1)
    ladder = 0.4 ** (1 + 7 * np.arange(8) / 7)
    np.testing.assert_allclose(np.concatenate([w0.policy.epsilons(0), w1.policy.epsilons(0)]), ladder)


def test_evaluator_runs_exactly_the_requested_episodes(tmp_path):
    cfg = make_config(tmp_path, *FAKE, "env.options.episode_length=5", "eval.episodes=4", "model.hidden_sizes=[8]")
    spaces = env_spaces(cfg.env)
    evaluator = build_evaluator(cfg, spaces)
    weights = Weights(3, {k: v.numpy() for k, v in evaluator.policy.q_net.state_dict().items()})
    result = evaluator.evaluate(weights, episodes=7)
    assert result.returns.shape == (7,) and (result.lengths == 5).all() and result.version == 3
    assert 0 <= result.mean <= 5


def test_eval_env_options_set_the_evaluation_envs_only(tmp_path):
    """eval.env_options go over env.options in the evaluation envs (Mario's stall_steps there ends a greedy
    episode that stands still), and the rollout workers keep the training env's own."""
    cfg = make_config(tmp_path, *FAKE, "env.options.episode_length=9", "+eval.env_options.episode_length=4",
                      "eval.episodes=3", "model.hidden_sizes=[8]")  # fmt: skip
    assert cfg.eval_env.options["episode_length"] == 4 and cfg.env.options["episode_length"] == 9
    spaces = env_spaces(cfg.env)
    assert (build_evaluator(cfg, spaces).evaluate(None, 3).lengths == 4).all()
    worker = build_rollout_worker(cfg, spaces, 0)
    assert worker.env.envs[0].unwrapped.episode_length == 9


def test_eval_env_options_hold_stop_mean_return_to_the_evaluation_episodes(tmp_path):
    """stop.mean_return judges evaluation episodes: its bound is the evaluation env's (the fake env's return is
    at most its episode length)."""
    base = (*FAKE, "env.options.episode_length=5", "stop.mean_return=40")
    with pytest.raises(ConfigError, match=r"stop\.mean_return=40 can never trigger"):
        make_config(tmp_path / "a", *base)
    cfg = make_config(tmp_path / "b", *base, "+eval.env_options.episode_length=50")
    assert cfg.stop.mean_return == 40


def test_eval_env_options_that_change_a_space_are_refused_before_the_run(tmp_path):
    with pytest.raises(ConfigError) as err:
        make_config(tmp_path, *FAKE, "+eval.env_options.num_actions=3")
    assert "change the env's observation or action space" in str(err.value) and "\n" not in str(err.value)


def test_evaluator_confirms_a_passing_evaluation_with_more_episodes(tmp_path):
    cfg = make_config(tmp_path, *FAKE, "env.options.episode_length=5", "eval.episodes=4", "model.hidden_sizes=[8]")
    evaluator = build_evaluator(cfg, env_spaces(cfg.env))
    assert evaluator.evaluate(None, 4, EvalTarget(-1.0), confirm_episodes=6).returns.size == 10
    assert evaluator.evaluate(None, 4, EvalTarget(99.0), confirm_episodes=6).returns.size == 4
    assert evaluator.evaluate(None, 4, EvalTarget(), confirm_episodes=6).returns.size == 4
    assert evaluator.evaluate(None, 4, None, confirm_episodes=6).returns.size == 4


def test_evaluator_keeps_each_episode_value_of_the_family_and_confirms_a_target_on_them(tmp_path):
    """Snake's episodes report snake_length and score (Mario's x_pos and flag_get, the same way): the
    evaluation keeps each episode's, and a target on their mean (stop.eval_extras) is confirmed with more
    episodes as one on the return is."""
    cfg = make_config(tmp_path, "env=snake", "logger.console=false", "model.hidden_sizes=[8]",
                      "env.options.hunger_limit=15")  # fmt: skip
    evaluator = build_evaluator(cfg, env_spaces(cfg.env))
    result = evaluator.evaluate(None, 4)
    assert set(result.extras) == {"snake_length", "score"}
    assert all(values.shape == (4,) for values in result.extras.values())
    np.testing.assert_array_equal(result.extras["snake_length"], 3 + result.extras["score"])  # grows per food
    assert result.extra_means()["snake_length"] >= 3
    met, unmet = EvalTarget(extras={"snake_length": 3.0}), EvalTarget(extras={"snake_length": 99.0, "score": 0.0})
    assert met.met(result) and not unmet.met(result)
    confirmed = evaluator.evaluate(None, 4, met, confirm_episodes=6)
    assert confirmed.returns.size == 10 and all(values.shape == (10,) for values in confirmed.extras.values())
    assert evaluator.evaluate(None, 4, unmet, confirm_episodes=6).returns.size == 4


def test_a_cut_chunk_ends_right_after_the_first_episode_end(tmp_path):
    cfg = make_config(tmp_path, *FAKE, "env.max_episode_steps=3", "topology.envs_per_worker=2",
                      "topology.rollout_length=5", "model.hidden_sizes=[8]")  # fmt: skip
    worker = build_rollout_worker(cfg, env_spaces(cfg.env), 0)
    worker.cut_at_episode_end = True
    first, stats = worker.sample()
    assert first.num_steps == 3 and first.obs.shape[0] == 4 and stats.num_steps == 6 and len(stats.episodes) == 2
    assert first.truncated[2].all() and not first.truncated[:2].any()
    assert first.final_index.tolist() == [[2, 0], [2, 1]]
    second, _ = worker.sample()  # the next one starts where the cut one stopped
    np.testing.assert_array_equal(second.obs[0], first.obs[-1])
    assert second.num_steps == 3 and worker.env_steps == 12


def test_eval_starts_every_plays_each_noop_start_once_per_round(tmp_path):
    """eval.starts=every: the evaluation envs share out the no-op starts 0..noop_max, and every evaluation
    (a round, two rounds, a round confirmed by another) plays each start equally often, however far the envs'
    turns have run on between evaluations; the starts come back beside the returns, not among the extras."""
    cfg = make_config(tmp_path, *FAKE, "env.options.episode_length=5", "env.noop_max=6", "eval.starts=every",
                      "eval.episodes=7", "eval.confirm_episodes=7", "eval.final_episodes=14",
                      "model.hidden_sizes=[8]")  # fmt: skip
    evaluator = build_evaluator(cfg, env_spaces(cfg.env))
    assert evaluator.env.num_envs == 7
    for episodes in (7, 7, 14, 7):
        result = evaluator.evaluate(None, episodes)
        assert result.starts is not None and result.starts.size == result.returns.size == episodes
        assert sorted(result.starts.tolist()) == sorted(list(range(7)) * (episodes // 7))
        assert "noop_start" not in result.extras
    confirmed = evaluator.evaluate(None, 7, EvalTarget(-1.0), confirm_episodes=7)
    assert sorted(confirmed.starts.tolist()) == sorted(list(range(7)) * 2)
    many = make_config(tmp_path / "many", *FAKE, "env.noop_max=30", "eval.starts=every", "eval.episodes=31",
                       "eval.confirm_episodes=0", "eval.final_episodes=0", "model.hidden_sizes=[8]")  # fmt: skip
    evaluator = build_evaluator(many, env_spaces(many.env))
    assert evaluator.env.num_envs == 16  # at most MAX_EVAL_ENVS: two starts each but the last's one
    assert sorted(evaluator.evaluate(None, 31).starts.tolist()) == list(range(31))
    for episodes in (62, 31, 62):  # two starts an env: rounds of them, whatever the episodes' lengths
        assert sorted(evaluator.evaluate(None, episodes).starts.tolist()) == sorted(list(range(31)) * (episodes // 31))
    assert build_evaluator(make_config(tmp_path / "drawn", *FAKE, "env.noop_max=6", "model.hidden_sizes=[8]"),
                           env_spaces(cfg.env)).evaluate(None, 3).starts is None  # fmt: skip


def test_eval_starts_every_counts_each_start_equally_often_through_env_crashes(tmp_path):
    """An env rebuilt after a crash (in a step, or in the no-ops of a reset) takes its starts from its first
    again: the evaluation counts each start by the start its episode reports, so a dropped episode's start is
    played when the env comes round to it; a start an env never comes round to (it crashes first, every time)
    is refused in one line instead of being counted short."""
    base = (*FAKE, "env.options.episode_length=5", "env.noop_max=30", "eval.starts=every", "eval.episodes=31",
            "eval.confirm_episodes=0", "eval.final_episodes=0", "model.hidden_sizes=[8]")  # fmt: skip
    cfg = make_config(tmp_path / "crashes", *base, "+env.options.crash_every=97")
    evaluator = build_evaluator(cfg, env_spaces(cfg.env))
    for episodes in (31, 62, 31, 62):
        assert sorted(evaluator.evaluate(None, episodes).starts.tolist()) == sorted(list(range(31)) * (episodes // 31))
    assert evaluator.env.restarts > 0
    cfg = make_config(tmp_path / "never", *base, "+env.options.crash_every=40")  # (14, 30): 19 + 35 calls
    evaluator = build_evaluator(cfg, env_spaces(cfg.env))
    with pytest.raises(RuntimeError, match=r"never came round to no-op starts \[[0-9, ]*30\] .*eval\.starts=random"):
        evaluator.evaluate(None, 31)


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        (
            ("env.noop_max=6", "eval.episodes=10"),
            r"once per 7 episodes: set eval\.episodes=7 \(or a multiple; got 10\)",
        ),
        (("env.noop_max=6", "eval.episodes=7", "eval.confirm_episodes=3"), r"set eval\.confirm_episodes=7"),
        (
            ("env.noop_max=6", "eval.episodes=7", "eval.confirm_episodes=0", "eval.final_episodes=20"),
            r"set eval\.final_episodes=7",
        ),
        (("env.noop_max=0",), r"env\.noop_max=0 gives one: set eval\.starts=random, or env\.noop_max=30"),
    ],
)
def test_eval_starts_every_is_refused_where_it_cannot_play_whole_rounds(tmp_path, overrides, expected):
    with pytest.raises(ConfigError, match=expected) as err:
        make_config(tmp_path, *FAKE, "eval.starts=every", *overrides)
    assert "\n" not in str(err.value)


def test_eval_starts_every_is_refused_where_the_env_draws_its_own_starts():
    from raylab.envs.registry import check_every_start

    with pytest.raises(
        ConfigError, match=r"env=atari draws its starts itself \(or has none\): set eval\.starts=random"
    ):
        check_every_start(EnvConfig(family="atari", id="Pong-v5", noop_max=30))
    with pytest.raises(ConfigError, match=r"17 evaluation envs share 7 no-op starts"):
        check_every_start(EnvConfig(family="fake", id="Fake-v0", noop_max=6), 17)

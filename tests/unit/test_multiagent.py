"""Multi-agent envs as agent slots (raylab/envs/multiagent.py) and the multi-agent families, no Ray."""

from __future__ import annotations

import re

import gymnasium as gym
import numpy as np
import pytest

from raylab.config import EnvConfig
from raylab.envs.multiagent import ParallelSlots
from raylab.envs.registry import check_env_config, env_spaces, make_vector_env
from raylab.errors import ConfigError


class Scripted:
    """A Parallel env of agents a, b, c: obs = [agent index, step]; reward = index + 1 per step. Agent b
    terminates at step 2, c is truncated at step 3, a terminates at step 4 (the episode's end)."""

    possible_agents = ("a", "b", "c")
    ENDS = {"b": (2, "term"), "c": (3, "trunc"), "a": (4, "term")}  # noqa: RUF012

    def __init__(self):
        self.agents: list[str] = []
        self.t = 0
        self.received: list[dict] = []

    def observation_space(self, agent):
        return gym.spaces.Box(-np.inf, np.inf, (2,), np.float32)

    def action_space(self, agent):
        return gym.spaces.Discrete(3)

    def _obs(self):
        return {ag: np.array([self.possible_agents.index(ag), self.t], np.float32) for ag in self.agents}

    def reset(self, seed=None, options=None):
        self.agents, self.t = list(self.possible_agents), 0
        return self._obs(), {ag: {} for ag in self.agents}

    def step(self, actions):
        self.received.append(dict(actions))
        self.t += 1
        rewards = {ag: float(self.possible_agents.index(ag) + 1) for ag in self.agents}
        term = {ag: self.ENDS[ag] == (self.t, "term") for ag in self.agents}
        trunc = {ag: self.ENDS[ag] == (self.t, "trunc") for ag in self.agents}
        obs = self._obs()
        self.agents = [ag for ag in self.agents if not (term[ag] or trunc[ag])]
        return obs, rewards, term, trunc, {ag: {} for ag in obs}

    def close(self):
        pass


def test_agents_fill_slots_and_leave_early_with_terminal_steps_then_absent_ones():
    venv = ParallelSlots([Scripted, Scripted], [0, 1])
    assert venv.num_envs == 6 and venv.single_action_space == gym.spaces.Discrete(3)
    obs = venv.reset()
    assert obs[:3, 0].tolist() == [0, 1, 2] and obs[3:, 0].tolist() == [0, 1, 2]
    actions = np.arange(6)
    s1 = venv.step(actions)
    assert s1.rewards.tolist() == [1, 2, 3] * 2 and s1.restarted is None and not s1.terminated.any()
    s2 = venv.step(actions)  # b terminates
    assert s2.terminated.tolist() == [False, True, False] * 2 and not s2.truncated.any() and s2.restarted is None
    assert sorted(i for i, _ in s2.episodes) == [1, 4]
    assert s2.episodes[0][1] == {"return": 4.0, "length": 2.0}
    s3 = venv.step(actions)  # b absent; c truncated, with its final observation
    assert s3.restarted is not None and s3.restarted.tolist() == [False, True, False] * 2
    assert s3.rewards.tolist() == [1, 0, 3] * 2
    assert s3.truncated.tolist() == [False, True, True] * 2 and not s3.terminated.any()
    assert [i for i, _ in s3.final_obs] == [2, 5] and s3.final_obs[0][1].tolist() == [2, 3]
    assert venv.envs[0].received[-1] == {"a": 0, "c": 2}  # an absent agent's action is not sent
    s4 = venv.step(actions)  # a terminates: the episode ends and the env resets in the same step
    assert s4.terminated.tolist() == [True, False, False] * 2
    assert s4.restarted is not None and s4.restarted.tolist() == [False, True, True] * 2
    assert s4.episodes[0] == (0, {"return": 4.0, "length": 4.0})
    assert s4.obs[:3].tolist() == [[0, 0], [1, 0], [2, 0]]  # every slot starts the next episode
    s5 = venv.step(actions)
    assert s5.restarted is None and s5.rewards.tolist() == [1, 2, 3] * 2


def test_the_time_limit_truncates_every_present_agent_and_resets():
    venv = ParallelSlots([Scripted], [0], max_episode_steps=1, reward_clip=1.0, reward_scale=0.5)
    venv.reset()
    step = venv.step(np.zeros(3, np.int64))
    assert step.truncated.tolist() == [True, True, True] and len(step.final_obs) == 3
    assert step.rewards.tolist() == [0.5, 0.5, 0.5]  # clipped to 1, then scaled; returns stay raw
    assert [e["return"] for _, e in step.episodes] == [1.0, 2.0, 3.0]


class Crashing(Scripted):
    """Scripted whose ``step`` raises on the calls listed in CRASH_AT (counted across every instance)."""

    CRASH_AT: set[int] = set()  # noqa: RUF012
    calls = 0

    def step(self, actions):
        type(self).calls += 1
        if type(self).calls in self.CRASH_AT:
            raise RuntimeError("emulator fault")
        return super().step(actions)


def test_a_crashed_multi_agent_env_is_rebuilt_and_its_slots_flagged(caplog):
    Crashing.calls, Crashing.CRASH_AT = 0, {3}  # env 1's first step after env 0's second: the 3rd call
    venv = ParallelSlots([Crashing, Crashing], [0, 1], name="crashy")
    venv.reset()
    venv.step(np.zeros(6, np.int64))
    crashed_env = venv.envs[1]
    step = venv.step(np.zeros(6, np.int64))  # calls 3 (env 0) and 4 (env 1): env 0 crashes
    assert venv.restarts == 1 and venv.envs[1] is crashed_env and "crashy 0 crashed in step" in caplog.text
    assert step.restarted is not None and step.restarted.tolist() == [True, True, True, False, False, False]
    assert step.rewards[:3].tolist() == [0, 0, 0] and step.truncated[:3].all() and not step.terminated[:3].any()
    assert [i for i, _ in step.episodes] == [4] and step.final_obs == []  # the crashed episode is dropped
    assert step.obs[:3].tolist() == [[0, 0], [1, 0], [2, 0]]  # env 0 starts over, rebuilt and reset
    after = venv.step(np.zeros(6, np.int64))
    assert after.restarted is not None and not after.restarted[:3].any()  # (slot 4: env 1's b has left)
    assert after.rewards[:3].tolist() == [1, 2, 3]
    Crashing.calls, Crashing.CRASH_AT = 0, set(range(1, 100, 2))  # env 0 crashes at every step
    venv = ParallelSlots([Crashing, Crashing], [0, 1], name="crashy")
    venv.reset()
    with pytest.raises(RuntimeError, match="crashy 0 crashed in 10 steps in a row"):
        for _ in range(12):
            venv.step(np.zeros(6, np.int64))


def test_mpe_simple_spread_gives_one_slot_per_agent():
    cfg = EnvConfig(family="pettingzoo", id="mpe2.simple_spread_v3", options={"N": 3, "max_cycles": 5})
    check_env_config(cfg)
    spaces = env_spaces(cfg)
    assert spaces.agents == 3 and spaces.num_actions == 5 and spaces.obs_shape == (18,)
    venv = make_vector_env(cfg, 2, seed=0)
    assert venv.num_envs == 6
    venv.reset()
    ended = []
    for _ in range(5):
        ended += venv.step(np.zeros(6, np.int64)).episodes
    assert sorted(i for i, _ in ended) == list(range(6))  # max_cycles=5: every agent's episode ends together


class Uneven(Scripted):
    """Scripted, but agent c observes 3 floats (a and b: 2)."""

    def observation_space(self, agent):
        return gym.spaces.Box(-5.0 if agent == "c" else -1.0, 1.0, (3 if agent == "c" else 2,), np.float32)

    def _obs(self):
        return {ag: np.full(3 if ag == "c" else 2, 0.5, np.float32) for ag in self.agents}


def test_agents_that_differ_in_spaces_form_groups_each_batched_in_its_own_shape():
    venv = ParallelSlots([Uneven, Uneven], [0, 1], "uneven")
    assert venv.num_groups == 2 and [g.agents for g in venv.groups] == [(0, 1), (2,)]
    assert venv.slot_group.tolist() == [0, 0, 1, 0, 0, 1] and venv.slot_local.tolist() == [0, 1, 0, 2, 3, 1]
    with pytest.raises(AssertionError, match="reset_groups"):
        venv.reset()
    pairs, threes = venv.reset_groups()
    assert pairs.shape == (4, 2) and threes.shape == (2, 3) and (threes == 0.5).all()  # nothing padded
    venv.step_groups([np.array([0, 1, 2, 0]), np.array([1, 2])])
    # env e's agent a, b are group 0's slots 2e, 2e + 1; its c is group 1's slot e
    assert venv.envs[0].received[-1] == {"a": 0, "b": 1, "c": 1} and venv.envs[1].received[-1] == {
        "a": 2,
        "b": 0,
        "c": 2,
    }
    venv.step_groups([np.zeros(4, np.int64), np.zeros(2, np.int64)])
    step = venv.step_groups([np.zeros(4, np.int64), np.zeros(2, np.int64)])  # c truncated: its final observation
    assert [(i, o.shape) for i, o in step.final_obs] == [(2, (3,)), (5, (3,))]
    assert step.truncated.tolist() == [False, True, True] * 2  # per slot, as for one group (b has left: absent)


def test_pad_observations_zero_pads_smaller_agents_to_the_largest():
    venv = ParallelSlots([Uneven, Uneven], [0, 1], "uneven", pad_observations=True)
    assert venv.num_groups == 1
    space = venv.single_observation_space
    assert space.shape == (3,) and space.low.tolist() == [-5.0, -5.0, -5.0] and space.high.tolist() == [1.0, 1.0, 1.0]
    obs = venv.reset()
    assert obs.shape == (6, 3) and obs[[0, 1, 3, 4]].tolist() == [[0.5, 0.5, 0.0]] * 4 and obs[2].tolist() == [0.5] * 3
    step = venv.step(np.zeros(6, np.int64))
    assert step.obs[1].tolist() == [0.5, 0.5, 0.0]  # stays padded with zeros after every step


def test_mpe_simple_tag_pads_prey_to_the_predators_observation():
    cfg = EnvConfig(family="pettingzoo", id="mpe2.simple_tag_v3", pad_observations=True, options={"max_cycles": 5})
    check_env_config(cfg)
    spaces = env_spaces(cfg)
    assert spaces.obs_shape == (16,) and spaces.agent_ids == ("adversary_0", "adversary_1", "adversary_2", "agent_0")
    obs = make_vector_env(cfg, 1, seed=0).reset()
    assert (obs[3, 14:] == 0).all() and obs.shape == (4, 16)  # the prey's 14 floats, then zeros


def test_mpe_simple_tag_gives_each_team_its_own_observation_size_without_padding():
    cfg = EnvConfig(family="pettingzoo", id="mpe2.simple_tag_v3", options={"max_cycles": 3})
    check_env_config(cfg)
    spaces = env_spaces(cfg)
    predators, prey = spaces.groups
    assert (predators.agent_ids, predators.obs_shape, predators.agents) == (
        ("adversary_0", "adversary_1", "adversary_2"), (16,), 3,
    )  # fmt: skip
    assert (prey.agent_ids, prey.obs_shape, prey.num_actions) == (("agent_0",), (14,), 5)
    assert spaces.agents == 4 and spaces.slot_layout(2)[1].tolist() == [0, 1, 2, 0, 3, 4, 5, 1]
    venv = make_vector_env(cfg, 2, seed=0)
    obs = venv.reset_groups()
    assert [o.shape for o in obs] == [(6, 16), (2, 14)]
    for _ in range(3):
        step = venv.step_groups([np.zeros(6, np.int64), np.zeros(2, np.int64)])
    shapes = {i: o.shape for i, o in step.final_obs}  # max_cycles=3: every agent's episode is truncated
    assert shapes == {0: (16,), 1: (16,), 2: (16,), 3: (14,), 4: (16,), 5: (16,), 6: (16,), 7: (14,)}


class Mixed(Scripted):
    """Scripted, but agent c acts in Box(0, 1, (3,)) (a and b: Discrete(3))."""

    def action_space(self, agent):
        return gym.spaces.Box(0.0, 1.0, (3,), np.float32) if agent == "c" else gym.spaces.Discrete(3)


def test_discrete_and_box_actions_in_one_step_each_sent_in_its_agents_space():
    venv = ParallelSlots([Mixed], [0], "mixed")
    assert [str(g.action_space) for g in venv.groups] == ["Discrete(3)", "Box(0.0, 1.0, (3,), float32)"]
    venv.reset_groups()
    venv.step_groups([np.array([2, 1]), np.array([[-0.5, 0.5, 3.0]], np.float32)])
    sent = venv.envs[0].received[-1]
    assert sent["a"] == 2 and sent["b"] == 1 and sent["c"].tolist() == [0.0, 0.5, 1.0]  # clipped to its Box
    shown = ParallelSlots([Mixed], [0], "mixed", discrete_agents=["c"])  # one group: every agent Discrete(3)
    assert shown.num_groups == 1 and shown.single_action_space == gym.spaces.Discrete(3)
    shown.reset()
    shown.step(np.array([0, 1, 2]))
    assert shown.envs[0].received[-1]["c"].tolist() == [0.0, 0.0, 1.0]  # action 2, one-hot


def test_discrete_agents_play_mpe2s_discrete_game_exactly():
    """mpe2 simple_tag with continuous_actions=true and every agent in env.discrete_agents plays the same game,
    step for step, as mpe2's own discrete env from the same seed (its movement is a[2] - a[1], a[4] - a[3])."""
    options = {"max_cycles": 30, "num_obstacles": 2}
    discrete = EnvConfig(family="pettingzoo", id="mpe2.simple_tag_v3", options=options)
    shown = EnvConfig(
        family="pettingzoo", id="mpe2.simple_tag_v3", options={**options, "continuous_actions": True},
        discrete_agents=("*",),
    )  # fmt: skip
    mixed = EnvConfig(
        family="pettingzoo", id="mpe2.simple_tag_v3", options={**options, "continuous_actions": True},
        discrete_agents=("agent_*",),
    )  # fmt: skip
    a, b, c = (make_vector_env(cfg, 2, seed=3) for cfg in (discrete, shown, mixed))
    assert a.num_groups == b.num_groups == 2 and c.num_groups == 2
    assert [str(g.action_space) for g in c.groups] == ["Box(0.0, 1.0, (5,), float32)", "Discrete(5)"]
    rng = np.random.default_rng(0)
    for x, y in zip(a.reset_groups(), b.reset_groups(), strict=True):
        assert np.array_equal(x, y)
    c.reset_groups()
    for _ in range(40):  # past an episode's end (30 steps): the resets agree too
        actions = [rng.integers(0, 5, 6), rng.integers(0, 5, 2)]
        sa, sb = a.step_groups(actions), b.step_groups(actions)
        one_hot = np.eye(5, dtype=np.float32)[actions[0]]  # the predators' Box actions that move as theirs
        sc = c.step_groups([one_hot, actions[1]])
        for x, y, z in zip(sa.obs, sb.obs, sc.obs, strict=True):
            assert np.array_equal(x, y) and np.array_equal(x, z)
        assert np.array_equal(sa.rewards, sb.rewards) and np.array_equal(sa.rewards, sc.rewards)
        assert np.array_equal(sa.truncated, sb.truncated) and len(sa.episodes) == len(sb.episodes)


class Pictures(Scripted):
    """Scripted, but agents a and b see (8, 8, 3) RGB images, every pixel 10 * step + the agent's index; c sees
    [2, step]."""

    def observation_space(self, agent):
        if agent == "c":
            return gym.spaces.Box(-np.inf, np.inf, (2,), np.float32)
        return gym.spaces.Box(0, 255, (8, 8, 3), np.uint8)

    def _obs(self):
        return {
            ag: np.array([2, self.t], np.float32)
            if ag == "c"
            else np.full((8, 8, 3), 10 * self.t + "ab".index(ag), np.uint8)
            for ag in self.agents
        }


def test_frame_preprocessing_per_agent_images_grayed_resized_and_every_agent_stacked():
    venv = ParallelSlots([Pictures, Pictures], [0, 1], "pictures", grayscale=True, resize=(4, 4), frame_stack=2)
    images, vectors = venv.groups
    assert images.observation_space.shape == (2, 4, 4) and images.observation_space.dtype == np.uint8
    assert vectors.observation_space.shape == (4,)  # a vector agent is stacked, not grayed
    pictures, numbers = venv.reset_groups()
    assert pictures.shape == (4, 2, 4, 4) and (pictures[1] == 1).all() and (pictures[2] == 0).all()  # first frame x2
    assert numbers.tolist() == [[2, 0, 2, 0]] * 2
    step = venv.step_groups([np.zeros(4, np.int64), np.zeros(2, np.int64)])
    pictures, numbers = step.obs
    assert (pictures[1, 0] == 1).all() and (pictures[1, 1] == 11).all()  # older frame first, newest last
    assert numbers.tolist() == [[2, 0, 2, 1]] * 2
    for _ in range(2):  # c is truncated at step 3: its final observation is its stack
        step = venv.step_groups([np.zeros(4, np.int64), np.zeros(2, np.int64)])
    assert [(i, o.tolist()) for i, o in step.final_obs] == [(2, [2, 2, 2, 3]), (5, [2, 2, 2, 3])]
    step = venv.step_groups([np.zeros(4, np.int64), np.zeros(2, np.int64)])  # a ends the episode: a new one starts
    assert (step.obs[0][0] == 0).all() and step.obs[1].tolist() == [[2, 0, 2, 0]] * 2  # each stack refilled
    cfg = EnvConfig(family="pettingzoo", id="mpe2.simple_spread_v3", frame_stack=3, options={"N": 2})
    check_env_config(cfg)
    assert env_spaces(cfg).obs_shape == (36,)  # 3 x 12 floats


def test_the_arena_is_a_vector_of_snakes():
    cfg = EnvConfig(family="snake_arena", id="SnakeArena-v0", options={"num_snakes": 3, "dim": 10})
    check_env_config(cfg)
    spaces = env_spaces(cfg)
    assert spaces.agents == 3 and spaces.num_actions == 3 and spaces.slots(4) == 12
    assert make_vector_env(cfg, 4, seed=0).num_envs == 12


@pytest.mark.parametrize(
    ("cfg", "message"),
    [
        (EnvConfig(family="pettingzoo", id="nopackage_xyz.game_v0"), "no module named 'nopackage_xyz'"),
        (EnvConfig(family="pettingzoo", id="mpe2.no_such_game_v9"), "set env.id=<package.module> of a PettingZoo env"),
        (EnvConfig(family="pettingzoo", id="json"), "raylab takes PettingZoo's Parallel API"),
        (EnvConfig(family="snake_arena", id="SnakeArena-v0", pad_observations=True), "set env.pad_observations=false"),
        (EnvConfig(family="snake_arena", id="SnakeArena-v0", discrete_agents=("*",)), "set env.discrete_agents=[]"),
        (EnvConfig(family="pettingzoo", id="mpe2.simple_tag_v3", discrete_agents=("prey_*",)),
         "env.discrete_agents pattern 'prey_*' matches no agent of mpe2.simple_tag_v3 (agents: adversary_0, "),
        (EnvConfig(family="pettingzoo", id="mpe2.simple_tag_v3", discrete_agents=("agent_*",)),
         "whose actions are Discrete(5): it turns one-dimensional Box(0, 1, (d,)) actions into Discrete(d) ones"),
        (EnvConfig(family="pettingzoo", id="mpe2.simple_spread_v3", options={"M": 3}), "fix env.options"),
        (EnvConfig(family="pettingzoo", id="mpe2.simple_spread_v3", frame_skip=4), "set env.frame_skip=1"),
        (EnvConfig(family="pettingzoo", id="mpe2.simple_spread_v3", grayscale=True),
         "env.grayscale/env.resize need (H, W[, C]) uint8 image observations but mpe2.simple_spread_v3's agents"),
        (EnvConfig(family="snake_arena", id="SnakeArena-v0", frame_stack=4), "env.frame_stack=1"),
        (EnvConfig(family="snake_arena", id="SnakeArena-v0", options={"num_snakes": 16, "dim": 8}), "raise dim"),
        (EnvConfig(family="snake_arena", id="SnakeArena-v0", options={"size": 8}), "valid options are num_snakes"),
        (EnvConfig(family="snake_arena", id="SnakeArena-v0", max_episode_steps=50), "env.options.hunger_limit"),
    ],
)  # fmt: skip
def test_bad_multi_agent_configs_name_the_fix(cfg, message):
    with pytest.raises(ConfigError, match=re.escape(message)) as info:
        check_env_config(cfg)
    assert "\n" not in str(info.value)


def test_a_missing_multiagent_extra_names_the_pip_install(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "mpe2" else real(name, *a))
    with pytest.raises(ConfigError, match=r"pip install 'raylab-actor-learner\[multiagent\]'"):
        check_env_config(EnvConfig(family="pettingzoo", id="mpe2.simple_spread_v3"))

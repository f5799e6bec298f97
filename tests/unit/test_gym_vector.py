"""A user's gymnasium VectorEnv behind raylab's contract (raylab/envs/gym_vector.py), in every autoreset mode:
the new episode's first observation in the same step, the last observation of a truncated episode, raw episode
returns, the shared reward transform and time limit, clipped Box actions, and a rebuild after a crash."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest

from raylab.envs.gym_vector import GymVectorEnv

MODES = [gym.vector.AutoresetMode.NEXT_STEP, gym.vector.AutoresetMode.SAME_STEP, gym.vector.AutoresetMode.DISABLED]


class Ladder(gym.Env):
    """obs = [t, episode] (float64); reward 1 + action; terminates after ``length`` steps."""

    def __init__(self, length: int = 3, box: bool = False):
        self.length = length
        self.observation_space = gym.spaces.Box(-1e6, 1e6, (2,), np.float64)
        self.action_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32) if box else gym.spaces.Discrete(2)
        self.t, self.episode, self.actions = 0, -1, []

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        self.t, self.episode = 0, self.episode + 1
        return np.array([0.0, self.episode]), {}

    def step(self, action: Any):
        self.actions.append(np.asarray(action).copy())
        self.t += 1
        reward = 1.0 + float(np.asarray(action).sum())
        return np.array([self.t, self.episode], np.float64), reward, self.t >= self.length, False, {}


def vector(mode: gym.vector.AutoresetMode, lengths=(3, 5), **kwargs: Any) -> gym.vector.VectorEnv:
    return gym.vector.SyncVectorEnv([lambda n=n: Ladder(n, **kwargs) for n in lengths], autoreset_mode=mode)


def recording(built: list[gym.vector.VectorEnv]) -> Any:
    """A build function that keeps every vector env it makes in ``built`` (the last is the live one)."""

    def build() -> gym.vector.VectorEnv:
        built.append(vector(MODES[0]))
        return built[-1]

    return build


@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.value)
def test_the_next_episode_starts_in_the_step_that_ended_the_last(mode):
    venv = GymVectorEnv(lambda: vector(mode), seed=0)
    obs = venv.reset()
    assert obs.dtype == np.float32 and venv.single_observation_space.dtype == np.float32
    assert obs.tolist() == [[0, 0], [0, 0]]
    for t in range(1, 3):
        step = venv.step(np.zeros(2, np.int64))
        assert step.obs.tolist() == [[t, 0], [t, 0]] and not step.terminated.any()
    step = venv.step(np.zeros(2, np.int64))  # env 0 (length 3) ends here and starts its episode 1 at once
    assert step.terminated.tolist() == [True, False] and not step.truncated.any()
    assert step.obs.tolist() == [[0, 1], [3, 0]]
    assert step.episodes == [(0, {"return": 3.0, "length": 3.0})] and step.final_obs == []
    for t in range(1, 3):  # env 0's new episode takes actions at once: no ignored reset step
        step = venv.step(np.ones(2, np.int64))
        assert step.obs[0].tolist() == [t, 1] and step.rewards[0] == 2.0
    assert step.terminated.tolist() == [False, True] and step.episodes == [(1, {"return": 7.0, "length": 5.0})]


@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.value)
def test_the_time_limit_truncates_and_hands_back_the_last_observation(mode):
    venv = GymVectorEnv(lambda: vector(mode, lengths=(3, 10)), seed=0, max_episode_steps=4)
    venv.reset()
    for _ in range(3):
        step = venv.step(np.zeros(2, np.int64))
    assert step.terminated.tolist() == [True, False]  # the env's own end comes first and stays a termination
    step = venv.step(np.zeros(2, np.int64))
    assert step.truncated.tolist() == [False, True] and not step.terminated.any()
    assert [(i, o.tolist()) for i, o in step.final_obs] == [(1, [4.0, 0.0])]
    assert step.final_obs[0][1].dtype == np.float32
    assert step.obs[1].tolist() == [0, 1] and step.episodes == [(1, {"return": 4.0, "length": 4.0})]


def test_rewards_are_transformed_and_episode_returns_stay_raw():
    venv = GymVectorEnv(lambda: vector(MODES[0], lengths=(2, 2)), seed=0, reward_clip=1.5, reward_scale=0.1)
    venv.reset()
    step = venv.step(np.ones(2, np.int64))
    assert step.rewards.dtype == np.float32 and step.rewards.tolist() == pytest.approx([0.15, 0.15])
    step = venv.step(np.ones(2, np.int64))
    assert step.episodes == [(0, {"return": 4.0, "length": 2.0}), (1, {"return": 4.0, "length": 2.0})]


def test_box_actions_are_clipped_to_their_bounds():
    inner = vector(MODES[0], box=True)
    venv = GymVectorEnv(lambda: inner, seed=0)
    venv.reset()
    step = venv.step(np.array([[3.0], [-0.5]], np.float32))
    assert step.rewards.tolist() == [2.0, 0.5]
    assert [a.tolist() for a in (inner.envs[0].actions[0], inner.envs[1].actions[0])] == [[1.0], [-0.5]]


def test_a_crash_rebuilds_the_vector_env_and_drops_the_partial_episodes():
    built: list[gym.vector.VectorEnv] = []
    venv = GymVectorEnv(recording(built), seed=0)
    venv.reset()
    venv.step(np.zeros(2, np.int64))

    def boom(actions: Any) -> Any:
        raise RuntimeError("emulator died")

    built[-1].step = boom  # type: ignore[method-assign]
    step = venv.step(np.zeros(2, np.int64))
    assert len(built) == 2 and venv.restarts == 2
    assert step.restarted is not None and step.restarted.all() and step.truncated.all() and step.episodes == []
    assert step.obs.tolist() == [[0, 0], [0, 0]]
    step = venv.step(np.zeros(2, np.int64))
    assert step.obs.tolist() == [[1, 0], [1, 0]] and step.restarted is None


def test_an_env_truncating_itself_in_same_step_mode_hands_back_its_last_observation():
    def build() -> gym.vector.VectorEnv:
        fns = [lambda: gym.wrappers.TimeLimit(Ladder(10), 2), lambda: Ladder(10)]
        return gym.vector.SyncVectorEnv(fns, autoreset_mode=gym.vector.AutoresetMode.SAME_STEP)

    venv = GymVectorEnv(build, seed=0)
    venv.reset()
    venv.step(np.zeros(2, np.int64))
    step = venv.step(np.zeros(2, np.int64))
    assert step.truncated.tolist() == [True, False] and not step.terminated.any()
    assert [(i, o.tolist(), o.dtype) for i, o in step.final_obs] == [(0, [2.0, 0.0], np.float32)]
    assert step.obs.tolist() == [[0, 1], [2, 0]]


def test_async_vector_envs_with_shared_memory_take_the_masked_reset():
    def build() -> gym.vector.VectorEnv:
        return gym.vector.AsyncVectorEnv([lambda n=n: Ladder(n) for n in (2, 5)], shared_memory=True)

    venv = GymVectorEnv(build, seed=0)
    try:
        venv.reset()
        venv.step(np.zeros(2, np.int64))
        step = venv.step(np.zeros(2, np.int64))
        assert step.terminated.tolist() == [True, False] and step.obs.tolist() == [[0, 1], [2, 0]]
        step = venv.step(np.ones(2, np.int64))  # env 0's first step of episode 1 is a real step
        assert step.obs.tolist() == [[1, 1], [3, 0]] and step.rewards.tolist() == [2.0, 2.0]
    finally:
        venv.close()


@pytest.mark.parametrize(
    ("build", "expected"),
    [
        (lambda: gym.make_vec("CartPole-v1", num_envs=2), "this CartPoleVectorEnv .* vectorization_mode='sync'"),
        (
            lambda: gym.vector.AsyncVectorEnv([lambda: Ladder(3)] * 2, shared_memory=False),
            "this AsyncVectorEnv \\(NextStep autoreset\\) .* shared_memory=True",
        ),
    ],
    ids=["cartpole_vector_env", "async_without_shared_memory"],
)
def test_vector_envs_that_may_reset_every_env_are_refused_in_one_line(build, expected):
    from raylab.errors import ConfigError

    with pytest.raises(ConfigError, match=expected) as info:
        GymVectorEnv(build, seed=0)
    assert "\n" not in str(info.value)


def test_gymnasiums_own_cartpole_in_sync_mode_is_taken():
    venv = GymVectorEnv(lambda: gym.make_vec("CartPole-v1", num_envs=3, vectorization_mode="sync"), seed=0)
    assert venv.reset().shape == (3, 4)
    lengths = []
    for _ in range(200):
        lengths += [stats["length"] for _, stats in venv.step(np.zeros(3, np.int64)).episodes]
    assert lengths and max(lengths) < 20  # always pushing left ends every episode within a few steps


def test_a_crash_in_the_masked_reset_rebuilds_the_vector_env():
    built: list[gym.vector.VectorEnv] = []
    venv = GymVectorEnv(recording(built), seed=0)
    venv.reset()
    real_reset = built[-1].reset

    def reset(*, seed: Any = None, options: Any = None) -> Any:
        if options:
            raise RuntimeError("reset died")
        return real_reset(seed=seed, options=options)

    built[-1].reset = reset  # type: ignore[method-assign]
    for _ in range(2):
        venv.step(np.zeros(2, np.int64))
    step = venv.step(np.zeros(2, np.int64))  # env 0 ends, and resetting it fails
    assert len(built) == 2 and step.episodes == [(0, {"return": 3.0, "length": 3.0})]
    assert step.restarted is not None and step.restarted.tolist() == [False, True]
    assert step.truncated.tolist() == [False, True] and step.rewards.tolist() == [1.0, 0.0]
    assert step.obs.tolist() == [[0, 0], [0, 0]]

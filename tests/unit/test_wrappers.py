"""The shared preprocessing wrappers, each on a tiny scripted env."""

from typing import Any

import gymnasium as gym
import numpy as np
import pytest

from raylab.config import EnvConfig
from raylab.envs import make_env
from raylab.envs.wrappers import (
    EPISODE_KEY,
    START_KEY,
    EpisodeStatistics,
    FrameStack,
    GrayResize,
    MaxPoolFrameSkip,
    NoopReset,
    RewardTransform,
    as_float32,
)


class Counter(gym.Env):
    """Frame t is filled with t (uint8); reward t; terminates after ``length`` steps."""

    def __init__(self, shape=(2, 2), length=100, dtype=np.uint8):
        self.shape, self.length = shape, length
        self.observation_space = gym.spaces.Box(0, 255, shape, dtype)
        self.action_space = gym.spaces.Discrete(2)
        self.t = 0
        self.resets = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t, self.resets = 0, self.resets + 1
        return np.full(self.shape, 0, self.observation_space.dtype), {"t": 0}

    def step(self, action: Any):
        self.t += 1
        frame = np.full(self.shape, self.t, self.observation_space.dtype)
        return frame, float(self.t), self.t >= self.length, False, {"t": self.t, "x_pos": 10 * self.t}


def test_frame_skip_sums_rewards_and_max_pools_the_last_two_frames():
    env = MaxPoolFrameSkip(Counter(), skip=4)
    env.reset()
    obs, reward, *_ = env.step(0)
    assert reward == 1 + 2 + 3 + 4 and (obs == 4).all()
    obs, reward, *_ = env.step(0)
    assert reward == 5 + 6 + 7 + 8 and (obs == 8).all()


@pytest.mark.parametrize(("length", "expected_obs", "expected_reward"), [(1, 1, 1.0), (2, 2, 3.0), (6, 6, 11.0)])
def test_frame_skip_never_returns_frames_of_the_previous_step(length, expected_obs, expected_reward):
    env = MaxPoolFrameSkip(Counter(length=length), skip=4)
    env.reset()
    if length == 6:
        env.step(0)  # frames 1-4
    obs, reward, terminated, *_ = env.step(0)
    assert terminated and (obs == expected_obs).all() and reward == expected_reward


def test_frame_skip_does_not_pool_state_vectors():
    env = MaxPoolFrameSkip(Counter(shape=(3,), dtype=np.float32), skip=2)
    env.reset()
    obs, *_ = env.step(0)
    assert (obs == 2).all()
    assert (MaxPoolFrameSkip(Counter(shape=(3,), dtype=np.float32), skip=2).step(0)[0] == 2).all()


def test_noop_reset_leaves_the_wrapped_envs_generator_alone():
    from raylab.envs.snake import SnakeEnv

    inner = SnakeEnv()
    NoopReset(inner, noop_max=5).reset(seed=5)
    assert inner.np_random_seed == 5


def test_noop_reset_in_cycle_mode_takes_its_counts_in_turn_and_each_episode_keeps_its_start():
    """eval.starts=every: each reset takes the next count of the cycle (the Counter's first frame shows how many
    no-ops were taken), writes it into the reset's info, and the episode's stats keep it; drawn starts write
    nothing."""
    env = EpisodeStatistics(NoopReset(Counter(length=3), noop_max=5, cycle=(2, 0, 5)))
    seen = []
    for _ in range(4):
        obs, info = env.reset(seed=1)
        seen.append((int(obs[0, 0]), info[START_KEY]))
        done = False
        while not done:
            _, _, terminated, truncated, info = env.step(0)
            done = terminated or truncated
        assert info["episode"][START_KEY] == seen[-1][1]
    assert seen == [(2, 2), (0, 0), (2, 5), (2, 2)]  # 5 no-ops end a 3-step episode: a fresh reset after 3
    drawn = EpisodeStatistics(NoopReset(Counter(length=3), noop_max=5))
    _, info = drawn.reset(seed=1)
    assert START_KEY not in info
    for _ in range(3):
        *_, info = drawn.step(0)
    assert START_KEY not in info["episode"]
    with pytest.raises(ValueError, match=r"within 0\.\.5"):
        NoopReset(Counter(), noop_max=5, cycle=(6,))
    with pytest.raises(ValueError, match=r"within 0\.\.5"):
        NoopReset(Counter(), noop_max=5, cycle=())


def test_frame_stack_is_channel_first_and_pads_with_the_first_frame():
    env = FrameStack(Counter(shape=(3, 2, 2)), k=2)
    obs, _ = env.reset()
    assert obs.shape == (6, 2, 2) and obs.dtype == np.uint8 and (obs == 0).all()
    obs, *_ = env.step(0)
    assert (obs[:3] == 0).all() and (obs[3:] == 1).all()
    obs, *_ = env.step(0)
    assert (obs[:3] == 1).all() and (obs[3:] == 2).all()
    assert FrameStack(Counter(shape=(5, 6)), k=4).observation_space.shape == (4, 5, 6)
    assert FrameStack(Counter(shape=(5, 6, 3)), k=4).observation_space.shape == (12, 5, 6)
    assert FrameStack(Counter(shape=(7,), dtype=np.float32), k=3).observation_space.shape == (21,)


def test_gray_resize_shapes():
    rgb = Counter(shape=(240, 256, 3))
    env = GrayResize(rgb, grayscale=True, size=(84, 84))
    env.reset()
    obs, *_ = env.step(0)
    assert obs.shape == (84, 84) and obs.dtype == np.uint8 and (obs == 1).all()
    assert GrayResize(Counter(shape=(240, 256, 3)), grayscale=False, size=(42, 40)).observation_space.shape == (
        42,
        40,
        3,
    )


def test_reward_transform_clips_then_scales():
    env = RewardTransform(Counter(), clip=2.0, scale=0.5)
    env.reset()
    assert [env.step(0)[1] for _ in range(3)] == [0.5, 1.0, 1.0]


def test_noop_reset_is_seeded():
    counts = []
    for seed in (1, 1, 2, 3, 4):
        inner = Counter()
        NoopReset(inner, noop_max=30).reset(seed=seed)
        counts.append(inner.t)
    assert counts[0] == counts[1] and len(set(counts)) > 1 and max(counts) <= 30


def test_episode_statistics_reports_raw_returns_and_extras():
    env = EpisodeStatistics(Counter(length=3), extras=("x_pos",))
    env.reset()
    *_, info = env.step(0)
    assert EPISODE_KEY not in info
    env.step(0)
    *_, info = env.step(0)
    assert info[EPISODE_KEY] == {"return": 6.0, "length": 3, "x_pos": 30.0}


def test_make_env_reports_raw_returns_but_trains_on_clipped_rewards():
    cfg = EnvConfig(family="fake", id="Fake-v0", reward_clip=0.5, options={"episode_length": 4})
    env = make_env(cfg, seed=0)
    env.reset(seed=0)
    total, info = 0.0, {}
    for _ in range(4):
        _, reward, terminated, _, info = env.step(1)
        total += reward
        assert reward in (0.0, 0.5)
    assert terminated and info[EPISODE_KEY]["return"] == 2 * total


@pytest.mark.parametrize("dtype", [np.float64, np.float16])
def test_float_observations_of_another_dtype_become_float32(dtype):
    """MuJoCo gives float64 observations; every model and buffer holds float32."""
    env = as_float32(Counter(shape=(3,), dtype=dtype))
    assert env.observation_space.dtype == np.float32 and env.observation_space.shape == (3,)
    obs, _ = env.reset(seed=0)
    assert obs.dtype == np.float32
    obs, *_ = env.step(0)
    assert obs.dtype == np.float32 and obs.tolist() == [1.0, 1.0, 1.0]
    assert env.observation_space.contains(obs)


@pytest.mark.parametrize("dtype", [np.uint8, np.float32])
def test_uint8_and_float32_observations_are_left_alone(dtype):
    inner = Counter(shape=(3,), dtype=dtype)
    assert as_float32(inner) is inner


def test_float64_bounds_beyond_float32_stay_finite():
    inner = Counter(shape=(2,), dtype=np.float64)
    inner.observation_space = gym.spaces.Box(-1e300, 1e300, (2,), np.float64)
    space = as_float32(inner).observation_space
    assert space.dtype == np.float32 and np.isfinite(space.low).all() and np.isfinite(space.high).all()


def test_normalize_reward_divides_by_the_running_return_std_and_reports_raw_returns():
    options = {"episode_length": 50}
    plain = make_env(EnvConfig(family="fake", id="Fake-v0", options=options), seed=0)
    cfg = EnvConfig(family="fake", id="Fake-v0", normalize_reward=True, normalize_reward_gamma=0.9, options=options)
    env = make_env(cfg, seed=0)
    norm = next(w for w in _stack(env) if isinstance(w, gym.wrappers.NormalizeReward))
    assert norm.gamma == 0.9
    raw, scaled, info = [], [], {}
    for _ in range(50):
        _, reward, *_ = plain.step(1)
        _, normalized, _, _, info = env.step(1)
        raw.append(reward)
        scaled.append(normalized)
        assert normalized == pytest.approx(reward / np.sqrt(norm.return_rms.var + norm.epsilon), rel=1e-5)
    assert info[EPISODE_KEY]["return"] == sum(raw) > 0  # the reported return is the game's
    assert scaled != raw and norm.return_rms.count > 50


def _stack(env: gym.Env) -> list[gym.Env]:
    out = [env]
    while hasattr(out[-1], "env"):
        out.append(out[-1].env)
    return out


def test_normalize_reward_takes_algo_gamma_and_is_refused_for_batched_families(tmp_path):
    from raylab.errors import ConfigError
    from tests.conftest import make_config

    cfg = make_config(tmp_path, "+experiment=pendulum_ppo", "env.normalize_reward=true")
    assert cfg.env.normalize_reward_gamma == cfg.algo.gamma == 0.9
    with pytest.raises(ConfigError, match=r"env=snake_arena steps its envs as one batch: set env\.normalize_reward"):
        make_config(tmp_path, "+experiment=snake_arena_ppo", "env.normalize_reward=true")
    from raylab.envs.registry import check_env_config

    with pytest.raises(ConfigError, match=r"env=procgen steps its envs as one batch"):
        check_env_config(EnvConfig(family="procgen", id="coinrun", normalize_reward=True))

"""Family-agnostic preprocessing, applied by ``make_env`` in this order (inner to outer):

    raw env -> [encoded: raylab/envs/spaces.py] -> [float32 cast] -> NoopReset -> MaxPoolFrameSkip -> TimeLimit
            -> EpisodeStatistics -> GrayResize -> FrameStack -> [NormalizeReward] -> RewardTransform -> [ClipAction]

Observations of any other float dtype (MuJoCo's are float64) are cast to float32 first, the dtype every
model, rollout buffer and replay shard holds: half the memory and transport of float64, and no dtype mismatch
in the first Linear layer.

EpisodeStatistics sits after the time limit (so it sees truncations) and before the reward transform (so
reported returns are the game's, not the clipped ones the learner trains on). raylab writes its own small
wrappers where gymnasium's differ from what an actor/learner pipeline needs: gymnasium's
MaxAndSkipObservation returns the previous step's frames when an episode ends early inside the skip, and
its FrameStackObservation adds a fourth axis to channel-first images instead of stacking channels.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np


def float32_box(space: gym.Space) -> gym.Space | None:
    """``space`` as a float32 Box when it is a Box of another float dtype (e.g. MuJoCo's float64), else None."""
    if not isinstance(space, gym.spaces.Box) or space.dtype is None:
        return None
    if not np.issubdtype(space.dtype, np.floating) or space.dtype == np.float32:
        return None
    low = np.clip(space.low, np.finfo(np.float32).min, np.finfo(np.float32).max).astype(np.float32)
    high = np.clip(space.high, np.finfo(np.float32).min, np.finfo(np.float32).max).astype(np.float32)
    return gym.spaces.Box(low, high, space.shape, np.float32)


def as_float32(env: gym.Env) -> gym.Env:
    """``env`` with float32 observations where it gives another float dtype; ``env`` itself otherwise."""
    box = float32_box(env.observation_space)
    if box is None:
        return env
    return gym.wrappers.TransformObservation(env, lambda obs: np.asarray(obs, np.float32), box)


EPISODE_KEY = "episode"
"""info key EpisodeStatistics writes when an episode ends: {"return", "length", extras...}."""


START_KEY = "noop_start"
"""info key NoopReset writes at a reset in cycle mode (the no-ops it took), and EpisodeStatistics keeps in the
episode's stats: which start each evaluation episode played (eval.starts=every)."""


class NoopReset(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """After each reset, take ``U(0, noop_max)`` no-op actions, drawn from the wrapper's own generator
    (seeded by ``reset(seed=...)``; the wrapped env's generator is left alone).

    ``cycle``: take these counts in turn instead, one per reset, round and round (eval.starts=every: the
    evaluation envs share out the starts 0..noop_max), and write the count into the reset's info
    (``START_KEY``). No-ops that end an episode reset the env and the rest are taken, in both modes, so a start
    counts for what a draw of it plays and the cycle weighs the starts as the draws do."""

    def __init__(self, env: gym.Env, noop_max: int, noop_action: Any = 0, cycle: Sequence[int] | None = None):
        gym.utils.RecordConstructorArgs.__init__(self, noop_max=noop_max, noop_action=noop_action, cycle=cycle)
        super().__init__(env)
        self.noop_max = int(noop_max)
        self.noop_action = noop_action
        self._noops = np.random.default_rng()
        self.cycle = tuple(int(k) for k in cycle) if cycle is not None else None
        if self.cycle is not None and (not self.cycle or not all(0 <= k <= self.noop_max for k in self.cycle)):
            raise ValueError(f"NoopReset cycle {self.cycle} must hold counts within 0..{self.noop_max}")
        self._turn = 0

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict]:
        obs, info = self.env.reset(seed=seed, options=options)
        if seed is not None:
            self._noops = np.random.default_rng(seed)
        if self.cycle is not None:
            count = self.cycle[self._turn % len(self.cycle)]
            self._turn += 1
        else:
            count = int(self._noops.integers(0, self.noop_max + 1))
        for _ in range(count):
            obs, _, terminated, truncated, info = self.env.step(self.noop_action)
            if terminated or truncated:
                obs, info = self.env.reset()
        if self.cycle is not None:
            info = {**info, START_KEY: count}
        return obs, info


class MaxPoolFrameSkip(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """Repeat the action ``skip`` frames, sum the rewards, return the max of the last two frames *seen*.

    The max removes NES/Atari sprite flicker. When the episode ends inside the skip, the frames of this
    step are used (the last one alone if only one was seen), never frames of the previous step.
    Observations that are not uint8 images (state vectors) are not pooled: the last one is returned.
    """

    def __init__(self, env: gym.Env, skip: int):
        gym.utils.RecordConstructorArgs.__init__(self, skip=skip)
        super().__init__(env)
        self.skip = int(skip)
        space = env.observation_space
        self._pool = space.dtype == np.uint8 and space.shape is not None and len(space.shape) >= 2

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        total = 0.0
        previous = obs = None
        terminated = truncated = False
        info: dict[str, Any] = {}
        for _ in range(self.skip):
            previous = obs
            obs, reward, terminated, truncated, info = self.env.step(action)
            total += float(reward)
            if terminated or truncated:
                break
        assert obs is not None
        if previous is not None and self._pool:
            obs = np.maximum(previous, obs)
        return obs, total, terminated, truncated, info


class EpisodeStatistics(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """On the step that ends an episode, ``info["episode"] = {"return", "length", *extras}``.

    ``extras`` are info keys whose final value describes the episode (Mario's x_pos, flag_get).
    """

    def __init__(self, env: gym.Env, extras: tuple[str, ...] = ()):
        gym.utils.RecordConstructorArgs.__init__(self, extras=extras)
        super().__init__(env)
        self.extras = tuple(extras)
        self._return = 0.0
        self._length = 0
        self._start: int | None = None
        """The no-op start of the episode under way (NoopReset in cycle mode), else None."""

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict]:
        self._return, self._length = 0.0, 0
        obs, info = self.env.reset(seed=seed, options=options)
        self._start = info.get(START_KEY)
        return obs, info

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        self._return += float(reward)
        self._length += 1
        if terminated or truncated:
            stats = {"return": self._return, "length": self._length}
            stats.update({k: float(info[k]) for k in self.extras if k in info})
            if self._start is not None:
                stats[START_KEY] = int(self._start)
            info = {**info, EPISODE_KEY: stats}
        return obs, reward, terminated, truncated, info


class GrayResize(gym.ObservationWrapper, gym.utils.RecordConstructorArgs):
    """RGB (H, W, 3) uint8 -> grayscale (H, W) and/or resized (h, w), with OpenCV (area interpolation)."""

    def __init__(self, env: gym.Env, grayscale: bool, size: tuple[int, int] | None):
        gym.utils.RecordConstructorArgs.__init__(self, grayscale=grayscale, size=size)
        super().__init__(env)
        import cv2

        self._cv2 = cv2
        space = env.observation_space
        assert isinstance(space, gym.spaces.Box) and space.shape is not None
        if space.dtype != np.uint8 or len(space.shape) not in (2, 3) or (len(space.shape) == 3 and space.shape[2] > 4):
            raise ValueError(f"env.grayscale/env.resize need (H, W[, C]) uint8 images, got {space}")
        self.grayscale = grayscale and len(space.shape) == 3
        self.size = tuple(size) if size is not None else None
        height, width = self.size or space.shape[:2]
        shape = (height, width) if (self.grayscale or len(space.shape) == 2) else (height, width, space.shape[2])
        self.observation_space = gym.spaces.Box(0, 255, shape, np.uint8)

    def observation(self, observation: np.ndarray) -> np.ndarray:
        frame = observation
        if self.grayscale:
            frame = self._cv2.cvtColor(frame, self._cv2.COLOR_RGB2GRAY)
        if self.size is not None:
            frame = self._cv2.resize(frame, (self.size[1], self.size[0]), interpolation=self._cv2.INTER_AREA)
        return frame


def to_channel_first(shape: tuple[int, ...]) -> tuple[int, ...]:
    """(H, W) -> (1, H, W); (H, W, C) with a small C -> (C, H, W); channel-first shapes stay."""
    if len(shape) == 2:
        return (1, *shape)
    if len(shape) == 3 and shape[2] <= 4 and shape[0] > 4:
        return (shape[2], shape[0], shape[1])
    return shape


class FrameStack(gym.ObservationWrapper, gym.utils.RecordConstructorArgs):
    """The last ``k`` observations concatenated along a channel-first axis: (k * C, H, W), dtype kept.

    2-D frames become (k, H, W); channel-last images are made channel-first; vectors become (k * D,).
    """

    def __init__(self, env: gym.Env, k: int):
        gym.utils.RecordConstructorArgs.__init__(self, k=k)
        super().__init__(env)
        space = env.observation_space
        assert isinstance(space, gym.spaces.Box) and space.shape is not None
        self.k = int(k)
        self._frame_shape = space.shape if len(space.shape) == 1 else to_channel_first(space.shape)
        self._channel_last = len(space.shape) == 3 and self._frame_shape != space.shape
        stacked = (self.k * self._frame_shape[0], *self._frame_shape[1:])
        low = np.min(space.low) if space.low.size else 0
        high = np.max(space.high) if space.high.size else 0
        self.observation_space = gym.spaces.Box(low, high, stacked, space.dtype)
        self._frames = np.zeros(stacked, space.dtype)

    def _as_frame(self, observation: np.ndarray) -> np.ndarray:
        if self._channel_last:
            observation = np.moveaxis(observation, -1, 0)
        return observation.reshape(self._frame_shape)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict]:
        obs, info = self.env.reset(seed=seed, options=options)
        frame = self._as_frame(obs)
        for i in range(self.k):  # pad with the first frame, as the DQN papers do
            self._frames[i * len(frame) : (i + 1) * len(frame)] = frame
        return self._frames.copy(), info

    def observation(self, observation: np.ndarray) -> np.ndarray:
        frame = self._as_frame(observation)
        channels = len(frame)
        self._frames[:-channels] = self._frames[channels:]
        self._frames[-channels:] = frame
        return self._frames.copy()


def transform_reward(reward: Any, clip: float | None, scale: float) -> Any:
    """Clip to [-clip, clip], then scale; works on floats and arrays (the vectorized EnvPool path uses it)."""
    if clip is not None:
        reward = np.clip(reward, -clip, clip)
    return reward * scale if scale != 1.0 else reward


class RewardTransform(gym.RewardWrapper, gym.utils.RecordConstructorArgs):
    def __init__(self, env: gym.Env, clip: float | None, scale: float):
        gym.utils.RecordConstructorArgs.__init__(self, clip=clip, scale=scale)
        super().__init__(env)
        self.clip = clip
        self.scale = scale

    def reward(self, reward: Any) -> float:
        return float(transform_reward(reward, self.clip, self.scale))

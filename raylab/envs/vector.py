"""The vector env inside a rollout worker: E single envs stepped as one batch, resetting themselves.

raylab's own small class rather than gymnasium's SyncVectorEnv because it fixes the one autoreset contract
every topology relies on (same-step reset, the truncated episode's last observation handed back) and because
it owns each env, so a crashed env can be rebuilt on its own without touching the others.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import gymnasium as gym
import numpy as np


class VectorStep(NamedTuple):
    """One batched step. ``obs`` is an internal buffer, valid until the next call: copy what you keep."""

    obs: np.ndarray
    rewards: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray
    final_obs: list[tuple[int, np.ndarray]]
    """(env index, last observation) of every episode truncated by this step."""


class SerialVectorEnv:
    """Steps ``len(env_fns)`` envs in turn; an env whose episode ends is reset in the same step."""

    def __init__(self, env_fns: Sequence[Callable[[], gym.Env]], seeds: Sequence[int]):
        if len(env_fns) != len(seeds) or not env_fns:
            raise ValueError("SerialVectorEnv needs one seed per env and at least one env")
        self.envs = [fn() for fn in env_fns]
        self.seeds = [int(s) for s in seeds]
        self.num_envs = len(self.envs)
        self.single_observation_space = self.envs[0].observation_space
        self.single_action_space = self.envs[0].action_space
        shape = self.single_observation_space.shape
        dtype = self.single_observation_space.dtype
        assert shape is not None and dtype is not None
        self._obs = np.zeros((self.num_envs, *shape), dtype=dtype)
        self._rewards = np.zeros(self.num_envs, np.float32)
        self._terminated = np.zeros(self.num_envs, bool)
        self._truncated = np.zeros(self.num_envs, bool)
        self._seeded = False

    def reset(self) -> np.ndarray:
        """Reset every env (seeded on the first call only, so later resets continue each env's stream)."""
        for i, env in enumerate(self.envs):
            obs, _ = env.reset(seed=None if self._seeded else self.seeds[i])
            self._obs[i] = obs
        self._seeded = True
        return self._obs

    def step(self, actions: np.ndarray) -> VectorStep:
        final_obs: list[tuple[int, np.ndarray]] = []
        for i, env in enumerate(self.envs):
            obs, reward, terminated, truncated, _ = env.step(actions[i])
            self._rewards[i] = reward
            self._terminated[i] = terminated
            self._truncated[i] = truncated
            if terminated or truncated:
                if truncated and not terminated:
                    final_obs.append((i, np.array(obs, copy=True)))
                obs, _ = env.reset()
            self._obs[i] = obs
        return VectorStep(self._obs, self._rewards, self._terminated, self._truncated, final_obs)

    def close(self) -> None:
        for env in self.envs:
            env.close()

    def __enter__(self) -> SerialVectorEnv:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

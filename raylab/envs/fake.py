"""A deterministic fake env for tests and plumbing benchmarks (Acme-style: built from a spec, no simulator).

Each step shows a label in [0, num_actions) encoded in the observation; the action equal to the label earns
reward 1, any other 0. A policy that reads the observation earns ``episode_length`` per episode, a random
one ``episode_length / num_actions``, so learning on it is measurable in seconds. ``continuous=True`` makes
the action a Box in [-1, 1] and the label a target in [-1, 1] (the observation's value): reward
``1 - |action - target| / 2`` per step, so reading the observation earns close to ``episode_length`` and an
N(0, 1) policy about 0.6 of it. Three-dimensional
``obs_shape`` gives uint8 images (channel-first), anything else float32 vectors. ``crash_every=N`` makes
the N-th call of ``crash_in`` ("step" or "reset") of each instance raise, to test crash recovery.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np


class FakeEnv(gym.Env[np.ndarray, Any]):
    metadata = {"render_modes": []}  # noqa: RUF012 - gymnasium's convention

    def __init__(
        self,
        obs_shape: tuple[int, ...] = (4,),
        num_actions: int = 2,
        episode_length: int = 20,
        crash_every: int | None = None,
        crash_in: str = "step",
        continuous: bool = False,
    ):
        if num_actions < 2:
            raise ValueError("FakeEnv needs num_actions >= 2")
        self.crash_every = crash_every
        self.crash_in = crash_in
        self._calls = 0
        self.obs_shape = tuple(int(s) for s in obs_shape)
        self.num_actions = int(num_actions)
        self.episode_length = int(episode_length)
        self.image = len(self.obs_shape) == 3
        if self.image:
            self.observation_space = gym.spaces.Box(0, 255, self.obs_shape, np.uint8)
        else:
            self.observation_space = gym.spaces.Box(-1.0, 1.0, self.obs_shape, np.float32)
        self.continuous = bool(continuous)
        self.action_space: gym.Space = (
            gym.spaces.Box(-1.0, 1.0, (1,), np.float32) if self.continuous else gym.spaces.Discrete(self.num_actions)
        )
        self._t = 0
        self._label = 0

    def _obs(self) -> np.ndarray:
        level = self._label / (self.num_actions - 1)
        if self.image:
            return np.full(self.obs_shape, round(level * 255), np.uint8)
        return np.full(self.obs_shape, 2.0 * level - 1.0, np.float32)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        self._maybe_crash("reset")
        super().reset(seed=seed)
        self._t = 0
        self._label = int(self.np_random.integers(self.num_actions))
        return self._obs(), {}

    def _maybe_crash(self, where: str) -> None:
        if self.crash_every and self.crash_in == where:
            self._calls += 1
            if self._calls % self.crash_every == 0:
                raise RuntimeError(f"FakeEnv crashed on purpose in {where} call {self._calls}")

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        self._maybe_crash("step")
        if self.continuous:
            target = 2.0 * self._label / (self.num_actions - 1) - 1.0
            reward = 1.0 - abs(float(np.clip(np.asarray(action).reshape(-1)[0], -1.0, 1.0)) - target) / 2.0
        else:
            reward = 1.0 if int(action) == self._label else 0.0
        self._t += 1
        self._label = int(self.np_random.integers(self.num_actions))
        terminated = self._t >= self.episode_length
        return self._obs(), reward, terminated, False, {}

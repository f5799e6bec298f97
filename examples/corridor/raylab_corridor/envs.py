"""A corridor of ``length`` cells: start at the left end, walk right to the exit.

Observation: ``[position / (length - 1), 1 - position / (length - 1), at_left_wall, steps_left / max_steps]``
(float32). Actions: 0 = left, 1 = right. Reward: +1 on reaching the exit (the episode terminates there),
-0.01 per step otherwise; an episode is truncated after ``max_steps`` steps. A random policy rarely makes it
down a long corridor; a policy that learned "go right" earns ``1 - 0.01 * (length - 2)`` per episode.
"""

from __future__ import annotations

from typing import Any, ClassVar

import gymnasium as gym
import numpy as np

STEP_REWARD = -0.01


class CorridorEnv(gym.Env):
    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["rgb_array"]}

    def __init__(self, length: int = 10, max_steps: int = 100, render_mode: str | None = None):
        if length < 2:
            raise ValueError(f"length must be >= 2 (got {length})")
        self.length, self.max_steps, self.render_mode = int(length), int(max_steps), render_mode
        self.observation_space = gym.spaces.Box(0.0, 1.0, shape=(4,), dtype=np.float32)
        self.action_space = gym.spaces.Discrete(2)
        self.position = 0
        self.steps = 0

    def _obs(self) -> np.ndarray:
        x = self.position / (self.length - 1)
        left = 1.0 - self.steps / self.max_steps
        return np.array([x, 1.0 - x, float(self.position == 0), left], dtype=np.float32)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self.position, self.steps = 0, 0
        return self._obs(), {}

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        self.steps += 1
        self.position = min(self.length - 1, max(0, self.position + (1 if int(action) == 1 else -1)))
        terminated = self.position == self.length - 1
        reward = 1.0 if terminated else STEP_REWARD
        truncated = not terminated and self.steps >= self.max_steps
        return self._obs(), reward, terminated, truncated, {}

    def render(self) -> np.ndarray:
        frame = np.zeros((8, 8 * self.length, 3), dtype=np.uint8)
        frame[:, 8 * (self.length - 1) :, 1] = 255  # the exit, green
        frame[:, 8 * self.position : 8 * self.position + 8, 0] = 255  # the walker, red
        return frame


def make_corridor(length: int = 10, max_steps: int = 100) -> CorridorEnv:
    """``env.factory``: called once per env with env.options as keyword arguments."""
    return CorridorEnv(length=length, max_steps=max_steps)


def make_corridors(num_envs: int, length: int = 10, max_steps: int = 100) -> gym.vector.VectorEnv:
    """``env.factory`` of a whole batch: it takes ``num_envs``, so raylab calls it once per rollout worker with
    ``num_envs=topology.envs_per_worker`` (and env.options) and steps the VectorEnv it returns."""
    return gym.vector.SyncVectorEnv([lambda: CorridorEnv(length=length, max_steps=max_steps)] * num_envs)


def best_return(length: int) -> float:
    """The return of walking straight to the exit."""
    return 1.0 + STEP_REWARD * (length - 2)


gym.register("Corridor-v0", entry_point=CorridorEnv, max_episode_steps=None, kwargs={"length": 10, "max_steps": 100})

"""An env per observation and action space of the support matrix (docs: Environments > Observation spaces), for
the tests that run every space on every algorithm:
``env.id=tests.envs.spaces_envs:Space-v0 env.options.kind=<kind> env.options.action=<action>``.
The observation is drawn from the space (seeded); each step earns the share of the action's entries that are 0
(a Discrete action: 1 for action 0), so a learning algorithm's return rises to the episode's length."""

from __future__ import annotations

import gymnasium as gym
import numpy as np

SPACES = {
    "discrete": lambda: gym.spaces.Discrete(5, start=2),
    "multidiscrete": lambda: gym.spaces.MultiDiscrete([3, 4]),
    "multibinary": lambda: gym.spaces.MultiBinary(6),
    "tuple": lambda: gym.spaces.Tuple((gym.spaces.Discrete(3), gym.spaces.Box(-1, 1, (2,)))),
    "dict": lambda: gym.spaces.Dict({"position": gym.spaces.Box(-1, 1, (3,)), "mode": gym.spaces.Discrete(2)}),
    "dict_image": lambda: gym.spaces.Dict(
        {
            "image": gym.spaces.Box(0, 255, (7, 7, 3), np.uint8),
            "direction": gym.spaces.Discrete(4),
            "mission": gym.spaces.Text(16),
        }
    ),
}
"""Each kind's observation space: Discrete with a start, MultiDiscrete, MultiBinary, a Tuple of a Discrete and a
Box, a Dict of vectors, and MiniGrid's shape (an image, a direction, a mission)."""


ACTIONS = {
    "discrete": lambda: gym.spaces.Discrete(3),
    "multidiscrete": lambda: gym.spaces.MultiDiscrete([3, 2, 4]),
    "multibinary": lambda: gym.spaces.MultiBinary(4),
}


class SpaceEnv(gym.Env):
    def __init__(self, kind: str = "discrete", action: str = "discrete", length: int = 16):
        self.observation_space = SPACES[kind]()
        self.action_space = ACTIONS[action]()
        self.length, self.t = length, 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.observation_space.seed(int(self.np_random.integers(2**31)))
        self.t = 0
        return self.observation_space.sample(), {}

    def step(self, action):
        self.t += 1
        assert self.action_space.contains(np.asarray(action, self.action_space.dtype)), action
        reward = float(np.mean(np.asarray(action) == 0))
        return self.observation_space.sample(), reward, False, self.t >= self.length, {}


gym.register("Space-v0", entry_point=SpaceEnv)

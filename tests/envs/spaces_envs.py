"""An env per observation space of the support matrix (docs: Environments > Observation spaces), for the tests
that run every space on every algorithm: ``env.id=tests.envs.spaces_envs:Space-v0 env.options.kind=<kind>``.
The observation is drawn from the space (seeded); action 0 earns 1, so a learning algorithm's return rises."""

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


class SpaceEnv(gym.Env):
    def __init__(self, kind: str = "discrete", length: int = 16):
        self.observation_space = SPACES[kind]()
        self.action_space = gym.spaces.Discrete(3)
        self.length, self.t = length, 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.observation_space.seed(int(self.np_random.integers(2**31)))
        self.t = 0
        return self.observation_space.sample(), {}

    def step(self, action):
        self.t += 1
        return self.observation_space.sample(), float(action == 0), False, self.t >= self.length, {}


gym.register("Space-v0", entry_point=SpaceEnv)

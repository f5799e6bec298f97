"""An env whose observation space raylab does not encode (a Text space), for the bad-input catalogue:
``env.id=tests.cli.odd_envs:TextObservation-v0``."""

from __future__ import annotations

import gymnasium as gym


class TextObservation(gym.Env):
    observation_space = gym.spaces.Text(8)
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return "start", {}

    def step(self, action):
        return "next", 0.0, True, False, {}


gym.register("TextObservation-v0", entry_point=TextObservation)

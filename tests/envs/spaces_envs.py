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


TARGETS = {
    "discrete": lambda o: (int(o) - 2) % 3,
    "multidiscrete": lambda o: int(o[0]),
    "multibinary": lambda o: int(o[0]) + int(o[1]),
    "tuple": lambda o: int(o[0]),
    "dict": lambda o: int(o["mode"]),
    "dict_image": lambda o: int(o["direction"]) % 3,
}
"""The Discrete(3) action each kind's observation asks for (SpacesParallelEnv): read from its discrete parts, so
a policy earns more than chance only through their encoding."""


class SpacesParallelEnv:
    """A PettingZoo Parallel env of agents that observe different spaces (``kinds``: one of SPACES per agent) and
    act in Discrete(3): ``env=pettingzoo env.id=tests.envs.spaces_envs +env.options.kinds=[discrete,dict_image]``.
    Each step an agent earns 1 when its action is the one its observation asks for (TARGETS), for ``length``
    steps: chance is a third of that."""

    def __init__(self, kinds: tuple[str, ...] = ("discrete", "dict_image"), length: int = 16):
        self.possible_agents = [f"agent_{i}" for i in range(len(kinds))]
        self.agents: list[str] = []
        self._kind = dict(zip(self.possible_agents, kinds, strict=True))
        self._obs = {a: SPACES[k]() for a, k in self._kind.items()}
        self._act = {a: gym.spaces.Discrete(3) for a in self.possible_agents}
        self._last: dict = {}
        self.length, self.t = length, 0

    def observation_space(self, agent: str) -> gym.Space:
        return self._obs[agent]

    def action_space(self, agent: str) -> gym.Space:
        return self._act[agent]

    def _observe(self) -> dict:
        self._last = {a: self._obs[a].sample() for a in self.agents}
        return self._last

    def reset(self, seed=None, options=None):
        rng = np.random.default_rng(seed)
        for k, space in enumerate(self._obs.values()):
            space.seed(int(rng.integers(2**31)) + k)
        self.agents, self.t = list(self.possible_agents), 0
        return self._observe(), {a: {} for a in self.agents}

    def step(self, actions):
        self.t += 1
        rewards = {a: float(int(action) == TARGETS[self._kind[a]](self._last[a])) for a, action in actions.items()}
        done = self.t >= self.length
        infos = {a: {} for a in self.agents}
        end = {a: done for a in self.agents}
        obs = self._observe()
        if done:
            self.agents = []
        return obs, rewards, {a: False for a in end}, end, infos

    def close(self) -> None:
        pass


def parallel_env(**options) -> SpacesParallelEnv:
    return SpacesParallelEnv(**options)

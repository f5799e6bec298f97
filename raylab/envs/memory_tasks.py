"""Tasks a feed-forward policy cannot solve: the observation leaves out what the policy must remember.

Importing this module registers the ids below with gymnasium, so every process that builds envs gets them from
``env=gymnasium env.id=raylab.envs.memory_tasks:<id>`` (GymnasiumFamily imports the module named before the
colon first); ``env.options`` are the keyword arguments of the functions below.

- ``StatelessCartPole-v1``: CartPole-v1 without the two velocities, as RLlib's example env
  (ray/rllib/examples/envs/classes/stateless_cartpole.py): observation [x, theta], float32 Box(2,) with the bounds
  RLlib gives it, 500-step limit.
- ``PopGym-<Task>-v0`` (e.g. ``PopGym-RepeatPreviousEasy-v0``, ``PopGym-CountRecallEasy-v0``): a POPGym task
  (Morad et al., ICLR 2023) with the observation wrappers of the paper's PPO baselines
  (popgym/baselines/ppo.py: ``Antialias(PreviousAction(env))``: the previous action, and a flag that is 1 on the
  first step only), its Tuple of Discrete / MultiDiscrete / Box parts flattened into one float32 Box, each discrete
  part one-hot (gymnasium.spaces.utils.flatten, which RLlib's preprocessor matches). Not ``popgym-<Task>-v0``:
  popgym registers those ids, raw, whenever it is imported.
- ``MiniGridMemory-S7-v0``, ``MiniGridMemory-S9-v0`` (also S11, S13): MiniGrid's Memory room (match the object seen
  at the start at the end of the hallway) as the recurrent-PPO baselines play it (MarcoMeter/
  recurrent-ppo-truncated-bptt, environments/minigrid_env.py): the agent's partial view as an RGB image, uint8
  channel-first, ``agent_view_size=3`` (MiniGrid's default 7 lets S7 be solved without memory), the actions cut to
  turn left, turn right, forward.

POPGym and MiniGrid come with the ``memory`` extra and are imported only when one of their envs is built; without
them the build is one line naming ``pip install 'raylab-actor-learner[memory]'``.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.envs.classic_control.cartpole import CartPoleEnv

from raylab.errors import ConfigError

INSTALL_HINT = "pip install 'raylab-actor-learner[memory]' (popgym and minigrid)"

POPGYM_TASKS = (
    "Autoencode", "Battleship", "Concentration", "CountRecall", "HigherLower", "MineSweeper", "MultiarmedBandit",
    "NoisyPositionOnlyCartPole", "NoisyPositionOnlyPendulum", "PositionOnlyCartPole", "PositionOnlyPendulum",
    "RepeatFirst", "RepeatPrevious", "VelocityOnlyCartPole",
)  # fmt: skip
"""POPGym's tasks (each Easy, Medium and Hard); its two labyrinths need mazelib and are left out."""
POPGYM_LEVELS = ("Easy", "Medium", "Hard")
MINIGRID_MEMORY_SIZES = (7, 9, 11, 13)


def require(module: str) -> ModuleType:
    """Import ``module`` of the memory extra; gymnasium's DependencyNotInstalled naming the extra if it is missing
    (GymnasiumFamily and CustomFamily turn that into one ConfigError line)."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as err:
        top = module.split(".")[0]
        if err.name is None or err.name.split(".")[0] != top:
            raise
        raise gym.error.DependencyNotInstalled(f"{top} is not installed: {INSTALL_HINT}") from None


class StatelessCartPole(CartPoleEnv):
    """CartPole whose observation is [x, theta]: the cart's position and the pole's angle, no velocities."""

    def __init__(self, **kwargs: Any):
        super().__init__(**kwargs)
        high = np.array([self.x_threshold * 2, self.theta_threshold_radians * 2], dtype=np.float32)
        self.observation_space = gym.spaces.Box(-high, high, dtype=np.float32)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        obs, info = super().reset(seed=seed, options=options)
        return np.asarray(obs, np.float32)[[0, 2]], info

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        obs, reward, terminated, truncated, info = super().step(action)
        return np.asarray(obs, np.float32)[[0, 2]], float(reward), terminated, truncated, info


class FlatObservation(gym.ObservationWrapper):
    """A Tuple / Dict / Discrete / MultiDiscrete observation as one float32 vector: discrete parts one-hot, Box
    parts as they are, concatenated in the space's order (gymnasium.spaces.utils.flatten); ``unflatten`` undoes it."""

    def __init__(self, env: gym.Env):
        super().__init__(env)
        self.structured_space = env.observation_space
        flat = gym.spaces.utils.flatten_space(self.structured_space)
        assert isinstance(flat, gym.spaces.Box)
        self.observation_space = gym.spaces.Box(
            flat.low.astype(np.float32), flat.high.astype(np.float32), flat.shape, np.float32
        )

    def observation(self, observation: Any) -> np.ndarray:
        return np.asarray(gym.spaces.utils.flatten(self.structured_space, observation), np.float32)

    def unflatten(self, flat: np.ndarray) -> Any:
        return gym.spaces.utils.unflatten(self.structured_space, flat)


def popgym_env(
    task: str, previous_action: bool = True, antialias: bool = True, render_mode: str | None = None
) -> gym.Env:
    """POPGym's ``task`` (e.g. RepeatPreviousEasy) with the paper's wrappers, observation flattened to float32.

    ``previous_action``/``antialias``: PreviousAction (the action just taken; 0 after a reset) and Antialias (1 on
    the first observation of an episode, which tells the reset's 0 from a real action 0), as popgym/baselines/ppo.py
    wraps every env; false leaves one out (an ablation, not the paper's setting)."""
    if render_mode is not None:
        raise ConfigError(f"POPGym's {task} draws no frames (render_mode={render_mode}): leave out video=true")
    envs = require("popgym.envs")
    wrappers = require("popgym.wrappers")
    env: gym.Env = getattr(envs, task)()
    if previous_action:
        env = wrappers.PreviousAction(env)
    if antialias:
        env = wrappers.Antialias(env)
    return FlatObservation(env)


class ChannelFirst(gym.ObservationWrapper):
    """(H, W, C) uint8 images -> (C, H, W), the layout raylab's CNNs take."""

    def __init__(self, env: gym.Env):
        super().__init__(env)
        space = env.observation_space
        assert isinstance(space, gym.spaces.Box) and space.shape is not None and len(space.shape) == 3
        height, width, channels = space.shape
        self.observation_space = gym.spaces.Box(0, 255, (channels, height, width), np.uint8)

    def observation(self, observation: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray(np.transpose(observation, (2, 0, 1)))


class OneHotCells(gym.ObservationWrapper):
    """MiniGrid's symbolic window, (view, view, 3) codes of (object, colour, state), as one float32 row of one-hot
    codes (object 11, colour 6, state 3: 20 a cell), as MiniGrid's OneHotPartialObsWrapper lays them out. Float,
    not uint8: raylab scales uint8 observations by 1/255 as frames, which would shrink the 0/1 codes."""

    def __init__(self, env: gym.Env, sizes: tuple[int, ...] = (11, 6, 3)):
        super().__init__(env)
        space = env.observation_space
        assert isinstance(space, gym.spaces.Box) and space.shape is not None and len(space.shape) == 3
        height, width, channels = space.shape
        assert channels == len(sizes)
        self._offsets = np.cumsum((0, *sizes[:-1])).astype(np.intp)
        self._cells = height * width
        self._width = int(sum(sizes))
        self.observation_space = gym.spaces.Box(0.0, 1.0, (self._cells * self._width,), np.float32)

    def observation(self, observation: np.ndarray) -> np.ndarray:
        out = np.zeros((self._cells, self._width), np.float32)
        codes = observation.reshape(self._cells, -1).astype(np.intp) + self._offsets
        np.put_along_axis(out, codes, 1.0, axis=1)
        return out.reshape(-1)


class FirstActions(gym.ActionWrapper):
    """Only the first ``n`` of the env's Discrete actions (MiniGrid: 0 left, 1 right, 2 forward)."""

    def __init__(self, env: gym.Env, n: int):
        super().__init__(env)
        assert isinstance(env.action_space, gym.spaces.Discrete) and n <= env.action_space.n
        self.action_space = gym.spaces.Discrete(n)

    def action(self, action: Any) -> int:
        return int(action)


def minigrid_memory(
    size: int = 7,
    agent_view_size: int = 3,
    observation: str = "rgb",
    tile_size: int | None = None,
    movement_only: bool = True,
    max_steps: int | None = None,
    render_mode: str | None = None,
) -> gym.Env:
    """MiniGrid's MemoryEnv, S``size`` (odd, >= 7), seen through the agent's ``agent_view_size`` window (odd, >= 3).

    ``observation``: ``rgb`` renders the window as an RGB image of ``tile_size`` pixels per cell (default
    84 // agent_view_size: 84x84 at view 3 or 7), (3, H, W) uint8 for model=nature_cnn; ``symbolic`` is MiniGrid's
    (object, colour, state) code per cell, (3, view, view) uint8 (raylab's models scale uint8 by 1/255 as frames,
    so an MLP sees codes of 0-10 as 0-0.04); ``onehot`` is the same codes one-hot, one float32 row of view * view *
    20 (MiniGrid's OneHotPartialObsWrapper layout), the input an MLP learns from. ``movement_only`` keeps
    the three actions that move (the baselines' action space; pickup, drop, toggle and done do nothing here).
    ``max_steps``: MiniGrid's own truncation (default 5 * size**2)."""
    if observation not in ("rgb", "symbolic", "onehot"):
        raise ConfigError(f"env.options.observation must be rgb, symbolic or onehot (got {observation!r})")
    if size < 7 or size % 2 == 0 or agent_view_size < 3 or agent_view_size % 2 == 0:
        raise ConfigError(
            f"MiniGrid's Memory room needs an odd size >= 7 and an odd agent_view_size >= 3 (got size={size}, "
            f"agent_view_size={agent_view_size})"
        )
    envs = require("minigrid.envs")
    wrappers = require("minigrid.wrappers")
    env: gym.Env = envs.MemoryEnv(
        size=size, agent_view_size=agent_view_size, max_steps=max_steps, render_mode=render_mode
    )
    if observation == "rgb":
        env = wrappers.RGBImgPartialObsWrapper(env, tile_size=tile_size or max(84 // agent_view_size, 1))
    env = wrappers.ImgObsWrapper(env)
    env = OneHotCells(env) if observation == "onehot" else ChannelFirst(env)
    return FirstActions(env, 3) if movement_only else env


def register() -> None:
    """Register this module's ids with gymnasium (done on import; again is a no-op)."""
    here = __name__
    if "StatelessCartPole-v1" in gym.registry:
        return
    gym.register(
        "StatelessCartPole-v1", entry_point=f"{here}:StatelessCartPole", max_episode_steps=500, reward_threshold=475.0
    )
    for task in POPGYM_TASKS:
        for level in POPGYM_LEVELS:
            gym.register(f"PopGym-{task}{level}-v0", entry_point=f"{here}:popgym_env", kwargs={"task": task + level})
    for size in MINIGRID_MEMORY_SIZES:
        gym.register(f"MiniGridMemory-S{size}-v0", entry_point=f"{here}:minigrid_memory", kwargs={"size": size})


register()

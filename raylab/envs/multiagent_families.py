"""The multi-agent env families: snake_arena (raylab's own, natively batched) and pettingzoo (any PettingZoo
Parallel env). Their envs come as agent slots (raylab/envs/multiagent.py); the single-agent families and the
interface every family implements are in raylab/envs/families.py.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from raylab.envs import multiagent
from raylab.envs.config import EnvConfig
from raylab.envs.families import EnvFamily
from raylab.envs.snake_arena import SnakeArena
from raylab.envs.vector import VectorEnv
from raylab.errors import ConfigError


class MultiAgentFamily(EnvFamily):
    """Envs of several agents, as agent slots (one policy for all: parameter sharing, or several policies). Of the
    shared preprocessing they take env.reward_clip, env.reward_scale (per agent) and env.max_episode_steps; a
    family with ``frames`` also env.grayscale, env.resize and env.frame_stack, per agent."""

    multi_agent = True
    frames = False
    """It takes env.grayscale, env.resize and env.frame_stack (per agent; raylab.envs.multiagent.SlotFrames)."""

    def check(self, cfg: EnvConfig) -> None:
        if self.options:  # pettingzoo: env.options are its parallel_env's keyword arguments, checked by calling it
            super().check(cfg)
        if self.frames and (cfg.frame_skip != 1 or cfg.noop_max):
            raise ConfigError(
                f"env={self.name} is multi-agent and takes frame stacking, grayscale and resize per agent, not yet "
                f"frame skip or no-op starts: set env.frame_skip=1 and env.noop_max=0"
            )
        frames = cfg.frame_stack != 1 or cfg.grayscale or cfg.resize is not None
        if not self.frames and (cfg.frame_skip != 1 or cfg.noop_max or frames):
            raise ConfigError(
                f"env={self.name} is multi-agent and takes no frame preprocessing yet: set env.frame_skip=1, "
                f"env.frame_stack=1, env.grayscale=false, env.resize=null, env.noop_max=0"
            )

    def make_raw(self, cfg: EnvConfig) -> gym.Env:
        raise ConfigError(
            f"env={self.name} is multi-agent: it has no single-agent gymnasium env (videos of it are not made yet: "
            f"leave out video=true)"
        )


class SnakeArenaFamily(MultiAgentFamily):
    """raylab.envs.snake_arena.SnakeArena (env.id SnakeArena-v0): N snakes per board, natively batched."""

    name = "snake_arena"
    episode_extras = ("score", "snake_length")
    options = (
        "num_snakes", "dim", "num_food", "start_length", "view", "food_reward", "death_penalty", "step_reward",
        "hunger_limit",
    )  # fmt: skip

    def check(self, cfg: EnvConfig) -> None:
        super().check(cfg)
        if cfg.id != "SnakeArena-v0":
            raise ConfigError(
                f"unknown snake arena id '{cfg.id}': the only one is SnakeArena-v0 (set env.id=SnakeArena-v0)"
            )
        if cfg.max_episode_steps is not None:
            raise ConfigError("env=snake_arena ends a snake's episode by hunger: set env.max_episode_steps=null and "
                              "env.options.hunger_limit=<steps without food>")  # fmt: skip
        try:
            SnakeArena(boards=1, **cfg.options)  # checks its options (nothing is stepped or reset)
        except (ValueError, TypeError) as err:
            raise ConfigError(f"bad env.options for env=snake_arena: {err}") from None

    def make_vector(self, cfg: EnvConfig, num_envs: int, seed: int, name: str) -> VectorEnv | None:
        return SnakeArena(
            boards=num_envs,
            seed=seed,
            name=name,
            reward_clip=cfg.reward_clip,
            reward_scale=cfg.reward_scale,
            **cfg.options,
        )


class PettingZooFamily(MultiAgentFamily):
    """Any PettingZoo Parallel env by module path (env.id=mpe2.simple_spread_v3), env.options passed to its
    ``parallel_env(...)``."""

    name = "pettingzoo"
    frames = True

    def check(self, cfg: EnvConfig) -> None:
        super().check(cfg)
        env = multiagent.make_parallel_env(cfg.id, cfg.options)
        try:
            groups = multiagent.space_groups(env, cfg.id, cfg.pad_observations, cfg.discrete_agents)
            multiagent.check_frames(groups, cfg.id, cfg.grayscale, cfg.resize, cfg.frame_stack)
        finally:
            env.close()

    def make_vector(self, cfg: EnvConfig, num_envs: int, seed: int, name: str) -> VectorEnv | None:
        def build() -> Any:
            return multiagent.make_parallel_env(cfg.id, cfg.options)

        return multiagent.ParallelSlots(
            [build] * num_envs, [seed + i for i in range(num_envs)], cfg.id, cfg.max_episode_steps,
            cfg.reward_clip, cfg.reward_scale, name=name, pad_observations=cfg.pad_observations,
            discrete_agents=cfg.discrete_agents, grayscale=cfg.grayscale, resize=cfg.resize,
            frame_stack=cfg.frame_stack,
        )  # fmt: skip

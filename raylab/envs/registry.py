"""One ``make_env(cfg, seed, worker_index)`` for every env family, and the checks behind ``env.*`` keys.

A family is a small object that knows how to build its envs and how to check their config; the table at the
bottom lists them (explicitly, no import-time registration). Seeds are ``seed + worker_index * num_envs + i``
so every env of every worker has its own stream, and a run is reproducible from ``seed``.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

import gymnasium as gym
import numpy as np

from raylab.config import EnvConfig
from raylab.envs.fake import FakeEnv
from raylab.envs.vector import SerialVectorEnv
from raylab.errors import ConfigError

EVAL_WORKER_INDEX = 1_000_003
"""Worker index of evaluation envs: their seeds never collide with a rollout worker's."""


@dataclass(frozen=True)
class EnvSpaces:
    """What builders need to know about an env, without holding one."""

    obs_shape: tuple[int, ...]
    obs_dtype: np.dtype
    num_actions: int | None
    """Number of discrete actions; None for continuous action spaces."""
    action_space: str
    """repr of the action space, for error messages."""
    frames_per_step: int = 1
    """Emulator frames per agent step (frame skip), to report env frames/s beside agent steps/s."""


class EnvFamily(Protocol):
    def check(self, cfg: EnvConfig) -> None:
        """Raise ConfigError (naming the fix) if ``cfg`` cannot make an env of this family."""

    def make(self, cfg: EnvConfig) -> gym.Env: ...

    def max_return(self, cfg: EnvConfig) -> float | None:
        """An upper bound on an episode's return, when one is known."""


class GymnasiumFamily:
    """Any env registered with gymnasium, by id."""

    KNOWN_MAX_RETURN_PER_STEP: ClassVar[dict[str, float]] = {
        "CartPole": 1.0,
        "Acrobot": 0.0,
        "MountainCar": 0.0,
        "Pendulum": 0.0,
    }

    def check(self, cfg: EnvConfig) -> None:
        if cfg.id in gym.registry:
            return
        close = difflib.get_close_matches(cfg.id, list(gym.registry), n=3)
        hint = f"did you mean {' or '.join(close)}?" if close else "see gymnasium.pprint_registry()"
        raise ConfigError(f"unknown env id '{cfg.id}' for env=gymnasium: {hint} (set env.id=<registered id>)")

    def make(self, cfg: EnvConfig) -> gym.Env:
        kwargs: dict[str, Any] = dict(cfg.options)
        if cfg.max_episode_steps is not None:
            kwargs["max_episode_steps"] = cfg.max_episode_steps
        try:
            return gym.make(cfg.id, disable_env_checker=True, **kwargs)
        except TypeError as err:
            raise ConfigError(f"{cfg.id} rejected env.options {dict(cfg.options)} ({err}): fix env.options") from err

    def max_return(self, cfg: EnvConfig) -> float | None:
        spec = gym.spec(cfg.id)
        per_step = self.KNOWN_MAX_RETURN_PER_STEP.get(spec.name)
        limit = cfg.max_episode_steps or spec.max_episode_steps
        if per_step is None or limit is None:
            return None
        return per_step * limit


class FakeFamily:
    """raylab.envs.fake.FakeEnv; options: obs_shape, num_actions, episode_length."""

    OPTIONS = ("obs_shape", "num_actions", "episode_length")

    def check(self, cfg: EnvConfig) -> None:
        for key in cfg.options:
            if key not in self.OPTIONS:
                raise ConfigError(f"unknown env.options.{key} for env=fake: valid are {', '.join(self.OPTIONS)}")

    def make(self, cfg: EnvConfig) -> gym.Env:
        env: gym.Env = FakeEnv(**cfg.options)
        if cfg.max_episode_steps is not None:
            env = gym.wrappers.TimeLimit(env, cfg.max_episode_steps)
        return env

    def max_return(self, cfg: EnvConfig) -> float | None:
        length = int(cfg.options.get("episode_length", 20))
        if cfg.max_episode_steps is not None:
            length = min(length, cfg.max_episode_steps)
        return float(length)


FAMILIES: dict[str, EnvFamily] = {"gymnasium": GymnasiumFamily(), "fake": FakeFamily()}


def family(cfg: EnvConfig) -> EnvFamily:
    try:
        return FAMILIES[cfg.family]
    except KeyError:
        raise ConfigError(
            f"unknown env.family '{cfg.family}': choose one of {', '.join(FAMILIES)} (e.g. env=gymnasium)"
        ) from None


def check_env_config(cfg: EnvConfig) -> None:
    family(cfg).check(cfg)


def max_return(cfg: EnvConfig) -> float | None:
    return family(cfg).max_return(cfg)


def make_env(cfg: EnvConfig, seed: int, worker_index: int = 0) -> gym.Env:
    """One env of ``cfg``'s family, reset once with its seed (``seed + worker_index``)."""
    env = family(cfg).make(cfg)
    env.reset(seed=seed + worker_index)
    return env


def make_vector_env(cfg: EnvConfig, num_envs: int, seed: int, worker_index: int = 0) -> SerialVectorEnv:
    """``num_envs`` envs of ``cfg`` stepped as a batch; env i of worker w is seeded ``seed + w * num_envs + i``."""
    fam = family(cfg)
    seeds = [seed + worker_index * num_envs + i for i in range(num_envs)]
    return SerialVectorEnv([lambda: fam.make(cfg)] * num_envs, seeds)


def env_spaces(cfg: EnvConfig) -> EnvSpaces:
    """Describe the observation and action spaces of ``cfg`` (builds one env and closes it)."""
    env = family(cfg).make(cfg)
    try:
        obs_space, act_space = env.observation_space, env.action_space
    finally:
        env.close()
    if not isinstance(obs_space, gym.spaces.Box):
        raise ConfigError(
            f"{cfg.id} has {obs_space} observations; raylab's models take array (Box) observations: "
            f"choose an env with Box observations"
        )
    assert obs_space.dtype is not None
    num_actions = int(act_space.n) if isinstance(act_space, gym.spaces.Discrete) else None
    return EnvSpaces(
        obs_shape=tuple(obs_space.shape),
        obs_dtype=np.dtype(obs_space.dtype),
        num_actions=num_actions,
        action_space=repr(act_space),
    )

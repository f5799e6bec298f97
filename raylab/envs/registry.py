"""One ``make_env(cfg, seed, worker_index)`` for every env family, and the checks behind ``env.*`` keys.

A family knows how to build its raw env, check its options, and (optionally) build a natively batched
vector env (raylab/envs/families.py, raylab/envs/multiagent_families.py); everything else — frame skip,
grayscale, resize, frame stack, reward transform, time limit, episode statistics, no-op starts — is the same
wrapper stack for all (raylab/envs/wrappers.py). The table below lists the families explicitly; optional
packages (nes-py, EnvPool) are imported only when their family builds an env, and a missing one is a one-line
error naming the install command.

Seeds: env i of worker w plays ``seed + w * num_envs + i``, so every env of every worker has its own stream
and a run is reproducible from ``seed``.
"""

from __future__ import annotations

import dataclasses
from functools import partial
from typing import cast

import gymnasium as gym
import numpy as np

from raylab.envs import classic_pool
from raylab.envs.config import EnvConfig
from raylab.envs.families import (
    AtariFamily,
    CustomFamily,
    EnvFamily,
    FakeFamily,
    GymnasiumFamily,
    MarioFamily,
    ProcgenFamily,
    SnakeFamily,
)
from raylab.envs.multiagent_families import PettingZooFamily, SnakeArenaFamily
from raylab.envs.spaces import encoded, obs_parts
from raylab.envs.vector import SerialVectorEnv, VectorEnv, space_group_count
from raylab.envs.wrappers import (
    EpisodeStatistics,
    FrameStack,
    GrayResize,
    MaxPoolFrameSkip,
    NoopReset,
    RewardTransform,
    as_float32,
)
from raylab.errors import ConfigError
from raylab.types import EnvSpaces, ObsPart

EVAL_WORKER_INDEX = 1_000_003
"""Worker index of evaluation envs: their seeds never collide with a rollout worker's."""

FAMILIES: dict[str, EnvFamily] = {
    f.name: f
    for f in (
        GymnasiumFamily(), CustomFamily(), MarioFamily(), ProcgenFamily(), AtariFamily(), SnakeFamily(),
        SnakeArenaFamily(), PettingZooFamily(), FakeFamily(),
    )
}  # fmt: skip


def family(cfg: EnvConfig) -> EnvFamily:
    """The family that builds ``cfg``'s envs (``env.family``); a one-line error listing them otherwise."""
    try:
        return FAMILIES[cfg.family]
    except KeyError:
        raise ConfigError(
            f"unknown env.family '{cfg.family}': choose one of {', '.join(FAMILIES)} (e.g. env=gymnasium)"
        ) from None


def check_env_config(cfg: EnvConfig) -> None:
    fam = family(cfg)
    if cfg.pad_observations and fam.name != "pettingzoo":
        raise ConfigError(
            f"env.pad_observations pads the observations of a PettingZoo env's agents, and env={cfg.family} has none "
            f"to pad: set env.pad_observations=false"
        )
    if cfg.discrete_agents and fam.name != "pettingzoo":
        raise ConfigError(
            f"env.discrete_agents shows a PettingZoo env's agents' Box actions as Discrete ones, and env={cfg.family} "
            f"has no such agents: set env.discrete_agents=[]"
        )
    fam.check(cfg)
    if cfg.backend == "envpool":
        classic_pool.check(cfg)
    if cfg.normalize_reward and (fam.multi_agent or fam.batched or fam.vector_only(cfg)):
        raise ConfigError(
            f"env.normalize_reward wraps single envs, and env={cfg.family} steps its envs as one batch: set "
            f"env.normalize_reward=false (env.reward_scale is a constant scale that every family takes)"
        )


def max_return(cfg: EnvConfig) -> float | None:
    return family(cfg).max_return(cfg)


def wrap(env: gym.Env, cfg: EnvConfig, fam: EnvFamily, noop_cycle: tuple[int, ...] | None = None) -> gym.Env:
    """The shared preprocessing stack (raylab/envs/wrappers.py has the order and the reasons); observations of
    any space but a Box are first encoded into a flat float32 Box (raylab/envs/spaces.py). ``noop_cycle``:
    the no-op starts this env takes in turn (eval.starts=every), instead of drawing them."""
    env = as_float32(encoded(env, cfg.id))
    frames = not fam.native_frames  # EnvPool's Atari does noop starts, skip, gray, resize and stack in C++
    if cfg.noop_max and frames:
        env = NoopReset(env, cfg.noop_max, fam.noop_action, cycle=noop_cycle)
    if cfg.frame_skip > 1 and frames:
        env = MaxPoolFrameSkip(env, cfg.frame_skip)
    if cfg.max_episode_steps is not None and not fam.native_time_limit:
        env = gym.wrappers.TimeLimit(env, cfg.max_episode_steps)
    env = EpisodeStatistics(env, fam.episode_extras)
    if (cfg.grayscale or cfg.resize is not None) and frames:
        try:
            env = GrayResize(env, cfg.grayscale, cfg.resize)
        except ValueError:
            raise ConfigError(
                f"env.grayscale/env.resize need (H, W[, C]) uint8 image observations but {cfg.id} gives "
                f"{env.observation_space}: set env.grayscale=false and env.resize=null"
            ) from None
    if cfg.frame_stack > 1 and frames:
        env = FrameStack(env, cfg.frame_stack)
    if cfg.normalize_reward:
        env = gym.wrappers.NormalizeReward(
            env, gamma=0.99 if cfg.normalize_reward_gamma is None else cfg.normalize_reward_gamma
        )
    if cfg.reward_clip is not None or cfg.reward_scale != 1.0:
        env = RewardTransform(env, cfg.reward_clip, cfg.reward_scale)
    if isinstance(env.action_space, gym.spaces.Box):  # the Gaussian policy samples unbounded actions
        env = gym.wrappers.ClipAction(env)
    return env


def make_env(cfg: EnvConfig, seed: int, worker_index: int = 0) -> gym.Env:
    """One preprocessed env of ``cfg``'s family, reset once with seed ``seed + worker_index``."""
    fam = family(cfg)
    env = wrap(fam.make_raw(cfg), cfg, fam)
    env.reset(seed=seed + worker_index)
    return env


def make_render_env(cfg: EnvConfig, seed: int, worker_index: int = 0) -> gym.Env:
    """Like ``make_env``, but ``render()`` gives the raw game's RGB frame after each step."""
    fam = family(cfg)
    env = wrap(fam.make_render(cfg), cfg, fam)
    env.reset(seed=seed + worker_index)
    return env


def make_vector_env(
    cfg: EnvConfig, num_envs: int, seed: int, worker_index: int = 0, every_start: bool = False
) -> VectorEnv:
    """``num_envs`` envs of ``cfg`` stepped as a batch (native batching where the family has it).

    ``every_start`` (eval.starts=every): the envs share out the no-op starts 0..env.noop_max, env ``i`` taking
    ``i, i + num_envs, ...`` in turn (``start_cycles``), instead of each drawing its own at random."""
    fam = family(cfg)
    first = seed + worker_index * num_envs
    name = f"{cfg.family} env of worker {worker_index}"
    if every_start:
        check_every_start(cfg, num_envs)
        cycles: list[tuple[int, ...] | None] = list(start_cycles(cfg.noop_max, num_envs))
    else:
        cycles = [None] * num_envs
        native = fam.make_vector(cfg, num_envs, first, name)
        if native is not None:
            return native

    def build(cycle: tuple[int, ...] | None) -> gym.Env:
        return wrap(fam.make_raw(cfg), cfg, fam, noop_cycle=cycle)

    return SerialVectorEnv([partial(build, c) for c in cycles], [first + i for i in range(num_envs)], name=name)


def start_cycles(noop_max: int, num_envs: int) -> list[tuple[int, ...]]:
    """The no-op starts 0..noop_max shared out over ``num_envs`` envs (at most noop_max + 1): env ``i`` takes
    ``i, i + num_envs, ...``."""
    return [tuple(range(i, noop_max + 1, num_envs)) for i in range(num_envs)]


def check_every_start(cfg: EnvConfig, num_envs: int | None = None) -> None:
    """ConfigError naming the fix where evaluation cannot play every no-op start of ``cfg`` in turn."""
    fam = family(cfg)
    if fam.native_frames or fam.batched or fam.multi_agent or fam.vector_only(cfg):
        raise ConfigError(
            f"eval.starts=every plays each no-op start in turn, and env={cfg.family} draws its starts itself "
            f"(or has none): set eval.starts=random"
        )
    if not cfg.noop_max:
        raise ConfigError(
            "eval.starts=every plays each of env.noop_max + 1 no-op starts in turn, and env.noop_max=0 gives one: "
            "set eval.starts=random, or env.noop_max=30"
        )
    if num_envs is not None and num_envs > cfg.noop_max + 1:
        raise ConfigError(f"{num_envs} evaluation envs share {cfg.noop_max + 1} no-op starts: use at most that many")


def env_spaces(cfg: EnvConfig) -> EnvSpaces:
    """Describe the preprocessed observation and action spaces of ``cfg`` (builds one env and closes it); for a
    multi-agent env, those of one agent, and how many agents (slots) one env holds; agents that differ in spaces:
    each space group's (``EnvSpaces.groups``)."""
    fam = family(cfg)
    agents, agent_ids = 1, cast(tuple[str, ...], ())
    groups: tuple[EnvSpaces, ...] = ()
    if fam.multi_agent or fam.vector_only(cfg):
        venv = make_vector_env(cfg, 1, seed=0)
        obs_space, act_space = venv.single_observation_space, venv.single_action_space
        if fam.multi_agent:
            agents = venv.num_envs
            agent_ids = tuple(str(a) for a in getattr(venv, "agents", [f"agent_{i}" for i in range(agents)]))
            if space_group_count(venv) > 1:
                groups = tuple(
                    dataclasses.replace(
                        _spaces(cfg, g.observation_space, g.action_space, tuple(agent_ids[a] for a in g.agents)),
                        obs_parts=g.obs_parts,
                    )
                    for g in venv.groups  # type: ignore[attr-defined]
                )
        venv.close()
        parts: tuple[ObsPart, ...] = ()
        if fam.multi_agent and not groups and getattr(venv, "groups", None):
            parts = venv.groups[0].obs_parts  # type: ignore[attr-defined]  # one group: every agent's
    else:
        env = make_env(cfg, seed=0)
        try:
            obs_space, act_space, parts = env.observation_space, env.action_space, obs_parts(env)
        finally:
            env.close()
    return dataclasses.replace(_spaces(cfg, obs_space, act_space, agent_ids, agents), groups=groups, obs_parts=parts)


def _spaces(
    cfg: EnvConfig, obs_space: gym.Space, act_space: gym.Space, agent_ids: tuple[str, ...], agents: int | None = None
) -> EnvSpaces:
    """EnvSpaces of agents ``agent_ids`` (``agents`` slots per env; default one per id, or 1) acting in these spaces;
    ConfigError naming the fix for spaces raylab's models do not take."""
    if not isinstance(obs_space, gym.spaces.Box):
        raise ConfigError(
            f"{cfg.id} has {obs_space} observations; raylab's models take array (Box) observations: "
            f"choose an env with Box observations"
        )
    assert obs_space.dtype is not None
    num_actions = int(act_space.n) if isinstance(act_space, gym.spaces.Discrete) else None
    action_dim = None
    bounds = None
    nvec: tuple[int, ...] | None = None
    if isinstance(act_space, gym.spaces.Box):
        if len(act_space.shape) != 1:
            raise ConfigError(
                f"{cfg.id} has {act_space} actions; raylab's Gaussian policy takes one-dimensional Box actions: "
                f"flatten the action space in your env"
            )
        action_dim = int(act_space.shape[0])
        bounds = (tuple(float(x) for x in act_space.low), tuple(float(x) for x in act_space.high))
    elif isinstance(act_space, gym.spaces.MultiDiscrete | gym.spaces.MultiBinary):
        nvec = _action_nvec(cfg, act_space)
    elif num_actions is None:
        raise ConfigError(
            f"{cfg.id} has {act_space} actions; raylab acts in Discrete, MultiDiscrete, MultiBinary or "
            f"one-dimensional Box action spaces: choose an env with one of those"
        )
    return EnvSpaces(
        obs_shape=tuple(obs_space.shape),
        obs_dtype=np.dtype(obs_space.dtype),
        num_actions=num_actions,
        action_space=repr(act_space),
        frames_per_step=cfg.frame_skip,
        action_dim=action_dim,
        agents=agents if agents is not None else max(len(agent_ids), 1),
        agent_ids=agent_ids,
        action_bounds=bounds,
        action_nvec=nvec,
    )


def _action_nvec(cfg: EnvConfig, space: gym.spaces.MultiDiscrete | gym.spaces.MultiBinary) -> tuple[int, ...]:
    """The categories of each entry of a one-dimensional MultiDiscrete (starting at 0) or MultiBinary action."""
    if len(space.shape) != 1 or (
        isinstance(space, gym.spaces.MultiDiscrete) and np.any(np.asarray(getattr(space, "start", 0)) != 0)
    ):
        raise ConfigError(
            f"{cfg.id} has {space} actions; raylab acts in one-dimensional MultiDiscrete (starting at 0) and "
            f"MultiBinary spaces: flatten the action space in your env, or shift it to start at 0"
        )
    if isinstance(space, gym.spaces.MultiBinary):
        return (2,) * int(space.shape[0])
    return tuple(int(n) for n in space.nvec)

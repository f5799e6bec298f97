"""One ``make_env(cfg, seed, worker_index)`` for every env family, and the checks behind ``env.*`` keys.

A family knows how to build its raw env, check its options, and (optionally) build a natively batched
vector env; everything else — frame skip, grayscale, resize, frame stack, reward transform, time limit,
episode statistics, no-op starts — is the same wrapper stack for all (raylab/envs/wrappers.py). The table at
the bottom lists the families explicitly; optional packages (nes-py, EnvPool) are imported only when their
family builds an env, and a missing one is a one-line error naming the install command.

Seeds: env i of worker w plays ``seed + w * num_envs + i``, so every env of every worker has its own stream
and a run is reproducible from ``seed``.
"""

from __future__ import annotations

import dataclasses
import difflib
import importlib.util
import inspect
from collections.abc import Callable
from typing import Any, ClassVar, cast

import gymnasium as gym
import numpy as np

from raylab import user_code
from raylab.envs import classic_pool, mario, multiagent, procgen
from raylab.envs.config import EnvConfig
from raylab.envs.fake import FakeEnv
from raylab.envs.gym_vector import GymVectorEnv
from raylab.envs.snake import SnakeEnv
from raylab.envs.snake_arena import SnakeArena
from raylab.envs.vector import SerialVectorEnv, VectorEnv
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
from raylab.types import EnvSpaces  # its old home: imports of raylab.envs.registry.EnvSpaces keep working

EVAL_WORKER_INDEX = 1_000_003
"""Worker index of evaluation envs: their seeds never collide with a rollout worker's."""


class EnvFamily:
    """Base family: subclasses set ``name`` and implement ``make_raw``; the rest has sensible defaults."""

    name: ClassVar[str] = ""
    episode_extras: ClassVar[tuple[str, ...]] = ()
    """info keys whose final value describes an episode (reported as episode/<key>_mean)."""
    noop_action: ClassVar[int] = 0
    native_time_limit: ClassVar[bool] = False
    """The raw env applies env.max_episode_steps itself (no TimeLimit wrapper)."""
    options: ClassVar[tuple[str, ...]] = ()
    multi_agent: ClassVar[bool] = False
    """Its envs hold several agents: ``make_vector`` gives agent slots (raylab/envs/multiagent.py), and there is
    no single-agent ``make_raw``."""
    batched: ClassVar[bool] = False
    """Its envs only come as a native batch (make_vector), which the single-env wrapper stack does not wrap."""

    def check(self, cfg: EnvConfig) -> None:
        """Raise ConfigError (naming the fix) if ``cfg`` cannot make an env of this family."""
        for key in cfg.options:
            if key not in self.options:
                valid = ", ".join(self.options) or "none"
                raise ConfigError(f"unknown env.options.{key} for env={self.name}: valid options are {valid}")

    def make_raw(self, cfg: EnvConfig) -> gym.Env:
        raise NotImplementedError

    def make_render(self, cfg: EnvConfig) -> gym.Env:
        """The raw env with ``render()`` returning RGB frames (evaluation videos)."""
        return self.make_raw(cfg)

    def make_vector(self, cfg: EnvConfig, num_envs: int, seed: int, name: str) -> VectorEnv | None:
        """A natively batched vector env, or None to step ``num_envs`` wrapped single envs in turn."""
        return None

    def vector_only(self, cfg: EnvConfig) -> bool:
        """True when ``cfg``'s envs come only as a batch (``make_vector``), never one by one (``make_raw``)."""
        return False

    def max_return(self, cfg: EnvConfig) -> float | None:
        """An upper bound on an episode's return, when one is known."""
        return None


class GymnasiumFamily(EnvFamily):
    """Any env registered with gymnasium, by id; ``pkg.module:Id-v0`` imports ``pkg.module`` first (gymnasium's
    own form), in every process that builds the env, so a user's package registers its ids there."""

    name = "gymnasium"
    native_time_limit = True  # env.max_episode_steps replaces the id's registered TimeLimit, not nests inside it
    KNOWN_MAX_RETURN_PER_STEP: ClassVar[dict[str, float]] = {
        "CartPole": 1.0, "Acrobot": 0.0, "MountainCar": 0.0, "Pendulum": 0.0,
    }  # fmt: skip

    def check(self, cfg: EnvConfig) -> None:
        env_id = registered_id(cfg.id)
        if env_id in gym.registry:
            return
        close = difflib.get_close_matches(env_id, list(gym.registry), n=3)
        hint = f"did you mean {' or '.join(close)}?" if close else "see gymnasium.pprint_registry()"
        if env_id != cfg.id:
            hint = f"importing {cfg.id.partition(':')[0]} did not register it ({hint})"
        raise ConfigError(f"unknown env id '{env_id}' for env=gymnasium: {hint} (set env.id=<registered id>)")

    def make_raw(self, cfg: EnvConfig) -> gym.Env:
        kwargs = dict(cfg.options)
        if cfg.max_episode_steps is not None:  # in agent steps; gymnasium's TimeLimit counts frames
            kwargs["max_episode_steps"] = cfg.max_episode_steps * cfg.frame_skip
        env_id = registered_id(cfg.id)
        try:
            return gym.make(env_id, disable_env_checker=True, **kwargs)
        except TypeError as err:
            raise ConfigError(f"{cfg.id} rejected env.options {dict(cfg.options)} ({err}): fix env.options") from err
        except gym.error.DependencyNotInstalled as err:  # Box2D, MuJoCo, ...: gymnasium names the pip install
            extra = " (or: pip install 'raylab[mujoco]')" if "mujoco" in str(err).lower() else ""
            raise ConfigError(f"env.id={cfg.id} in {user_code.where()}: {one_line(err)}{extra}") from None

    def make_render(self, cfg: EnvConfig) -> gym.Env:
        return self.make_raw(dataclasses.replace(cfg, options={**cfg.options, "render_mode": "rgb_array"}))

    def make_vector(self, cfg: EnvConfig, num_envs: int, seed: int, name: str) -> VectorEnv | None:
        if cfg.backend == "envpool":  # the rollout workers' batch; single envs stay gymnasium's
            return classic_pool.ClassicPoolVectorEnv(cfg, num_envs, seed, name=name)
        return None

    def max_return(self, cfg: EnvConfig) -> float | None:
        spec = gym.spec(registered_id(cfg.id))
        per_frame = self.KNOWN_MAX_RETURN_PER_STEP.get(spec.name)
        frames = cfg.max_episode_steps * cfg.frame_skip if cfg.max_episode_steps else spec.max_episode_steps
        if per_frame is None or frames is None:
            return None
        return per_frame * frames


def registered_id(env_id: str) -> str:
    """``pkg.module:Id-v0`` -> "Id-v0", having imported ``pkg.module`` in this process; a plain id as it is."""
    if ":" not in env_id:
        return env_id
    module, name = user_code.split(env_id, "env.id", "mypkg.envs:MyEnv-v0")
    user_code.import_module(module, "env.id")
    return name


def one_line(err: BaseException) -> str:
    return " ".join(str(err).split())[:300]


class CustomFamily(EnvFamily):
    """The user's own env: env.factory names a callable called with env.options as keyword arguments, in every
    process that builds envs (driver, rollout actors, evaluator). A factory of one ``gymnasium.Env`` is called
    once per env; a factory that takes ``num_envs`` returns a ``gymnasium.vector.VectorEnv`` of that many envs,
    called once per worker (raylab/envs/gym_vector.py adapts it)."""

    name = "custom"

    def check(self, cfg: EnvConfig) -> None:
        if not cfg.factory:
            raise ConfigError("env=custom needs env.factory=<package.module:function> returning a gymnasium.Env")
        if self.vector_only(cfg) and (
            cfg.frame_skip != 1 or cfg.frame_stack != 1 or cfg.grayscale or cfg.resize is not None or cfg.noop_max
        ):
            raise ConfigError(
                f"env.factory {cfg.factory} makes a vector env (it takes num_envs), and raylab's frame preprocessing "
                f"wraps single envs: do it inside your vector env, and set env.frame_skip=1, env.frame_stack=1, "
                f"env.grayscale=false, env.resize=null, env.noop_max=0"
            )

    def _factory(self, cfg: EnvConfig) -> Callable[..., Any]:
        return user_code.load_callable(cfg.factory or "", "env.factory", "mypkg.envs:make_env")

    def vector_only(self, cfg: EnvConfig) -> bool:
        try:
            params = inspect.signature(self._factory(cfg)).parameters
        except (TypeError, ValueError):  # a builtin without a signature: a factory of single envs
            return False
        return "num_envs" in params

    def _call(self, cfg: EnvConfig, **extra: Any) -> Any:
        factory = self._factory(cfg)
        try:
            return factory(**extra, **cfg.options)
        except TypeError as err:
            raise ConfigError(
                f"env.factory {cfg.factory} rejected env.options {dict(cfg.options)} ({one_line(err)}): fix env.options"
            ) from None
        except gym.error.DependencyNotInstalled as err:
            raise ConfigError(f"env.factory={cfg.factory} in {user_code.where()}: {one_line(err)}") from None

    def make_raw(self, cfg: EnvConfig) -> gym.Env:
        if self.vector_only(cfg):
            raise ConfigError(
                f"env.factory {cfg.factory} makes vector envs (it takes num_envs), and a video needs one env: "
                f"leave out video=true, or drop num_envs and return one gymnasium.Env per call"
            )
        env = self._call(cfg)
        if isinstance(env, gym.vector.VectorEnv):
            raise ConfigError(
                f"env.factory {cfg.factory} returned a gymnasium VectorEnv of {env.num_envs} envs without taking "
                f"num_envs: add a num_envs parameter (raylab passes topology.envs_per_worker), or return one "
                f"gymnasium.Env per call"
            )
        if not isinstance(env, gym.Env):
            raise ConfigError(
                f"env.factory {cfg.factory} returned a {type(env).__name__}, not a gymnasium.Env: return an env"
            )
        return env  # env.max_episode_steps: the shared stack's TimeLimit, in agent steps

    def make_vector(self, cfg: EnvConfig, num_envs: int, seed: int, name: str) -> VectorEnv | None:
        if not self.vector_only(cfg):
            return None

        def build() -> gym.vector.VectorEnv:
            venv = self._call(cfg, num_envs=num_envs)
            if not isinstance(venv, gym.vector.VectorEnv):
                raise ConfigError(
                    f"env.factory {cfg.factory} takes num_envs but returned a {type(venv).__name__}: return a "
                    f"gymnasium.vector.VectorEnv of num_envs envs (e.g. gymnasium.make_vec), or drop num_envs"
                )
            if venv.num_envs != num_envs:
                raise ConfigError(
                    f"env.factory {cfg.factory} was asked for num_envs={num_envs} and returned a VectorEnv of "
                    f"{venv.num_envs}: build num_envs envs"
                )
            return venv

        return GymVectorEnv(build, seed, cfg.max_episode_steps, cfg.reward_clip, cfg.reward_scale, name=name)


class FakeFamily(EnvFamily):
    """raylab.envs.fake.FakeEnv: plumbing tests and benchmarks, including deliberate crashes."""

    name = "fake"
    options = ("obs_shape", "num_actions", "episode_length", "crash_every", "crash_in", "continuous")

    def make_raw(self, cfg: EnvConfig) -> gym.Env:
        return FakeEnv(**cfg.options)

    def max_return(self, cfg: EnvConfig) -> float | None:
        length = int(cfg.options.get("episode_length", 20))
        if cfg.max_episode_steps is not None:
            length = min(length, cfg.max_episode_steps)
        return float(length)


class SnakeFamily(EnvFamily):
    """raylab.envs.snake.SnakeEnv (env.id Snake-v0)."""

    name = "snake"
    episode_extras = ("snake_length", "score")
    options = (
        "dim", "start_length", "border", "food_reward", "death_penalty", "step_reward", "hunger_limit", "observation",
    )  # fmt: skip

    def check(self, cfg: EnvConfig) -> None:
        super().check(cfg)
        if cfg.id != "Snake-v0":
            raise ConfigError(f"unknown Snake env id '{cfg.id}': the only one is Snake-v0 (set env.id=Snake-v0)")
        try:
            SnakeEnv(**cfg.options)
        except (ValueError, TypeError) as err:
            raise ConfigError(f"bad env.options for env=snake: {err}") from err

    def make_raw(self, cfg: EnvConfig) -> gym.Env:
        return SnakeEnv(render_mode="rgb_array", **cfg.options)


class MarioFamily(EnvFamily):
    """Super Mario Bros through nes-py (raylab/envs/mario.py); env.id like SuperMarioBros-1-1-v0."""

    name = "mario"
    episode_extras = mario.EPISODE_EXTRAS
    options = ("actions",)

    def check(self, cfg: EnvConfig) -> None:
        super().check(cfg)
        mario.parse_id(cfg.id)
        actions = cfg.options.get("actions", "simple")
        if actions not in mario.ACTION_SETS:
            raise ConfigError(f"unknown env.options.actions '{actions}': choose one of {', '.join(mario.ACTION_SETS)}")
        if importlib.util.find_spec("nes_py") is None or importlib.util.find_spec("gym_super_mario_bros") is None:
            raise ConfigError(f"env=mario needs nes-py and gym-super-mario-bros: {mario.INSTALL_HINT}")

    def make_raw(self, cfg: EnvConfig) -> gym.Env:
        return mario.MarioEnv(cfg.id, actions=cfg.options.get("actions", "simple"), render_mode="rgb_array")


class ProcgenFamily(EnvFamily):
    """The 16 Procgen games through EnvPool (raylab/envs/procgen.py)."""

    name = "procgen"
    batched = True
    noop_action = procgen.NOOP_ACTION
    options = procgen.OPTIONS

    def check(self, cfg: EnvConfig) -> None:
        super().check(cfg)
        procgen.check(cfg)
        if importlib.util.find_spec("envpool") is None:
            raise ConfigError(f"env=procgen needs EnvPool: {procgen.INSTALL_HINT}")

    def make_raw(self, cfg: EnvConfig) -> gym.Env:
        return procgen.ProcgenEnv(cfg, render_mode="rgb_array")

    def make_vector(self, cfg: EnvConfig, num_envs: int, seed: int, name: str) -> VectorEnv | None:
        return procgen.EnvPoolVectorEnv(cfg, num_envs, seed, name=name)

    def max_return(self, cfg: EnvConfig) -> float | None:
        return 10.0 if procgen.envpool_id(cfg).startswith("Coinrun") else None


class MultiAgentFamily(EnvFamily):
    """Envs of several agents, as agent slots (one policy for all: parameter sharing). Of the shared
    preprocessing they take env.reward_clip, env.reward_scale (per agent) and env.max_episode_steps."""

    multi_agent = True

    def check(self, cfg: EnvConfig) -> None:
        if self.options:  # pettingzoo: env.options are its parallel_env's keyword arguments, checked by calling it
            super().check(cfg)
        if cfg.frame_skip != 1 or cfg.frame_stack != 1 or cfg.grayscale or cfg.resize is not None or cfg.noop_max:
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

    def check(self, cfg: EnvConfig) -> None:
        super().check(cfg)
        env = multiagent.make_parallel_env(cfg.id, cfg.options)
        try:
            multiagent.agent_spaces(env, cfg.id, cfg.pad_observations)
        finally:
            env.close()

    def make_vector(self, cfg: EnvConfig, num_envs: int, seed: int, name: str) -> VectorEnv | None:
        def build() -> Any:
            return multiagent.make_parallel_env(cfg.id, cfg.options)

        return multiagent.ParallelSlots(
            [build] * num_envs, [seed + i for i in range(num_envs)], cfg.id, cfg.max_episode_steps,
            cfg.reward_clip, cfg.reward_scale, name=name, pad_observations=cfg.pad_observations,
        )  # fmt: skip


FAMILIES: dict[str, EnvFamily] = {
    f.name: f
    for f in (
        GymnasiumFamily(), CustomFamily(), MarioFamily(), ProcgenFamily(), SnakeFamily(), SnakeArenaFamily(),
        PettingZooFamily(), FakeFamily(),
    )
}  # fmt: skip


def family(cfg: EnvConfig) -> EnvFamily:
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


def wrap(env: gym.Env, cfg: EnvConfig, fam: EnvFamily) -> gym.Env:
    """The shared preprocessing stack (raylab/envs/wrappers.py has the order and the reasons)."""
    env = as_float32(env)
    if cfg.noop_max:
        env = NoopReset(env, cfg.noop_max, fam.noop_action)
    if cfg.frame_skip > 1:
        env = MaxPoolFrameSkip(env, cfg.frame_skip)
    if cfg.max_episode_steps is not None and not fam.native_time_limit:
        env = gym.wrappers.TimeLimit(env, cfg.max_episode_steps)
    env = EpisodeStatistics(env, fam.episode_extras)
    if cfg.grayscale or cfg.resize is not None:
        try:
            env = GrayResize(env, cfg.grayscale, cfg.resize)
        except ValueError:
            raise ConfigError(
                f"env.grayscale/env.resize need (H, W[, C]) uint8 image observations but {cfg.id} gives "
                f"{env.observation_space}: set env.grayscale=false and env.resize=null"
            ) from None
    if cfg.frame_stack > 1:
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


def make_vector_env(cfg: EnvConfig, num_envs: int, seed: int, worker_index: int = 0) -> VectorEnv:
    """``num_envs`` envs of ``cfg`` stepped as a batch (native batching where the family has it)."""
    fam = family(cfg)
    first = seed + worker_index * num_envs
    name = f"{cfg.family} env of worker {worker_index}"
    native = fam.make_vector(cfg, num_envs, first, name)
    if native is not None:
        return native

    def build() -> gym.Env:
        return wrap(fam.make_raw(cfg), cfg, fam)

    return SerialVectorEnv([build] * num_envs, [first + i for i in range(num_envs)], name=name)


def env_spaces(cfg: EnvConfig) -> EnvSpaces:
    """Describe the preprocessed observation and action spaces of ``cfg`` (builds one env and closes it); for a
    multi-agent env, those of one agent, and how many agents (slots) one env holds."""
    fam = family(cfg)
    agents, agent_ids = 1, cast(tuple[str, ...], ())
    if fam.multi_agent or fam.vector_only(cfg):
        venv = make_vector_env(cfg, 1, seed=0)
        obs_space, act_space = venv.single_observation_space, venv.single_action_space
        if fam.multi_agent:
            agents = venv.num_envs
            agent_ids = tuple(str(a) for a in getattr(venv, "agents", [f"agent_{i}" for i in range(agents)]))
        venv.close()
    else:
        env = make_env(cfg, seed=0)
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
    action_dim = None
    if isinstance(act_space, gym.spaces.Box):
        if len(act_space.shape) != 1:
            raise ConfigError(
                f"{cfg.id} has {act_space} actions; raylab's Gaussian policy takes one-dimensional Box actions: "
                f"flatten the action space in your env"
            )
        action_dim = int(act_space.shape[0])
    elif num_actions is None:
        raise ConfigError(
            f"{cfg.id} has {act_space} actions; raylab acts in Discrete or one-dimensional Box action spaces: "
            f"choose an env with one of those"
        )
    return EnvSpaces(
        obs_shape=tuple(obs_space.shape),
        obs_dtype=np.dtype(obs_space.dtype),
        num_actions=num_actions,
        action_space=repr(act_space),
        frames_per_step=cfg.frame_skip,
        action_dim=action_dim,
        agents=agents,
        agent_ids=agent_ids,
    )

"""Multi-agent envs as agent slots: PettingZoo's Parallel API behind raylab's VectorEnv contract.

A rollout worker steps a batch of env *slots*. A multi-agent env with A agents fills A of them (slot
``e * A + a`` is agent ``possible_agents[a]`` of env e), so one policy acts for every agent of every env in
one batched call (parameter sharing), and the replay, the learners and every topology see an ordinary
vector env — nothing downstream knows it is multi-agent. ``EnvSpaces.agents`` says how many slots one env
fills; the builders size batches, epsilon ladders and rate limits by slots.

Agents may leave an episode early (PettingZoo removes them from ``env.agents``): that step is the agent's last
transition (terminated, or truncated with its final observation); until its env's episode ends, the slot is
*absent*: it acts but its actions are not sent, and its steps carry no real outcome (reward 0, truncated set,
and flagged in ``restarted`` — the mask every learner already honours for crashed envs, so they never reach
a loss or a target). When every agent has left (or env.max_episode_steps passes), the env resets in the same
step and every slot starts a new episode. Each agent's episode is reported on its own (return, length).

An env that raises in ``step`` is rebuilt and reset on the spot (a fresh seed), as SerialVectorEnv does for
single-agent envs: its agents' partial episodes are dropped, and that step's slots are flagged in
``restarted`` (reward 0, truncated); ten crashes of one env in a row stop the run.

Rewards are clipped/scaled per agent (env.reward_clip, env.reward_scale) after the raw returns are counted.
Agents whose one-dimensional observations differ in size (predators and prey in mpe2.simple_tag_v3) fit one
batch with env.pad_observations: each is zero-padded to the largest, as SuperSuit's pad_observations_v0 does.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym
import numpy as np

from raylab.envs.vector import VectorStep, count_crash, rebuild_env
from raylab.envs.wrappers import float32_box, transform_reward
from raylab.errors import ConfigError

INSTALL_HINT = "pip install 'raylab-actor-learner[multiagent]' (pettingzoo and mpe2)"


def parallel_env_factory(env_id: str) -> Callable[..., Any]:
    """``module.path`` (e.g. mpe2.simple_spread_v3) -> its ``parallel_env`` constructor; ConfigError naming the
    fix when the module is missing or is not a PettingZoo Parallel env."""
    top = env_id.split(".")[0]
    if not env_id or env_id.startswith(".") or importlib.util.find_spec(top) is None:
        hint = INSTALL_HINT if top in ("pettingzoo", "mpe2") else f"pip install the package that provides {top}"
        raise ConfigError(f"env=pettingzoo: no module named {top!r} for env.id={env_id}: {hint}")
    try:
        module = importlib.import_module(env_id)
    except ModuleNotFoundError as err:
        missing = err.name or env_id
        hint = INSTALL_HINT if missing.split(".")[0] in ("pettingzoo", "mpe2", "pygame") else f"pip install {missing}"
        if missing == env_id or env_id.startswith(missing + "."):
            hint = "set env.id=<package.module> of a PettingZoo env, e.g. mpe2.simple_spread_v3"
        raise ConfigError(f"env=pettingzoo: cannot import {env_id} (no module named {missing!r}): {hint}") from None
    except ImportError as err:  # e.g. a PettingZoo family whose optional dependencies are missing
        raise ConfigError(
            f"env=pettingzoo: cannot import {env_id} ({err}): {INSTALL_HINT} or the env's own extra"
        ) from None
    factory = getattr(module, "parallel_env", None)
    if not callable(factory):
        raise ConfigError(
            f"env.id={env_id} has no parallel_env(): raylab takes PettingZoo's Parallel API; set env.id to a module "
            f"with parallel_env (e.g. mpe2.simple_spread_v3), or wrap an AEC env with "
            f"pettingzoo.utils.conversions.aec_to_parallel in env=custom"
        )
    return factory


def make_parallel_env(env_id: str, options: dict[str, Any]) -> Any:
    factory = parallel_env_factory(env_id)
    try:
        env = factory(**options)
    except TypeError as err:
        raise ConfigError(
            f"{env_id}.parallel_env rejected env.options {dict(options)} ({err}): fix env.options"
        ) from None
    for attr in ("possible_agents", "reset", "step", "observation_space", "action_space"):
        if not hasattr(env, attr):
            raise ConfigError(
                f"{env_id}.parallel_env() returned a {type(env).__name__} without {attr}: not a Parallel env"
            )
    return env


def agent_spaces(env: Any, env_id: str, pad: bool = False) -> tuple[gym.Space, gym.Space]:
    """The one observation and action space every agent shares; ConfigError when agents differ. ``pad``
    (env.pad_observations): one-dimensional Box observations of different sizes share the largest, zero-padded."""
    agents = list(env.possible_agents)
    obs = {a: env.observation_space(a) for a in agents}
    act = {a: env.action_space(a) for a in agents}
    if any(space != act[agents[0]] for space in act.values()):
        differ = ", ".join(f"{a}: {s}" for a, s in act.items())
        raise ConfigError(
            f"{env_id}'s agents differ in action spaces ({differ}); every agent's actions go in one batch: choose "
            f"an env whose agents share one action space"
        )
    if all(space == obs[agents[0]] for space in obs.values()):
        return obs[agents[0]], act[agents[0]]
    differ = ", ".join(f"{a}: {s}" for a, s in obs.items())
    if not pad:
        raise ConfigError(
            f"{env_id}'s agents differ in observation spaces ({differ}): set env.pad_observations=true to zero-pad "
            f"them to the largest (with policies, each policy then sees its own agents' padded vectors), or choose "
            f"an env whose agents share spaces"
        )
    boxes = list(obs.values())
    if not all(isinstance(b, gym.spaces.Box) and len(b.shape) == 1 and b.dtype == boxes[0].dtype for b in boxes):
        raise ConfigError(
            f"env.pad_observations pads one-dimensional Box observations of one dtype, and {env_id}'s are "
            f"{differ}: set env.pad_observations=false and choose an env whose agents share spaces"
        )
    size = max(int(b.shape[0]) for b in boxes)
    low = np.zeros(size, boxes[0].dtype)
    high = np.zeros(size, boxes[0].dtype)
    for b in boxes:
        n = int(b.shape[0])
        low[:n], high[:n] = np.minimum(low[:n], b.low), np.maximum(high[:n], b.high)
    return gym.spaces.Box(low, high, (size,), boxes[0].dtype), act[agents[0]]


class ParallelSlots:
    """``len(env_fns)`` PettingZoo Parallel envs as ``num_envs = envs x agents`` slots (module docstring)."""

    def __init__(
        self,
        env_fns: Sequence[Callable[[], Any]],
        seeds: Sequence[int],
        env_id: str = "pettingzoo",
        max_episode_steps: int | None = None,
        reward_clip: float | None = None,
        reward_scale: float = 1.0,
        name: str = "pettingzoo env",
        pad_observations: bool = False,
    ):
        self.env_fns = list(env_fns)
        self.envs = [fn() for fn in env_fns]
        self._crash_streak = [0] * len(self.envs)
        self.seeds = [int(s) for s in seeds]
        self.agents = list(self.envs[0].possible_agents)
        self.A = len(self.agents)
        self.E = len(self.envs)
        self.num_envs = self.E * self.A
        self.single_observation_space, self.single_action_space = agent_spaces(self.envs[0], env_id, pad_observations)
        self.single_observation_space = float32_box(self.single_observation_space) or self.single_observation_space
        self._dims = [int(np.prod(self.envs[0].observation_space(a).shape)) for a in self.agents]
        """Each agent's own observation size: a padded slot keeps zeros after it."""
        shape, dtype = self.single_observation_space.shape, self.single_observation_space.dtype
        assert shape is not None and dtype is not None
        self.limit, self.clip, self.scale = max_episode_steps, reward_clip, reward_scale
        self.name = name
        self.restarts = 0
        self._obs = np.zeros((self.num_envs, *shape), dtype)
        self._present = np.zeros((self.E, self.A), bool)
        self._return = np.zeros((self.E, self.A))
        self._length = np.zeros((self.E, self.A), np.int64)
        self._steps = np.zeros(self.E, np.int64)
        self._seeded = False

    def reset(self) -> np.ndarray:
        for e in range(self.E):
            self._reset(e, self.seeds[e] if not self._seeded else None)
        self._seeded = True
        return self._obs

    def _crashed(self, e: int, err: Exception) -> None:
        """Env ``e`` raised in ``step``: rebuild it (a fresh seed, so it does not replay into the same crash) and
        reset it, as raylab.envs.vector.SerialVectorEnv does; a deterministic crash stops the run."""
        count_crash(self._crash_streak, e, self.name, err)
        rebuild_env(self, e, "step", err, lambda seed: self._reset(e, seed))

    def _reset(self, e: int, seed: int | None) -> None:
        obs, _ = self.envs[e].reset(seed=seed)
        self._present[e] = [agent in obs for agent in self.agents]
        for a, agent in enumerate(self.agents):
            if agent in obs:
                self._obs[e * self.A + a, : self._dims[a]] = obs[agent]
        self._return[e], self._length[e], self._steps[e] = 0.0, 0, 0

    def step(self, actions: np.ndarray) -> VectorStep:
        A = self.A
        rewards = np.zeros(self.num_envs, np.float32)
        terminated = np.zeros(self.num_envs, bool)
        truncated = np.zeros(self.num_envs, bool)
        absent = np.zeros(self.num_envs, bool)
        final_obs: list[tuple[int, np.ndarray]] = []
        episodes: list[tuple[int, dict[str, float]]] = []
        for e, env in enumerate(self.envs):
            present = self._present[e]
            acting = {agent: actions[e * A + a] for a, agent in enumerate(self.agents) if present[a]}
            try:
                obs, rew, term, trunc, _ = env.step(acting)
            except Exception as err:  # the env crashed: rebuild it, drop its agents' partial episodes
                self._crashed(e, err)
                absent[e * A : (e + 1) * A] = truncated[e * A : (e + 1) * A] = True
                continue
            self._crash_streak[e] = 0
            self._steps[e] += 1
            timeout = self.limit is not None and self._steps[e] >= self.limit
            remaining = set(env.agents)
            for a, agent in enumerate(self.agents):
                slot = e * A + a
                if not present[a]:
                    absent[slot] = truncated[slot] = True
                    continue
                reward = float(rew.get(agent, 0.0))
                rewards[slot] = reward
                self._return[e, a] += reward
                self._length[e, a] += 1
                if agent in obs:
                    self._obs[slot, : self._dims[a]] = obs[agent]
                ends_term = bool(term.get(agent, False))
                ends_trunc = not ends_term and (bool(trunc.get(agent, False)) or timeout or agent not in remaining)
                if ends_term or ends_trunc:
                    terminated[slot], truncated[slot] = ends_term, ends_trunc
                    if ends_trunc:
                        final_obs.append((slot, self._obs[slot].copy()))
                    episodes.append((slot, {"return": float(self._return[e, a]), "length": float(self._length[e, a])}))
                    present[a] = False
            if timeout or not present.any():
                self._reset(e, None)
        rewards = transform_reward(rewards, self.clip, self.scale)
        return VectorStep(
            self._obs, rewards, terminated, truncated, final_obs, episodes, absent if absent.any() else None
        )

    def close(self) -> None:
        for env in self.envs:
            with contextlib.suppress(Exception):
                env.close()

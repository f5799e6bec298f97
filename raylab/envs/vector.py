"""The vector env inside a rollout worker: E envs stepped as one batch, resetting themselves.

Every vector env in raylab keeps one contract (``VectorEnv``): same-step autoreset (after a step that ends an
episode, ``obs`` already holds the next episode's first observation), the last observation of a truncated
episode handed back in ``final_obs``, finished episodes' statistics in ``episodes``, and envs that crashed
rebuilt on the spot and flagged in ``restarted``. ``SerialVectorEnv`` steps single gymnasium envs in turn;
``raylab.envs.procgen.EnvPoolVectorEnv`` adapts EnvPool's native batching to the same contract.

raylab owns this class rather than using gymnasium's SyncVectorEnv because it owns each env: a crashed
emulator is rebuilt on its own without touching the others.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple, Protocol, TypeVar

import gymnasium as gym
import numpy as np

from raylab.envs.wrappers import EPISODE_KEY

log = logging.getLogger(__name__)

MAX_CONSECUTIVE_FAILURES = 3
"""Rebuilds of one env that may fail in a row before the run stops."""
MAX_CRASHING_STEPS = 10
"""Steps in a row one env may crash in (each rebuild succeeding) before the run stops: a deterministic crash
would otherwise drop all of that env's data forever while the run looks alive."""
RESTART_SEED_STRIDE = 1_000_003
T = TypeVar("T")


class VectorStep(NamedTuple):
    """One batched step. ``obs`` is an internal buffer, valid until the next call: copy what you keep."""

    obs: np.ndarray
    rewards: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray
    final_obs: list[tuple[int, np.ndarray]]
    """(env index, last observation) of every episode truncated by this step."""
    episodes: list[tuple[int, dict[str, float]]]
    """(env index, {"return", "length", extras}) of every episode this step ended."""
    restarted: np.ndarray | None
    """None when nothing crashed; else which envs crashed in this step and were rebuilt: their step has no
    real outcome (reward 0, truncated set, no final_obs) and the partial episode is dropped, not reported."""


class VectorEnv(Protocol):
    num_envs: int
    single_observation_space: gym.Space
    single_action_space: gym.Space
    restarts: int
    """Env rebuilds after crashes, since construction (a rebuild whose reset fails and is retried counts again)."""

    def reset(self) -> np.ndarray: ...

    def step(self, actions: np.ndarray) -> VectorStep: ...

    def close(self) -> None: ...


class GroupStep(NamedTuple):
    """``VectorStep`` of an env whose slots form several space groups (agents that differ in observation or
    action spaces, raylab/envs/multiagent.py): ``obs[g]`` is group g's batch, its slots in group order
    (``slot_local``); every other field is over all slots, and ``final_obs`` holds (slot, an observation of
    its group's shape)."""

    obs: tuple[np.ndarray, ...]
    rewards: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray
    final_obs: list[tuple[int, np.ndarray]]
    episodes: list[tuple[int, dict[str, float]]]
    restarted: np.ndarray | None


class GroupedVectorEnv(VectorEnv, Protocol):
    """A vector env whose slots form several space groups: observations and actions travel as one array per
    group, so no agent's are padded to another's. ``reset``/``step`` serve one group only."""

    num_groups: int
    slot_group: np.ndarray
    """[num_envs] the space group of each slot."""
    slot_local: np.ndarray
    """[num_envs] each slot's index among its group's slots."""

    def reset_groups(self) -> tuple[np.ndarray, ...]: ...

    def step_groups(self, actions: Sequence[np.ndarray]) -> GroupStep: ...


def space_group_count(env: Any) -> int:
    """How many space groups ``env``'s slots form (1 for every env but a multi-agent one of differing agents)."""
    return int(getattr(env, "num_groups", 1))


class SerialVectorEnv:
    """Steps ``len(env_fns)`` envs in turn; an env whose episode ends is reset in the same step."""

    def __init__(self, env_fns: Sequence[Callable[[], gym.Env]], seeds: Sequence[int], name: str = "env"):
        if len(env_fns) != len(seeds) or not env_fns:
            raise ValueError("SerialVectorEnv needs one seed per env and at least one env")
        self.env_fns = list(env_fns)
        self.envs = [fn() for fn in env_fns]
        self.seeds = [int(s) for s in seeds]
        self.name = name
        self.num_envs = len(self.envs)
        self.single_observation_space = self.envs[0].observation_space
        self.single_action_space = self.envs[0].action_space
        shape = self.single_observation_space.shape
        dtype = self.single_observation_space.dtype
        assert shape is not None and dtype is not None
        self._obs = np.zeros((self.num_envs, *shape), dtype=dtype)
        self._rewards = np.zeros(self.num_envs, np.float32)
        self._terminated = np.zeros(self.num_envs, bool)
        self._truncated = np.zeros(self.num_envs, bool)
        # fallback statistics for envs without EpisodeStatistics; Python lists: numpy scalar ops cost more here
        self._return = [0.0] * self.num_envs
        self._length = [0] * self.num_envs
        self._crash_streak = [0] * self.num_envs
        self._seeded = False
        self.restarts = 0

    def reset(self) -> np.ndarray:
        """Reset every env (seeded on the first call only, so later resets continue each env's stream)."""
        for i in range(self.num_envs):
            self._obs[i] = self._reset(i, self.seeds[i] if not self._seeded else None)
        self._seeded = True
        return self._obs

    def step(self, actions: np.ndarray) -> VectorStep:
        final_obs: list[tuple[int, np.ndarray]] = []
        episodes: list[tuple[int, dict[str, float]]] = []
        restarted: np.ndarray | None = None
        for i, env in enumerate(self.envs):
            try:
                obs, reward, terminated, truncated, info = env.step(actions[i])
            except Exception as err:  # an emulator or user env crashed: rebuild it, drop the partial episode
                count_crash(self._crash_streak, i, self.name, err)
                self._obs[i] = self._restart(i, "step", err)
                self._rewards[i], self._terminated[i], self._truncated[i] = 0.0, False, True
                if restarted is None:
                    restarted = np.zeros(self.num_envs, bool)
                restarted[i] = True
                continue
            self._crash_streak[i] = 0
            self._rewards[i] = reward
            self._terminated[i] = terminated
            self._truncated[i] = truncated
            self._return[i] += float(reward)
            self._length[i] += 1
            if terminated or truncated:
                if truncated and not terminated:
                    final_obs.append((i, np.array(obs, copy=True)))
                stats = info.get(EPISODE_KEY) or {"return": float(self._return[i]), "length": self._length[i]}
                episodes.append((i, stats))
                obs = self._reset(i, None)
            self._obs[i] = obs
        return VectorStep(self._obs, self._rewards, self._terminated, self._truncated, final_obs, episodes, restarted)

    def _reset(self, i: int, seed: int | None) -> np.ndarray:
        self._return[i], self._length[i] = 0.0, 0
        try:
            obs, _ = self.envs[i].reset(seed=seed)
        except Exception as err:
            return self._restart(i, "reset", err)
        return obs

    def _restart(self, i: int, where: str, err: Exception) -> np.ndarray:
        """Rebuild env ``i`` (a fresh seed, so it does not replay into the same crash) and reset it."""
        obs = rebuild_env(self, i, where, err, lambda seed: self.envs[i].reset(seed=seed)[0])
        self._return[i], self._length[i] = 0.0, 0
        return obs

    def close(self) -> None:
        for env in self.envs:
            env.close()

    def __enter__(self) -> SerialVectorEnv:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def count_crash(streaks: list[int], i: int, name: str, err: Exception) -> None:
    """One more step in a row in which env ``i`` crashed; RuntimeError past MAX_CRASHING_STEPS."""
    streaks[i] += 1
    if streaks[i] > MAX_CRASHING_STEPS:
        raise RuntimeError(
            f"{name} {i} crashed in {MAX_CRASHING_STEPS} steps in a row, each time after a successful rebuild: "
            f"{type(err).__name__}: {err}"
        ) from err


def rebuild_env(owner: Any, i: int, where: str, err: Exception, start: Callable[[int], T]) -> T:
    """Rebuild env ``i`` of ``owner`` (its ``name``, ``envs``, ``env_fns``, ``seeds`` and ``restarts`` count) and
    ``start(seed)`` it with a fresh seed; up to MAX_CONSECUTIVE_FAILURES tries in a row (SerialVectorEnv and
    raylab.envs.multiagent.ParallelSlots)."""
    for attempt in range(1, MAX_CONSECUTIVE_FAILURES + 1):
        owner.restarts += 1
        log.warning(
            "%s %d crashed in %s (%s: %s); rebuilt it (restart %d)",
            owner.name, i, where, type(err).__name__, err, owner.restarts,
        )  # fmt: skip
        with contextlib.suppress(Exception):
            owner.envs[i].close()
        try:
            owner.envs[i] = owner.env_fns[i]()
            return start(owner.seeds[i] + RESTART_SEED_STRIDE * owner.restarts)
        except Exception as again:
            err, where = again, "reset after a restart"
            if attempt == MAX_CONSECUTIVE_FAILURES:
                raise RuntimeError(f"{owner.name} {i} failed {attempt} times in a row: {again}") from again
    raise AssertionError("unreachable")


def rebuild_batch(owner: Any, err: Exception, close: Callable[[], None], start: Callable[[int], None]) -> None:
    """Rebuild a vector env that can only fail as a whole (EnvPoolVectorEnv, GymVectorEnv): ``close()`` the old
    one, ``start(seed)`` a new one with a fresh seed; every env of ``owner`` (its ``name``, ``num_envs``,
    ``seed`` and ``restarts`` count) counts as restarted. Up to MAX_CONSECUTIVE_FAILURES tries in a row."""
    for attempt in range(1, MAX_CONSECUTIVE_FAILURES + 1):
        owner.restarts += owner.num_envs
        log.warning("%s crashed (%s: %s); rebuilding it", owner.name, type(err).__name__, err)
        with contextlib.suppress(Exception):
            close()
        try:
            start(owner.seed + RESTART_SEED_STRIDE * owner.restarts)
            return
        except Exception as again:
            if attempt == MAX_CONSECUTIVE_FAILURES:
                raise RuntimeError(f"{owner.name} failed {attempt} times in a row: {again}") from again
            err = again

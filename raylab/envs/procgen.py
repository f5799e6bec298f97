"""Procgen games through EnvPool 1.2.5 (the ``procgen`` package has no Python 3.11 wheel or sdist).

``env.id`` names the game (``coinrun``, ``CoinRun``) or a full EnvPool id (``CoinrunEasy-v0``);
``env.options`` set ``distribution_mode`` (easy/hard/...), ``num_levels`` (0 = unlimited), ``start_level``
and EnvPool's ``num_threads``. Observations are channel-first uint8 (3, 64, 64). EnvPool seeds at make
time: env i of a pool made with seed s plays seed s + i, which matches raylab's seeding of serial envs.

Inside a rollout worker, ``EnvPoolVectorEnv`` uses EnvPool's native batching and adapts its next-step
autoreset (the step after an episode ends is a reset step with reward 0) to raylab's same-step contract by
immediately stepping just the finished envs once more. ``ProcgenEnv`` is the single-env view that
``make_env`` wraps (gymnasium's env checker, evaluation, the raw-throughput benchmark).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from functools import cache
from typing import Any

import gymnasium as gym
import numpy as np

from raylab.envs.config import EnvConfig
from raylab.envs.vector import VectorStep, rebuild_batch
from raylab.envs.wrappers import transform_reward
from raylab.errors import ConfigError

MODES_BY_GAME: dict[str, tuple[str, ...]] = {
    "bigfish": ("easy", "hard"), "bossfight": ("easy", "hard"),
    "caveflyer": ("easy", "hard", "exploration", "memory"), "chaser": ("easy", "hard", "extreme"),
    "climber": ("easy", "hard", "exploration"), "coinrun": ("easy", "hard", "exploration"),
    "dodgeball": ("easy", "hard", "extreme", "memory"), "fruitbot": ("easy", "hard"),
    "heist": ("easy", "hard", "exploration", "memory"), "jumper": ("easy", "hard", "exploration", "memory"),
    "leaper": ("easy", "hard", "exploration", "extreme"), "maze": ("easy", "hard", "exploration", "memory"),
    "miner": ("easy", "hard", "memory"), "ninja": ("easy", "hard", "exploration"), "plunder": ("easy", "hard"),
    "starpilot": ("easy", "hard", "extreme"),
}  # fmt: skip
"""The Procgen games and distribution modes EnvPool 1.2.5 registers (envpool.list_all_envs())."""
GAMES = tuple(MODES_BY_GAME)
OPTIONS = ("distribution_mode", "num_levels", "start_level", "num_threads")
NOOP_ACTION = 4
INSTALL_HINT = (
    "install the procgen extra: pip install 'raylab-actor-learner[procgen]' "
    "(in a checkout: pip install -e '.[procgen]')"
)
QT_HINT = "EnvPool's Procgen needs Debian's Qt5 runtime: sudo apt-get install -y libqt5gui5 (or: make system-deps)"


def envpool_id(cfg: EnvConfig) -> str:
    """coinrun + distribution_mode=easy -> CoinrunEasy-v0; a full EnvPool id passes through."""
    name = cfg.id.strip().lower()
    mode = str(cfg.options.get("distribution_mode", "easy")).lower()
    for game, modes in MODES_BY_GAME.items():
        for m in modes:
            if name == f"{game}{m}-v0":
                game_name, mode = game, m
                break
        else:
            continue
        break
    else:
        if name not in MODES_BY_GAME:
            raise ConfigError(
                f"unknown Procgen game '{cfg.id}': choose one of {', '.join(GAMES)} (e.g. env.id=coinrun)"
            )
        game_name = name
    if mode not in MODES_BY_GAME[game_name]:
        raise ConfigError(
            f"{game_name} has no distribution_mode '{mode}': choose one of {', '.join(MODES_BY_GAME[game_name])} "
            f"(env.options.distribution_mode)"
        )
    return f"{game_name.capitalize()}{mode.capitalize()}-v0"


def check(cfg: EnvConfig) -> None:
    for key in cfg.options:
        if key not in OPTIONS:
            raise ConfigError(f"unknown env.options.{key} for env=procgen: valid are {', '.join(OPTIONS)}")
    for key in ("num_levels", "start_level", "num_threads"):
        value = cfg.options.get(key, 0)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ConfigError(f"env.options.{key} must be an integer >= 0 for env=procgen (got {value!r})")
    if cfg.frame_skip != 1 or cfg.grayscale or cfg.resize is not None or cfg.noop_max:
        raise ConfigError(
            "env=procgen frames are 64x64 RGB at one frame per step: set env.frame_skip=1, env.grayscale=false, "
            "env.resize=null, env.noop_max=0"
        )
    envpool_id(cfg)


@cache
def envpool_module() -> Any:
    try:
        import envpool
    except ImportError as err:
        raise ConfigError(f"env=procgen needs EnvPool ({err.name} is missing): {INSTALL_HINT}") from err
    return envpool


def make_pool(cfg: EnvConfig, num_envs: int, seed: int) -> Any:
    """An EnvPool of ``num_envs`` Procgen envs seeded ``seed, seed + 1, ...``; one-line errors for what is missing."""
    task = envpool_id(cfg)
    kwargs: dict[str, Any] = {
        "num_levels": int(cfg.options.get("num_levels", 0)),
        "start_level": int(cfg.options.get("start_level", 0)),
        "num_threads": int(cfg.options.get("num_threads", 1)),
    }  # EnvPool 1.2.5 ignores max_episode_steps for Procgen: raylab applies env.max_episode_steps itself
    envpool = envpool_module()
    try:
        return envpool.make(task, env_type="gymnasium", num_envs=num_envs, seed=int(seed) % 2**31, **kwargs)
    except ImportError as err:
        if "Qt" in str(err):
            raise ConfigError(QT_HINT) from err
        raise ConfigError(f"EnvPool cannot load Procgen ({' '.join(str(err).split())[:120]}): {INSTALL_HINT}") from err
    except ValueError as err:
        raise ConfigError(f"EnvPool rejected {task}: {' '.join(str(err).split())[:160]}") from err


def in_env_order(out: tuple) -> tuple:
    """EnvPool returns results tagged with info['env_id']; put the arrays in env order."""
    order = np.argsort(out[-1]["env_id"])
    if np.array_equal(order, np.arange(len(order))):
        return out
    obs, rew, term, trunc, info = out
    info = {k: v[order] if isinstance(v, np.ndarray) else v for k, v in info.items()}
    return obs[order], rew[order], term[order], trunc[order], info


class PoolAdapter:
    """What an adapter of one EnvPool batch (``self.pool``) does the same whatever the game: build the pool of
    ``num_envs`` envs with ``make_pool(cfg, num_envs, seed)`` and keep the fields raylab's VectorEnv contract
    and crash recovery read (``name``, ``seed``, ``restarts``) and each env's episode return and length; when
    the pool fails as a whole, close it and build a new one with a fresh seed, then reset; report the episodes
    that end; close the pool at the end. Subclasses fill ``_obs`` (the batch of observations ``step`` returns)."""

    _obs: np.ndarray

    def __init__(
        self, cfg: EnvConfig, num_envs: int, seed: int, name: str, make_pool: Callable[[EnvConfig, int, int], Any]
    ):
        self.cfg = cfg
        self.num_envs = int(num_envs)
        self.seed = int(seed)
        self.name = name
        self.restarts = 0
        self._make_pool = make_pool
        self.pool = make_pool(cfg, self.num_envs, self.seed)
        self._return = np.zeros(self.num_envs)
        self._length = np.zeros(self.num_envs, np.int64)

    def reset(self) -> np.ndarray:
        raise NotImplementedError

    def _restart(self, err: Exception) -> VectorStep:
        """The pool as a whole failed: rebuild it with a fresh seed and return the step that says so, every env
        restarted (its partial episode dropped)."""

        def start(seed: int) -> None:
            self.pool = self._make_pool(self.cfg, self.num_envs, seed)
            self.reset()

        rebuild_batch(self, err, lambda: self.pool.close(), start)
        everyone = np.ones(self.num_envs, bool)
        return VectorStep(self._obs, np.zeros(self.num_envs, np.float32), ~everyone, everyone, [], [], everyone)

    def _ended(
        self, ids: np.ndarray, term: np.ndarray, trunc: np.ndarray
    ) -> tuple[list[tuple[int, np.ndarray]], list[tuple[int, dict[str, float]]]]:
        """VectorStep's ``final_obs`` (truncated episodes' last observations) and ``episodes`` (raw return and
        length) of the envs ``ids`` whose episodes just ended."""
        final_obs: list[tuple[int, np.ndarray]] = []
        episodes: list[tuple[int, dict[str, float]]] = []
        for i in ids:
            if trunc[i] and not term[i]:
                final_obs.append((int(i), self._obs[i].copy()))
            episodes.append((int(i), {"return": float(self._return[i]), "length": float(self._length[i])}))
        return final_obs, episodes

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.pool.close()


class EnvPoolVectorEnv(PoolAdapter):
    """EnvPool's batch behind raylab's VectorEnv contract, with frame stacking and reward transform built in."""

    def __init__(self, cfg: EnvConfig, num_envs: int, seed: int, name: str = "procgen"):
        super().__init__(cfg, num_envs, seed, name, make_pool)
        frame = self.pool.observation_space
        self._channels = int(frame.shape[0])
        self._k = cfg.frame_stack
        self.single_observation_space: gym.Space = gym.spaces.Box(
            0, 255, (self._k * self._channels, *frame.shape[1:]), np.uint8
        )
        self.single_action_space: gym.Space = self.pool.action_space
        self._obs = np.zeros((self.num_envs, self._k * self._channels, *frame.shape[1:]), np.uint8)
        self._noop = np.full(self.num_envs, NOOP_ACTION)
        self._limit = cfg.max_episode_steps

    def _push(self, ids: np.ndarray | slice, frames: np.ndarray, fill: bool = False) -> None:
        c = self._channels
        if fill:
            self._obs[ids] = np.tile(frames, (1, self._k, 1, 1))
        else:
            self._obs[ids, :-c] = self._obs[ids, c:]
            self._obs[ids, -c:] = frames

    def reset(self) -> np.ndarray:
        obs, info = self.pool.reset()
        order = np.argsort(info["env_id"])
        self._push(slice(None), obs[order], fill=True)
        self._return[:] = 0.0
        self._length[:] = 0
        return self._obs

    def step(self, actions: np.ndarray) -> VectorStep:
        try:
            raw = self.pool.step(np.asarray(actions))
        except Exception as err:
            return self._restart(err)
        obs, rew, term, trunc, _ = in_env_order(raw)
        self._push(slice(None), obs)
        self._return += rew
        self._length += 1
        ended_in_pool = term | trunc  # EnvPool resets these on their next step
        if self._limit is not None:  # env.max_episode_steps, applied here (EnvPool ignores it for Procgen)
            trunc = trunc | ((self._length >= self._limit) & ~term)
        done = term | trunc
        final_obs, episodes = self._ended(np.flatnonzero(done), term, trunc)
        if done.any():
            self._start_episodes(np.flatnonzero(done & ended_in_pool), np.flatnonzero(done & ~ended_in_pool))
        rewards = transform_reward(rew.astype(np.float32), self.cfg.reward_clip, self.cfg.reward_scale)
        return VectorStep(self._obs, rewards, term, trunc, final_obs, episodes, None)

    def _start_episodes(self, after_pool_end: np.ndarray, after_time_limit: np.ndarray) -> None:
        """New episodes for finished envs: EnvPool's own reset step for episodes it ended (reward 0, action
        ignored), an explicit reset for episodes only raylab's time limit ended."""
        for ids, fresh in ((after_pool_end, False), (after_time_limit, True)):
            if not len(ids):
                continue
            if fresh:
                reset_obs, info = self.pool.reset(env_id=ids)
            else:
                reset_obs, *_, info = self.pool.step(self._noop[: len(ids)], env_id=ids)
            order = np.argsort(info["env_id"])
            self._push(ids, reset_obs[order], fill=True)
            self._return[ids] = 0.0
            self._length[ids] = 0


class ProcgenEnv(gym.Env[np.ndarray, np.int64]):
    """One Procgen env as a plain gymnasium.Env (an EnvPool of one), for make_env's wrapper stack."""

    metadata = {"render_modes": ["rgb_array"]}  # noqa: RUF012 - gymnasium's convention

    def __init__(self, cfg: EnvConfig, render_mode: str | None = None):
        self.cfg = cfg
        self.render_mode = render_mode
        self._seed = 0
        self.pool = make_pool(cfg, 1, self._seed)
        self.observation_space = gym.spaces.Box(0, 255, tuple(self.pool.observation_space.shape), np.uint8)
        self.action_space = self.pool.action_space
        self._episode_over = False
        self._frame = np.zeros(self.observation_space.shape, np.uint8)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        if seed is not None:  # gymnasium's contract: the same seed replays the same episode
            self.pool.close()
            self._seed = int(seed)
            self.pool = make_pool(self.cfg, 1, self._seed)
            obs, info = self.pool.reset()
        elif self._episode_over:
            obs, _, _, _, info = self.pool.step(np.array([NOOP_ACTION]))  # EnvPool's reset step
        else:  # first reset, or a reset in the middle of an episode (e.g. raylab's time limit): next level
            obs, info = self.pool.reset()
        self._episode_over = False
        self._frame = obs[0].copy()
        return self._frame, {"level_seed": int(info["level_seed"][0])}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        obs, rew, term, trunc, info = self.pool.step(np.array([int(action)]))
        self._frame = obs[0].copy()
        self._episode_over = bool(term[0] or trunc[0])
        return self._frame, float(rew[0]), bool(term[0]), bool(trunc[0]), {"level_seed": int(info["level_seed"][0])}

    def render(self) -> np.ndarray | None:
        return np.moveaxis(self._frame, 0, -1).copy() if self.render_mode == "rgb_array" else None

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.pool.close()

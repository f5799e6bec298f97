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
import logging
from functools import cache
from typing import Any

import gymnasium as gym
import numpy as np

from raylab.config import EnvConfig
from raylab.envs.vector import VectorStep
from raylab.envs.wrappers import transform_reward
from raylab.errors import ConfigError

log = logging.getLogger(__name__)

GAMES = (
    "bigfish", "bossfight", "caveflyer", "chaser", "climber", "coinrun", "dodgeball", "fruitbot",
    "heist", "jumper", "leaper", "maze", "miner", "ninja", "plunder", "starpilot",
)  # fmt: skip
MODES = ("easy", "hard", "exploration", "memory")
OPTIONS = ("distribution_mode", "num_levels", "start_level", "num_threads")
NOOP_ACTION = 4
INSTALL_HINT = "install the procgen extra: pip install 'raylab[procgen]' (in a checkout: pip install -e '.[procgen]')"
QT_HINT = "EnvPool's Procgen needs Debian's Qt5 runtime: sudo apt-get install -y libqt5gui5 (or: make system-deps)"


def envpool_id(cfg: EnvConfig) -> str:
    """coinrun + distribution_mode=easy -> CoinrunEasy-v0; a full EnvPool id passes through."""
    name = cfg.id.strip()
    mode = str(cfg.options.get("distribution_mode", "easy")).lower()
    for game in GAMES:
        for m in MODES:
            if name.lower() == f"{game}{m}-v0":
                return f"{game.capitalize()}{m.capitalize()}-v0"
    if name.lower() not in GAMES:
        raise ConfigError(f"unknown Procgen game '{cfg.id}': choose one of {', '.join(GAMES)} (e.g. env.id=coinrun)")
    if mode not in MODES:
        raise ConfigError(f"unknown env.options.distribution_mode '{mode}': choose one of {', '.join(MODES)}")
    return f"{name.lower().capitalize()}{mode.capitalize()}-v0"


def check(cfg: EnvConfig) -> None:
    for key in cfg.options:
        if key not in OPTIONS:
            raise ConfigError(f"unknown env.options.{key} for env=procgen: valid are {', '.join(OPTIONS)}")
    if cfg.frame_skip != 1 or cfg.grayscale or cfg.resize is not None:
        raise ConfigError(
            "env=procgen frames are 64x64 RGB at one frame per step: set env.frame_skip=1, env.grayscale=false, "
            "env.resize=null"
        )
    envpool_id(cfg)


@cache
def _envpool() -> Any:
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
    }
    if cfg.max_episode_steps is not None:
        kwargs["max_episode_steps"] = cfg.max_episode_steps
    envpool = _envpool()
    try:
        return envpool.make(task, env_type="gymnasium", num_envs=num_envs, seed=int(seed) % 2**31, **kwargs)
    except ImportError as err:
        if "Qt" in str(err):
            raise ConfigError(QT_HINT) from err
        raise ConfigError(f"EnvPool cannot load Procgen ({' '.join(str(err).split())[:120]}): {INSTALL_HINT}") from err
    except ValueError as err:
        raise ConfigError(f"EnvPool rejected {task}: {' '.join(str(err).split())[:160]}") from err


def _in_env_order(out: tuple, count: int) -> tuple:
    """EnvPool returns results tagged with info['env_id']; put them in env order."""
    order = np.argsort(out[-1]["env_id"][:count])
    if np.array_equal(order, np.arange(len(order))):
        return out
    obs, rew, term, trunc, info = out
    return obs[order], rew[order], term[order], trunc[order], {k: v[order] for k, v in info.items()}


class EnvPoolVectorEnv:
    """EnvPool's batch behind raylab's VectorEnv contract, with frame stacking and reward transform built in."""

    def __init__(self, cfg: EnvConfig, num_envs: int, seed: int, name: str = "procgen"):
        self.cfg = cfg
        self.num_envs = int(num_envs)
        self.seed = int(seed)
        self.name = name
        self.restarts = 0
        self.pool = make_pool(cfg, self.num_envs, self.seed)
        frame = self.pool.observation_space
        self._channels = int(frame.shape[0])
        self._k = cfg.frame_stack
        self.single_observation_space: gym.Space = gym.spaces.Box(
            0, 255, (self._k * self._channels, *frame.shape[1:]), np.uint8
        )
        self.single_action_space: gym.Space = self.pool.action_space
        self._obs = np.zeros((self.num_envs, self._k * self._channels, *frame.shape[1:]), np.uint8)
        self._return = np.zeros(self.num_envs)
        self._length = np.zeros(self.num_envs, np.int64)
        self._noop = np.full(self.num_envs, NOOP_ACTION)

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
            obs, rew, term, trunc, _ = _in_env_order(self.pool.step(np.asarray(actions)), self.num_envs)
        except Exception as err:  # the pool as a whole failed: rebuild it, every partial episode is dropped
            self._restart(err)
            everyone = np.ones(self.num_envs, bool)
            return VectorStep(self._obs, np.zeros(self.num_envs, np.float32), ~everyone, everyone, [], [], everyone)
        self._push(slice(None), obs)
        self._return += rew
        self._length += 1
        done = term | trunc
        final_obs: list[tuple[int, np.ndarray]] = []
        episodes: list[tuple[int, dict[str, float]]] = []
        if done.any():
            ids = np.flatnonzero(done)
            for i in ids:
                if trunc[i] and not term[i]:
                    final_obs.append((int(i), self._obs[i].copy()))
                episodes.append((int(i), {"return": float(self._return[i]), "length": float(self._length[i])}))
            # EnvPool resets an env on the step *after* its episode ended: take that reset step now.
            reset_obs, *_, reset_info = self.pool.step(self._noop[: len(ids)], env_id=ids)
            order = np.argsort(reset_info["env_id"])
            self._push(ids, reset_obs[order], fill=True)
            self._return[ids] = 0.0
            self._length[ids] = 0
        rewards = transform_reward(rew.astype(np.float32), self.cfg.reward_clip, self.cfg.reward_scale)
        return VectorStep(self._obs, rewards, term, trunc, final_obs, episodes, None)

    def _restart(self, err: Exception) -> None:
        self.restarts += self.num_envs
        log.warning("%s pool crashed in step (%s: %s); rebuilt it", self.name, type(err).__name__, err)
        with contextlib.suppress(Exception):
            self.pool.close()
        self.pool = make_pool(self.cfg, self.num_envs, self.seed + 1_000_003 * self.restarts)
        self.reset()

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.pool.close()


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
        self._needs_pool_reset = True
        self._episode_over = False
        self._frame = np.zeros(self.observation_space.shape, np.uint8)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        if seed is not None and seed != self._seed:
            self.pool.close()
            self._seed = int(seed)
            self.pool = make_pool(self.cfg, 1, self._seed)
            self._needs_pool_reset = True
        if self._needs_pool_reset:
            obs, info = self.pool.reset()
            self._needs_pool_reset = False
        elif self._episode_over:
            obs, _, _, _, info = self.pool.step(np.array([NOOP_ACTION]))  # EnvPool's reset step
        else:  # reset in the middle of an episode: start a fresh one
            self.pool.close()
            self.pool = make_pool(self.cfg, 1, self._seed)
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

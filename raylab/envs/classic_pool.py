"""gymnasium's classic-control envs stepped by EnvPool (``env=gymnasium env.backend=envpool``).

EnvPool 1.2.5 carries C++ ports of CartPole-v0/v1, Acrobot-v1, MountainCar-v0 and MountainCarContinuous-v0
with the same dynamics, rewards, terminations and time limits as gymnasium's (tests/envs/test_classic_pool.py
steps both side by side and compares every transition), stepped as one native batch with no Python per env.
Its Pendulum-v1 is not used: it moves the angle differently from gymnasium's once the angular speed reaches its
limit of 8 (found by that test), so ``env.backend=envpool`` refuses it.

Worth it from a few dozen envs per worker: at 8 envs EnvPool's per-call cost makes it slower than raylab's
serial vector env of gymnasium envs (0.77x), at 32 it is 2.05x and at 64 3.10x (benchmarks/envpool_classic.json).

Only the rollout workers' vector envs change. Everything that builds a single env (evaluation,
``raylab.evaluate``, videos, ``env_spaces``) builds gymnasium's, so a policy trained on EnvPool is judged on
the reference implementation. EnvPool's next-step autoreset (the step after an episode ends is a reset step,
its action ignored) is turned into raylab's same-step contract by stepping just the finished envs once more
at once, as raylab/envs/procgen.py does for Procgen.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from raylab.envs.config import EnvConfig
from raylab.envs.procgen import INSTALL_HINT, PoolAdapter, envpool_module, in_env_order
from raylab.envs.vector import VectorStep
from raylab.envs.wrappers import transform_reward
from raylab.errors import ConfigError

IDS = ("CartPole-v0", "CartPole-v1", "Acrobot-v1", "MountainCar-v0", "MountainCarContinuous-v0")
"""gymnasium ids whose EnvPool port raylab uses (the same id in both registries, the same transitions)."""
BACKENDS = ("gymnasium", "envpool")


def check(cfg: EnvConfig) -> None:
    """One-line errors for what env.backend=envpool cannot do."""
    if cfg.family != "gymnasium":
        raise ConfigError(
            f"env.backend=envpool steps gymnasium's classic-control envs, not env={cfg.family}: "
            "set env.backend=gymnasium"
        )
    if cfg.id == "Pendulum-v1":
        raise ConfigError(
            "EnvPool's Pendulum-v1 moves differently from gymnasium's at its speed limit, so env.backend=envpool "
            "does not step it: set env.backend=gymnasium"
        )
    if cfg.id not in IDS:
        raise ConfigError(f"env.backend=envpool has no port of {cfg.id}: use one of {', '.join(IDS)}, or set "
                          "env.backend=gymnasium")  # fmt: skip
    if cfg.options:
        raise ConfigError(
            f"env.options {dict(cfg.options)} are keyword arguments of gymnasium.make, which env.backend=envpool "
            "does not call: remove them or set env.backend=gymnasium"
        )
    if cfg.frame_skip != 1 or cfg.frame_stack != 1 or cfg.noop_max or cfg.grayscale or cfg.resize is not None:
        raise ConfigError(
            "env.backend=envpool steps each env one agent step at a time: set env.frame_skip=1, env.frame_stack=1, "
            "env.noop_max=0, env.grayscale=false, env.resize=null (or env.backend=gymnasium)"
        )
    if cfg.normalize_reward:
        raise ConfigError(
            "env.normalize_reward wraps single envs, and env.backend=envpool steps its envs as one batch: set "
            "env.normalize_reward=false or env.backend=gymnasium"
        )
    try:
        import envpool  # noqa: F401
    except ImportError as err:
        raise ConfigError(f"env.backend=envpool needs EnvPool ({err.name} is missing): {INSTALL_HINT}") from None


def make_pool(cfg: EnvConfig, num_envs: int, seed: int) -> Any:
    """EnvPool's synchronous pool of ``num_envs`` envs of ``cfg.id``, env i seeded ``seed + i``, stepped in one
    thread: EnvPool's default (a thread per core) only moves the work of a rollout actor, which has its core,
    onto threads that compete with the other actors' (measured: the default ran a 2-core run slower)."""
    kwargs: dict[str, Any] = {"num_threads": 1}
    if cfg.max_episode_steps is not None:
        kwargs["max_episode_steps"] = int(cfg.max_episode_steps)
    return envpool_module().make(cfg.id, env_type="gymnasium", num_envs=num_envs, seed=int(seed) % 2**31, **kwargs)


class ClassicPoolVectorEnv(PoolAdapter):
    """EnvPool's batch of one classic-control env behind raylab's VectorEnv contract: same-step autoreset,
    final observations of truncated episodes, raw episode returns, reward clip/scale, Box actions clipped to
    their bounds (as the single-env stack's ClipAction does)."""

    def __init__(self, cfg: EnvConfig, num_envs: int, seed: int, name: str = "envpool"):
        super().__init__(cfg, num_envs, seed, name, make_pool)
        self.single_observation_space: gym.Space = self.pool.observation_space
        self.single_action_space: gym.Space = self.pool.action_space
        self._obs = np.zeros((self.num_envs, *self.single_observation_space.shape), np.float32)
        space = self.single_action_space
        self._box = isinstance(space, gym.spaces.Box)
        self._idle = np.zeros((self.num_envs, *space.shape), space.dtype)
        """Actions for the reset steps (EnvPool ignores them)."""

    def reset(self) -> np.ndarray:
        obs, info = self.pool.reset()
        self._obs[np.asarray(info["env_id"])] = obs
        self._return[:] = 0.0
        self._length[:] = 0
        return self._obs

    def step(self, actions: np.ndarray) -> VectorStep:
        actions = np.asarray(actions)
        if self._box:
            space = self.single_action_space
            assert isinstance(space, gym.spaces.Box)
            actions = np.clip(actions, space.low, space.high).astype(space.dtype, copy=False)
        try:
            obs, rew, term, trunc, _ = in_env_order(self.pool.step(actions))
        except Exception as err:
            return self._restart(err)
        self._obs[:] = obs
        self._return += rew
        self._length += 1
        ids = np.flatnonzero(term | trunc)
        final_obs, episodes = self._ended(ids, term, trunc)
        if len(ids):
            reset_obs, *_, info = self.pool.step(self._idle[: len(ids)], env_id=ids)  # EnvPool's reset step
            self._obs[np.asarray(info["env_id"])] = reset_obs
            self._return[ids] = 0.0
            self._length[ids] = 0
        rewards = transform_reward(rew.astype(np.float32, copy=False), self.cfg.reward_clip, self.cfg.reward_scale)
        return VectorStep(self._obs, rewards, term, trunc, final_obs, episodes, None)

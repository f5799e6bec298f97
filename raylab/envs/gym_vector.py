"""A user's own ``gymnasium.vector.VectorEnv`` (from ``env=custom env.factory=...`` taking ``num_envs``) behind
raylab's VectorEnv contract (raylab/envs/vector.py).

gymnasium's vector envs differ from that contract in one way that matters: by default (``NEXT_STEP``
autoreset) the step after an episode ends is a reset step whose action is ignored. The adapter hands the new
episode's first observation back in the same step instead: envs that ended are reset at once through
``reset(options={"reset_mask": ended})`` (gymnasium >= 1.1's Sync/AsyncVectorEnv take it), which also clears
their pending autoreset. ``SAME_STEP`` envs already return the new observation, with the last one in
``info["final_obs"]``; ``DISABLED`` envs are reset the same way as ``NEXT_STEP`` ones.

Only gymnasium's ``SyncVectorEnv`` and ``AsyncVectorEnv`` are trusted with a masked reset: other vector envs
(``gymnasium.make_vec("CartPole-v1", n)`` gives CartPole's own ``CartPoleVectorEnv``) may reset every env and
silently corrupt the others' episodes, and an ``AsyncVectorEnv(shared_memory=False)`` in ``NEXT_STEP`` mode
keeps its pending autoreset (gymnasium 1.4 clears it only with shared memory). Such an env is refused in one
line unless it needs no masked reset: a ``SAME_STEP`` env with no ``env.max_episode_steps`` on top.

Of the shared preprocessing (raylab/envs/wrappers.py) the adapter applies what applies to a batch: the float32
cast, ``env.max_episode_steps`` (truncation, in agent steps), episode statistics of the raw rewards,
``env.reward_clip`` / ``env.reward_scale``, and clipping Box actions to their bounds. Frame preprocessing
belongs inside the user's vector env (``CustomFamily.check`` refuses it). A step that raises rebuilds the whole
vector env, as ``EnvPoolVectorEnv`` does: each env's partial episode is dropped and flagged in ``restarted``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np

from raylab.envs.vector import MAX_CRASHING_STEPS, VectorStep, rebuild_batch
from raylab.envs.wrappers import float32_box, transform_reward
from raylab.errors import ConfigError


class GymVectorEnv:
    """``build()``'s gymnasium VectorEnv of ``num_envs`` envs, seeded ``seed``, ``seed + 1``, ..."""

    def __init__(
        self,
        build: Callable[[], gym.vector.VectorEnv],
        seed: int,
        max_episode_steps: int | None = None,
        reward_clip: float | None = None,
        reward_scale: float = 1.0,
        name: str = "vector env",
    ):
        self.build, self.seed, self.name = build, int(seed), name
        self.limit, self.clip, self.scale = max_episode_steps, reward_clip, reward_scale
        self.restarts = 0
        self._crash_streak = 0
        self.env = build()
        self.num_envs = int(self.env.num_envs)
        space = self.env.single_observation_space
        self.single_observation_space: gym.Space = float32_box(space) or space
        self.single_action_space: gym.Space = self.env.single_action_space
        self._same_step = self._mode() == gym.vector.AutoresetMode.SAME_STEP
        self._check_masked_reset()
        box = self.single_action_space
        self._bounds = (box.low, box.high) if isinstance(box, gym.spaces.Box) else None
        shape, dtype = self.single_observation_space.shape, self.single_observation_space.dtype
        assert shape is not None and dtype is not None
        self._obs = np.zeros((self.num_envs, *shape), dtype)
        self._return = np.zeros(self.num_envs)
        self._length = np.zeros(self.num_envs, np.int64)
        self._seeded = False

    def _mode(self) -> gym.vector.AutoresetMode:
        mode = self.env.metadata.get("autoreset_mode", gym.vector.AutoresetMode.NEXT_STEP)
        return mode if isinstance(mode, gym.vector.AutoresetMode) else gym.vector.AutoresetMode(mode)

    def _check_masked_reset(self) -> None:
        if self._same_step and self.limit is None:
            return  # every episode ends inside the env, which starts the next one itself
        inner = self.env.unwrapped
        mode = self._mode()
        if isinstance(inner, gym.vector.SyncVectorEnv):
            return
        if isinstance(inner, gym.vector.AsyncVectorEnv) and (
            inner.shared_memory or mode != gym.vector.AutoresetMode.NEXT_STEP
        ):
            return
        kind = type(inner).__name__
        fix = (
            "use AsyncVectorEnv(..., shared_memory=True) or autoreset_mode=SAME_STEP"
            if isinstance(inner, gym.vector.AsyncVectorEnv)
            else "build a SyncVectorEnv or AsyncVectorEnv of your envs, e.g. gymnasium.make_vec(id, num_envs, "
            "vectorization_mode='sync'), or give a SAME_STEP vector env and its own time limit "
            "(env.max_episode_steps=null)"
        )
        self.env.close()
        raise ConfigError(
            f"{self.name}: raylab resets the envs whose episodes ended through reset(options={{'reset_mask': ...}}), "
            f"which this {kind} ({mode.value} autoreset) may apply to every env: {fix}"
        )

    def reset(self) -> np.ndarray:
        """Reset every env (seeded on the first call only, so later resets continue each env's stream)."""
        obs, _ = self.env.reset(seed=None if self._seeded else self.seed)
        self._seeded = True
        self._obs[:] = obs
        self._return[:] = 0.0
        self._length[:] = 0
        return self._obs

    def step(self, actions: np.ndarray) -> VectorStep:
        if self._bounds is not None:
            actions = np.clip(actions, *self._bounds)
        try:
            obs, reward, term, trunc, info = self.env.step(actions)
        except Exception as err:  # the user's vector env failed as a whole: rebuild it, drop every partial episode
            self._restart(err)
            everyone = np.ones(self.num_envs, bool)
            return VectorStep(self._obs, np.zeros(self.num_envs, np.float32), ~everyone, everyone, [], [], everyone)
        self._crash_streak = 0
        reward = np.asarray(reward, np.float64)
        term, trunc = np.asarray(term, bool), np.asarray(trunc, bool)
        ended_by_env = term | trunc
        self._return += reward
        self._length += 1
        if self.limit is not None:
            trunc = trunc | ((self._length >= self.limit) & ~term)
        done = term | trunc
        final_obs: list[tuple[int, np.ndarray]] = []
        episodes: list[tuple[int, dict[str, float]]] = []
        last = self._last_observations(obs, info, ended_by_env)
        for i in np.flatnonzero(done):
            if trunc[i] and not term[i]:
                final_obs.append((int(i), np.array(last[i], dtype=self._obs.dtype)))
            episodes.append((int(i), {"return": float(self._return[i]), "length": float(self._length[i])}))
        self._obs[:] = obs
        rewards = transform_reward(reward.astype(np.float32), self.clip, self.scale)
        if done.any() and self._start_episodes(done, ended_by_env):
            # this step's outcomes stand (its episodes ended before the reset failed); the unfinished episodes
            # of the other envs are dropped, as after a crash in step
            restarted = ~done
            rewards[restarted] = 0.0
            return VectorStep(self._obs, rewards, term, trunc | restarted, final_obs, episodes, restarted)
        return VectorStep(self._obs, rewards, term, trunc, final_obs, episodes, None)

    def _last_observations(self, obs: Any, info: dict[str, Any], ended_by_env: np.ndarray) -> Any:
        """Each env's observation after this step's action: a SAME_STEP env that ended has already reset and
        keeps the last one in info["final_obs"]."""
        if not (self._same_step and ended_by_env.any()):
            return obs
        last = np.array(obs, copy=True)
        for i in np.flatnonzero(ended_by_env):
            last[i] = info["final_obs"][i]
        return last

    def _start_episodes(self, done: np.ndarray, ended_by_env: np.ndarray) -> bool:
        """New episodes for the envs that ended: a SAME_STEP env that ended by itself already returned its new
        first observation; every other env that ended (NEXT_STEP, DISABLED, or raylab's time limit) is reset.
        True when that reset failed and the whole vector env was rebuilt."""
        fresh = done & ~ended_by_env if self._same_step else done
        self._return[done] = 0.0
        self._length[done] = 0
        if fresh.any():
            try:
                obs, _ = self.env.reset(options={"reset_mask": fresh})
            except Exception as err:  # as a crash in step: rebuild, every env starts a new episode
                self._restart(err)
                return True
            self._obs[fresh] = np.asarray(obs)[fresh]
        return False

    def _restart(self, err: Exception) -> None:
        self._crash_streak += 1
        if self._crash_streak > MAX_CRASHING_STEPS:
            raise RuntimeError(
                f"{self.name} crashed in {MAX_CRASHING_STEPS} steps in a row, each time after a successful rebuild: "
                f"{type(err).__name__}: {err}"
            ) from err

        def start(seed: int) -> None:
            self.env = self.build()
            obs, _ = self.env.reset(seed=seed)
            self._obs[:] = obs
            self._return[:] = 0.0
            self._length[:] = 0

        rebuild_batch(self, err, lambda: self.env.close(), start)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.env.close()

    def __enter__(self) -> GymVectorEnv:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

"""RolloutWorker: steps a vector of envs with a local policy and returns ``steps x envs`` chunks.

Plain Python: the apex_dqn topology wraps it in a Ray actor, the local topology calls it directly.
"""

from __future__ import annotations

import time
from typing import Protocol

import numpy as np

from raylab.envs.vector import VectorEnv
from raylab.metrics.timing import GapTimer, StageTimer
from raylab.types import Chunk, Episodes, RolloutStats, Weights


class Policy(Protocol):
    """What a rollout worker needs from a policy: batched actions and versioned weights."""

    version: int
    last_log_probs: np.ndarray | None
    """Log-probabilities of the actions the last ``act`` returned, for off-policy corrections (APPO's
    V-trace); None for policies without them (epsilon-greedy)."""

    def act(self, obs: np.ndarray) -> np.ndarray: ...

    def set_weights(self, weights: Weights) -> bool: ...


class RolloutWorker:
    """Owns a vector env and a policy; ``sample()`` takes ``rollout_length`` steps of every env."""

    def __init__(
        self, env: VectorEnv, policy: Policy, worker_id: int, rollout_length: int, timer: StageTimer | None = None
    ):
        self.env = env
        self.policy = policy
        self.worker_id = worker_id
        self.rollout_length = rollout_length
        self.timer = timer if timer is not None else StageTimer()
        self._gap = GapTimer()
        """Time between handing back a chunk and being asked for the next one ("wait"): parked by the
        rate limiter, queued behind the driver, or (serial topology) the learner's and other workers' turn;
        weight loads in between are weight_sync, not wait."""
        self._sync_s = 0.0
        self._obs = env.reset().copy()
        self._seq = 0
        self.env_steps = 0

    @property
    def policy_version(self) -> int:
        return self.policy.version

    def set_weights(self, weights: Weights) -> bool:
        """Load newer weights; a no-op (no copy) when ``weights`` is not newer than the policy's."""
        start = time.perf_counter()
        loaded = self.policy.set_weights(weights)
        seconds = time.perf_counter() - start
        self._sync_s += seconds
        self.timer.add("weight_sync", seconds)
        return loaded

    def sample(self) -> tuple[Chunk, RolloutStats]:
        gap, self._sync_s = self._gap.begin() - self._sync_s, 0.0
        self.timer.add("wait", max(gap, 0.0))
        steps, num_envs = self.rollout_length, self.env.num_envs
        obs = np.empty((steps + 1, *self._obs.shape), self._obs.dtype)
        actions = np.empty((steps, num_envs), np.int64)
        rewards = np.empty((steps, num_envs), np.float32)
        terminated = np.empty((steps, num_envs), bool)
        truncated = np.empty((steps, num_envs), bool)
        restarted: np.ndarray | None = None
        log_probs: np.ndarray | None = None
        final_obs: list[np.ndarray] = []
        final_index: list[tuple[int, int]] = []
        episodes: list[dict[str, float]] = []
        obs[0] = self._obs
        version = self.policy.version
        restarts_before = self.env.restarts
        timer = self.timer
        for t in range(steps):
            with timer.stage("inference"):
                actions[t] = self.policy.act(obs[t])
                if self.policy.last_log_probs is not None:
                    if log_probs is None:
                        log_probs = np.empty((steps, num_envs), np.float32)
                    log_probs[t] = self.policy.last_log_probs
            with timer.stage("env"):
                step = self.env.step(actions[t])
            obs[t + 1] = step.obs
            rewards[t] = step.rewards
            terminated[t] = step.terminated
            truncated[t] = step.truncated
            for env_index, last_obs in step.final_obs:
                final_obs.append(last_obs)
                final_index.append((t, env_index))
            if step.episodes:
                episodes.extend(stats for _, stats in step.episodes)
            if step.restarted is not None:
                if restarted is None:
                    restarted = np.zeros((steps, num_envs), bool)
                restarted[t] = step.restarted
        self._obs = obs[steps].copy()
        self.env_steps += steps * num_envs
        shape = self._obs.shape[1:]
        chunk = Chunk(
            obs=obs,
            actions=actions,
            rewards=rewards,
            terminated=terminated,
            truncated=truncated,
            final_obs=np.stack(final_obs) if final_obs else np.zeros((0, *shape), obs.dtype),
            final_index=np.array(final_index, np.int64).reshape(-1, 2),
            policy_version=version,
            worker_id=self.worker_id,
            seq=self._seq,
            restarted=restarted,
            log_probs=log_probs,
        )
        self._seq += 1
        stats = RolloutStats(
            worker_id=self.worker_id,
            num_steps=steps * num_envs,
            policy_version=version,
            episodes=episodes_of(episodes),
            timings=timer.pop(),
            env_restarts=self.env.restarts - restarts_before,
            epsilon=getattr(self.policy, "epsilon", None),
        )
        self._gap.end()
        return chunk, stats


def episodes_of(records: list[dict[str, float]]) -> Episodes:
    """Episode records {"return", "length", extras...} -> an Episodes of arrays (extras every record has)."""
    if not records:
        return Episodes()
    extras = set(records[0]) - {"return", "length"}
    for record in records[1:]:
        extras &= set(record)
    return Episodes(
        returns=np.array([r["return"] for r in records], np.float64),
        lengths=np.array([r["length"] for r in records], np.int64),
        extras={k: np.array([r[k] for r in records], np.float64) for k in sorted(extras)},
    )

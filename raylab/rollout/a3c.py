"""A3CWorker: the a3c topology's self-driven worker. Roll out a segment, compute the actor-critic gradient
locally, push it, go on (plain Python).

One iteration (one "episode" in seed 000's benchmark):

    chunk = RolloutWorker.collect()                # the one rollout path: rollout_length steps with the local
                                                   # weights (or until an episode ends, cut_at_episode_end)
    loss = chunk_loss(model, chunk, ...)           # the math: raylab.algos.a3c.loss
    loss.backward(); clip by global norm; flatten  # on this worker's CPU, one torch thread
    link.push(gradient, version)                   # returns at once
    collect replies: block only while more than pushes_in_flight are outstanding; load the newest weights

The worker never waits for another worker; it waits for the server only when the server is behind. Every
second it spends blocked is counted (``wait``), next to the time spent sending (``push``), stepping envs,
acting and backpropagating, so the scaling benchmark can show where the time goes.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import torch

from raylab.algos.a3c.loss import chunk_loss
from raylab.algos.actor_critic import ActorCriticPolicy
from raylab.envs.vector import VectorEnv
from raylab.metrics.timing import StageTimer
from raylab.models.factory import ActorCritic
from raylab.params.flat import flatten_grads, load_flat
from raylab.params.link import ServerLink, ServerUpdate
from raylab.rollout.worker import RolloutWorker, episodes_of
from raylab.types import Episodes, LearnerStats, RolloutStats

WORKER_STAGES = ("env", "inference", "learn", "push", "wait", "receive", "sync")
"""The stages of a worker's own timeline (its report may add the shards' server_apply and server_queue)."""


@dataclass
class WorkerReport:
    """What one ``run`` call did."""

    worker_id: int
    segments: int
    """Gradients pushed."""
    env_steps: int
    episodes: Episodes
    policy_version_first: int
    policy_version_last: int
    lags: list[int] = field(default_factory=list)
    """Policy lag of every push whose reply arrived in this call (server version before it minus the
    version its gradient was computed on)."""
    timings: dict[str, float] = field(default_factory=dict)
    """Seconds per stage: env, inference, learn (forward + backward + clip), push (send), wait (blocked on
    the server), receive (fetching replies), sync (loading weights), server_apply and server_queue (as the
    shards measured them)."""
    metrics: dict[str, float] = field(default_factory=dict)
    """Mean policy_loss, value_loss, entropy and grad_norm over the call's segments."""
    seconds: float = 0.0
    env_restarts: int = 0

    def rollout_stats(self) -> RolloutStats:
        """What the driver's progress counters take from a rollout."""
        return RolloutStats(
            worker_id=self.worker_id,
            num_steps=self.env_steps,
            policy_version=self.policy_version_last,
            episodes=self.episodes,
            timings=self.timings,
            env_restarts=self.env_restarts,
            lags=self.lags,
        )

    def learner_stats(self) -> LearnerStats:
        """What the driver's progress counters take from a learner: one update per pushed segment."""
        return LearnerStats(
            updates=self.segments,
            samples=self.env_steps,
            version=self.policy_version_last,
            metrics=self.metrics,
            seconds=self.timings.get("learn", 0.0),
        )


class A3CWorker:
    """``policy`` acts and its module is the one trained: built with ``frozen=False``
    (raylab.builders.algorithms), so it keeps its mode and gradients."""

    def __init__(
        self,
        env: VectorEnv,
        policy: ActorCriticPolicy,
        link: ServerLink,
        *,
        worker_id: int,
        rollout_length: int,
        gamma: float,
        value_coef: float,
        entropy_coef: float,
        max_grad_norm: float | None,
        cut_at_episode_end: bool,
        pushes_in_flight: int,
        timer: StageTimer | None = None,
    ):
        self.timer = timer if timer is not None else StageTimer()
        self.rollout = RolloutWorker(
            env, policy, worker_id, rollout_length, timer=self.timer, cut_at_episode_end=cut_at_episode_end
        )
        self.env = env
        self.policy = policy
        self.model: ActorCritic = policy.model
        self.link = link
        self.worker_id = worker_id
        self.gamma = gamma
        self.value_coef = value_coef
        self.entropy_coef = entropy_coef
        self.max_grad_norm = max_grad_norm
        self.pushes_in_flight = pushes_in_flight
        self._lags: list[int] = []

    @property
    def version(self) -> int:
        """The version of the weights the worker acts and computes gradients with (-1: none loaded yet)."""
        return self.policy.version

    @version.setter
    def version(self, version: int) -> None:
        self.policy.version = version

    # -- weights -------------------------------------------------------------------------------------------
    def sync(self) -> int:
        """Load the server's current weights (blocking); returns their version."""
        self._load([self.link.pull()])
        return self.version

    def restart(self) -> int:
        """Start over from the server's current weights: outstanding pushes drained, envs reset, timers and
        lags cleared (benchmarks restart the server from a checkpoint between rows this way)."""
        self._collect(0)
        self.version = -1
        self.rollout.reset()
        self.sync()
        self.timer.pop()
        self._lags = []
        return self.version

    def recover(self) -> int:
        """After the server was restored from a checkpoint: drop the outstanding pushes (their replies are
        lost or stale) and load the restored weights at the next ``run``. Envs go on where they were.
        Returns the pushes dropped."""
        dropped = self.link.discard()
        self.version = -1
        self._lags = []
        return dropped

    def _load(self, updates: list[ServerUpdate]) -> None:
        """Account for every reply; load only the newest weights among them."""
        for update in updates:
            self._lags.append(update.lag)
            self.timer.add("server_apply", update.apply_s)
            self.timer.add("server_queue", update.queue_s)
        newest = max(updates, key=lambda u: u.version, default=None)
        if newest is not None and newest.version > self.version:
            with self.timer.stage("sync"):
                load_flat(self.model, newest.params)
            self.version = newest.version

    def _collect(self, allowed: int) -> None:
        """Load what has arrived; block until at most ``allowed`` pushes are outstanding."""
        while True:
            with self.timer.stage("receive"):
                updates = self.link.poll()
            self._load(updates)
            if self.link.in_flight() <= allowed:
                return
            with self.timer.stage("wait"):
                self.link.wait_oldest()

    def flush(self) -> WorkerReport:
        """Wait for every outstanding push (the end of a run); reports what that took."""
        start = time.perf_counter()
        self._collect(0)
        return self._report(0, 0, [], self.version, [], time.perf_counter() - start, 0)

    # -- the loop ------------------------------------------------------------------------------------------
    def run(self, max_segments: int | None = None, seconds: float | None = None) -> WorkerReport:
        """Segments until ``max_segments`` are pushed or ``seconds`` have passed (at least one segment)."""
        if self.version < 0:
            self.sync()
        start = time.perf_counter()
        first_version = self.version
        segments = env_steps = 0
        episodes: list[dict[str, float]] = []
        metric_rows: list[dict[str, float]] = []
        restarts_before = self.env.restarts
        self._lags = []
        while True:
            steps, row = self._segment(episodes)
            env_steps += steps
            segments += 1
            metric_rows.append(row)
            if max_segments is not None and segments >= max_segments:
                break
            if seconds is not None and time.perf_counter() - start >= seconds:
                break
        restarts = self.env.restarts - restarts_before
        return self._report(
            segments, env_steps, episodes, first_version, metric_rows, time.perf_counter() - start, restarts
        )

    def _report(
        self,
        segments: int,
        env_steps: int,
        episodes: list[dict[str, float]],
        first_version: int,
        metric_rows: list[dict[str, float]],
        seconds: float,
        restarts: int,
    ) -> WorkerReport:
        metrics = {k: float(np.mean([r[k] for r in metric_rows])) for k in metric_rows[0]} if metric_rows else {}
        lags, self._lags = self._lags, []
        return WorkerReport(
            worker_id=self.worker_id,
            segments=segments,
            env_steps=env_steps,
            episodes=episodes_of(episodes),
            policy_version_first=first_version,
            policy_version_last=self.version,
            lags=lags,
            timings=self.timer.pop(),
            metrics=metrics,
            seconds=seconds,
            env_restarts=restarts,
        )

    def _segment(self, episodes: list[dict[str, float]]) -> tuple[int, dict[str, float]]:
        """One segment: act, compute the gradient, push it, collect replies. Returns agent steps taken."""
        rollout = self.rollout.collect()
        episodes.extend(rollout.episodes)
        with self.timer.stage("learn"):
            out = chunk_loss(self.model, rollout.chunk, self.gamma, self.value_coef, self.entropy_coef)
            self.model.zero_grad(set_to_none=True)
            out.loss.backward()
            grad_norm = (
                float(torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.max_grad_norm))
                if self.max_grad_norm is not None
                else 0.0
            )
            grad = flatten_grads(self.model)
        with self.timer.stage("push"):
            self.link.push(grad, self.version)
        self._collect(self.pushes_in_flight)
        row = {
            "policy_loss": float(out.policy_loss.detach()),
            "value_loss": float(out.value_loss.detach()),
            "entropy": float(out.entropy.detach()),
            "grad_norm": grad_norm,
        }
        return rollout.chunk.size, row

"""Asynchronous PPO on Ray: the learner trains on whatever chunks have arrived, never on a round.

    RolloutActor x N --chunk ref--> driver queue --(1..chunks_per_update refs)--> LearnerActor (APPO)
          ^   (each worker always has topology.chunks_in_flight chunks in flight,     |
          |    acting with the newest weights it was handed)                           |
          +-------------------- newest weights ref, on the worker's next chunk <------+
    EvalActor <- weights ref every eval interval (the driver's, raylab.driver.loop)

A worker is never held for the learner except by backpressure (a queue of more than 2 x chunks_per_update
arrived chunks parks it), and the learner never waits for the slowest worker: each call takes what is
queued. V-trace corrects for the policy having moved on; chunks more than algo.max_policy_lag updates old
are dropped by the learner and counted (``learner/dropped_chunks``).

Jobs (raylab.topology.jobs): Rollout done -> queue the chunk, sample again unless the queue is full (then
park the worker); Update (one learner call at a time, submitted whenever chunks are queued) done -> the
published weights go out with the next chunks; a dead learner loses its batch (restarts/lost_chunks).
"""

from __future__ import annotations

from typing import Any

from raylab.driver.loop import Driver
from raylab.topology.jobs import Lane, Rollout, Update
from raylab.topology.rollout_flow import RolloutFlow
from raylab.types import LearnerStats, RolloutStats


class APPOTopology(RolloutFlow):
    def start(self, driver: Driver) -> None:
        self.load_learner(driver)
        self.queues: list[list[Any]] = [[] for _ in self.lanes]
        """Each lane's arrived chunks (refs), oldest first."""
        self.parked: list[int] = []
        self.queue_limit = 2 * self.plan.chunks_per_update
        for _ in range(self.plan.chunks_in_flight):  # >1: each actor's next call already queued
            for i in range(len(self.workers)):
                self.sample(driver, i)

    def sample(self, driver: Driver, worker: int) -> None:
        self.rollout(driver, worker, [lane.weights for lane in self.lanes])

    def room(self) -> bool:
        return all(len(queue) < self.queue_limit for queue in self.queues)

    def step(self, driver: Driver) -> None:
        busy = {job.lane.actor for job in driver.in_flight(Update)}
        for lane, queue in zip(self.lanes, self.queues, strict=True):
            if queue and lane.actor not in busy:
                n = self.plan.chunks_per_update
                batch, queue[:] = queue[:n], queue[n:]
                self.update(driver, lane, *batch)
        while self.parked and self.room():
            self.sample(driver, self.parked.pop(0))

    def arrived(self, driver: Driver, job: Rollout, stats: RolloutStats) -> None:
        self.on_rollout(driver, stats)
        for queue, chunk in zip(self.queues, job.chunks, strict=True):
            queue.append(chunk)
        if self.room():
            self.sample(driver, job.worker)
        else:
            self.parked.append(job.worker)

    def gauges(self, driver: Driver) -> dict[str, float]:
        return {
            "queue/rollouts_in_flight": len(driver.in_flight(Rollout)), "queue/parked_workers": len(self.parked),
            **self.polls.gauges(driver),
        }  # fmt: skip

    def trained(self, driver: Driver, job: Update, stats: LearnerStats) -> None:
        self.on_learner(driver, job.lane, stats)
        if stats.published:
            job.lane.weights, job.lane.version = job.weights, stats.version

    def restored(self, driver: Driver, lane: Lane) -> None:
        lane.weights = lane.learner.get_weights()

    def dropped(self, driver: Driver, job: Update) -> None:
        driver.restarts.lost_chunks += self.plan.chunks_per_update  # the batch it was training on

    def extra(self, driver: Driver, state: dict[str, Any]) -> dict[str, Any]:
        parts = [self.policies.part(state, k) or {} for k in range(len(self.lanes))]
        dropped = int(sum(part.get("dropped_chunks", 0) for part in parts))
        return {**super().extra(driver, state), "appo": {"dropped_chunks": dropped}}

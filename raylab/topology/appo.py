"""Asynchronous PPO on Ray: the learner trains on whatever chunks have arrived, never on a round.

    RolloutActor x N --chunk ref--> driver queue --(1..chunks_per_update refs)--> PPOLearnerActor (APPO)
          ^   (each worker always has one chunk in flight,                            |
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

from raylab.config import APPOConfig, RunConfig
from raylab.driver.loop import Driver
from raylab.driver.resume import ResumeState
from raylab.envs.registry import EnvSpaces
from raylab.topology.jobs import Rollout, RolloutFlow, Update, update_job
from raylab.types import LearnerStats, RolloutStats


class APPOTopology(RolloutFlow):
    def __init__(self, cfg: RunConfig, spaces: EnvSpaces, resume: ResumeState | None = None):
        assert isinstance(cfg.algo, APPOConfig), f"topology=appo got algo={cfg.algo.name}"
        self.cfg, self.spaces, self.resume, self.algo = cfg, spaces, resume, cfg.algo

    def start(self, driver: Driver) -> None:
        self.load_learner(driver)
        self.queue: list[Any] = []
        self.parked: list[int] = []
        self.queue_limit = 2 * self.algo.chunks_per_update
        for i in range(len(self.workers)):
            self.sample(driver, i)

    def sample(self, driver: Driver, worker: int) -> None:
        self.rollout(driver, worker, self.weights)

    def step(self, driver: Driver) -> None:
        if self.queue and not driver.in_flight(Update):
            n = self.algo.chunks_per_update
            batch, self.queue = self.queue[:n], self.queue[n:]
            stats, weights = self.learner.update(batch)
            driver.submit(update_job(self, driver, stats, weights))
            while self.parked and len(self.queue) < self.queue_limit:
                self.sample(driver, self.parked.pop(0))

    def arrived(self, driver: Driver, job: Rollout, stats: RolloutStats) -> None:
        driver.monitor.on_rollout(stats, self.version)
        self.queue.append(job.chunk)
        if len(self.queue) < self.queue_limit:
            self.sample(driver, job.worker)
        else:
            self.parked.append(job.worker)

    def trained(self, driver: Driver, job: Update, stats: LearnerStats) -> None:
        driver.monitor.on_learner(stats)
        if stats.published:
            self.weights, self.version = job.weights, stats.version

    def restored(self, driver: Driver) -> None:
        self.weights = self.learner.weights()

    def dropped(self, driver: Driver, job: Update) -> None:
        driver.restarts.lost_chunks += self.algo.chunks_per_update  # the batch it was training on

    def extra(self, driver: Driver, state: dict[str, Any]) -> dict[str, Any]:
        return {"appo": {"dropped_chunks": int(state.get("dropped_chunks", 0))}}

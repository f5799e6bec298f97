"""Synchronous PPO on Ray: every round, each rollout actor returns one chunk made with the current weights;
the learner trains on all of them and the new weights go out with the next round.

    RolloutActor x N --chunk refs (not fetched by the driver)--> PPOLearnerActor.update(*chunks)
          ^                                                               |
          +---------------- new weights ref, next round <----------------+
    EvalActor <- weights ref every eval interval (runs beside training, never blocks a round)

The driver fetches only each chunk's small RolloutStats and the learner's stats. Weights are put once per
round by the learner's return and passed by ref to every worker.

Jobs (raylab.topology.jobs): Rollout done -> the chunk joins the round; when all N are in, the round is
counted and one Update is submitted; Update done -> the next round, with its weights. A crashed rollout
actor is waited for and samples its chunk again with the round's weights (the round stays whole and
on-policy; its chunk in flight is lost); a crashed learner loses the round and comes back from its latest
periodic checkpoint.
"""

from __future__ import annotations

from typing import Any

from raylab.driver.loop import Driver
from raylab.topology.jobs import Rollout, RolloutFlow, Update, update_job
from raylab.types import LearnerStats, RolloutStats


class PPOTopology(RolloutFlow):
    def start(self, driver: Driver) -> None:
        self.load_learner(driver)
        self.next_round(driver)

    def next_round(self, driver: Driver) -> None:
        self.round: dict[int, tuple[Any, RolloutStats]] = {}
        self.round_weights = self.weights
        for i in range(len(self.workers)):
            self.sample(driver, i)

    def sample(self, driver: Driver, worker: int) -> None:
        self.rollout(driver, worker, self.round_weights)

    def arrived(self, driver: Driver, job: Rollout, stats: RolloutStats) -> None:
        self.round[job.worker] = (job.chunk, stats)

    def step(self, driver: Driver) -> None:
        if len(self.round) < len(self.workers):
            return
        arrived = [self.round[i] for i in range(len(self.workers))]
        for _, stats in arrived:
            driver.monitor.on_rollout(stats, self.version)
        self.round = {}  # in training
        stats_ref, weights = self.learner.update([chunk for chunk, _ in arrived])
        driver.submit(update_job(self, driver, stats_ref, weights))

    def trained(self, driver: Driver, job: Update, stats: LearnerStats) -> None:
        self.version, self.weights = stats.version, job.weights
        driver.monitor.on_learner(stats)
        self.next_round(driver)

    def dropped(self, driver: Driver, job: Update) -> None:
        driver.restarts.lost_chunks += len(self.workers)  # the round it was training on
        self.weights = self.learner.weights()
        self.next_round(driver)

"""Synchronous PPO on Ray: every round, each rollout actor returns one chunk made with the current weights;
the learner trains on all of them and the new weights go out with the next round.

    RolloutActor x N --chunk refs (not fetched by the driver)--> LearnerActor.update(*chunks)
          ^                                                               |
          +---------------- new weights ref, next round <----------------+
    EvalActor <- weights ref every eval interval (runs beside training, never blocks a round)

With several policies (raylab/config/policies.py) each actor returns one chunk per policy and each policy's
learner trains on its chunks of the round; the next round starts when every learner is done.

The driver fetches only each chunk's small RolloutStats and the learner's stats. Weights are put once per
round by the learner's return and passed by ref to every worker.

Jobs (raylab.topology.jobs): Rollout done -> the chunk joins the round; when all N are in, the round is
counted and one Update per policy is submitted; the last Update done -> the next round, with their
weights. A crashed rollout actor is waited for and samples its chunk again with the round's weights (the
round stays whole and on-policy; its chunk in flight is lost); a crashed learner loses its part of the
round and comes back from its latest periodic checkpoint.
"""

from __future__ import annotations

from typing import Any

from raylab.driver.loop import Driver
from raylab.topology.jobs import Rollout, Update
from raylab.topology.rollout_flow import RolloutFlow
from raylab.types import LearnerStats, RolloutStats


class PPOTopology(RolloutFlow):
    weights_before_sampling = True

    def start(self, driver: Driver) -> None:
        self.load_learner(driver)
        self.training: set[int] = set()
        """The lanes whose update of the round is in flight."""
        self.next_round(driver)

    def next_round(self, driver: Driver) -> None:
        self.round: dict[int, tuple[list[Any], RolloutStats]] = {}
        self.round_weights = [lane.weights for lane in self.lanes]
        for i in range(len(self.workers)):
            self.sample(driver, i)

    def sample(self, driver: Driver, worker: int) -> None:
        self.rollout(driver, worker, self.round_weights)

    def arrived(self, driver: Driver, job: Rollout, stats: RolloutStats) -> None:
        self.round[job.worker] = (job.chunks, stats)

    def step(self, driver: Driver) -> None:
        if len(self.round) < len(self.workers) or self.training:
            return
        arrived = [self.round[i] for i in range(len(self.workers))]
        for _, stats in arrived:
            self.on_rollout(driver, stats)
        self.round = {}  # in training
        self.training = set(range(len(self.lanes)))
        for k, lane in enumerate(self.lanes):
            self.update(driver, lane, *[chunks[k] for chunks, _ in arrived])

    def trained(self, driver: Driver, job: Update, stats: LearnerStats) -> None:
        if stats.published:  # a round that made no step (nothing to train on) keeps the weights it had
            job.lane.version, job.lane.weights = stats.version, job.weights
        self.on_learner(driver, job.lane, stats)
        self.lane_done(driver, job)

    def dropped(self, driver: Driver, job: Update) -> None:
        driver.restarts.lost_chunks += len(self.workers)  # its part of the round
        job.lane.weights = job.lane.learner.get_weights()
        self.lane_done(driver, job)

    def lane_done(self, driver: Driver, job: Update) -> None:
        self.training.discard(self.lanes.index(job.lane))
        if not self.training:
            self.next_round(driver)

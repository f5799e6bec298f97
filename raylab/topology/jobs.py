"""The job types the rollout-and-learner topologies share (apex_dqn, ppo, appo), for raylab.driver.loop.

Rollout: a chunk in flight from rollout actor i   done -> flow.arrived     failed -> chunk lost, resampled
                                                                                      once the actor is back
Update:  a learner call in flight                 done -> flow.trained     failed / the learner died
                                                                           -> restored from the latest
                                                                              checkpoint, flow.dropped

A flow (raylab.topology.rollout_flow) has one ``Lane`` per policy of its plan (raylab.plan.PolicyPlan; one
when the run has no ``policies``): a learner actor, its newest weights and version. A Rollout carries one
chunk per lane, and each Update is one lane's (its restarts, restores and lag are that policy's).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from raylab.driver.loop import Call, Driver
from raylab.plan import PolicyPlan
from raylab.types import LearnerStats, RolloutStats


@dataclass
class Lane:
    """One policy's learner side: its plan, its learner actor's client, newest weights (a ref) and version."""

    plan: PolicyPlan
    learner: Any
    weights: Any = None
    version: int = 0

    @property
    def actor(self) -> str:
        return self.plan.actor


class JobsFlow(Protocol):
    """What the jobs call back on their flow (raylab.topology.rollout_flow.RolloutFlow)."""

    workers: list[Any]

    def sample(self, driver: Driver, worker: int) -> None: ...
    def inference_of(self, worker: int, chosen: int | None = None) -> str: ...
    def arrived(self, driver: Driver, job: Rollout, stats: RolloutStats) -> None: ...
    def rollout_lost(self, driver: Driver, worker: int) -> None: ...
    def trained(self, driver: Driver, job: Update, stats: LearnerStats) -> None: ...
    def restore(self, driver: Driver, lane: Lane) -> None: ...
    def dropped(self, driver: Driver, job: Update) -> None: ...


@dataclass
class Rollout(Call):
    flow: JobsFlow
    worker: int
    chunks: list[Any]
    """The chunk's ref, one per policy (``ref`` is the call's small RolloutStats)."""

    def done(self, driver: Driver, stats: RolloutStats) -> None:
        driver.heard(self.kind, self.name, stats.life)
        if stats.inference_life is not None:  # the inference actor's restarts, counted once whoever saw them
            driver.heard("inference", self.flow.inference_of(self.worker, stats.inference_actor), stats.inference_life)
        self.flow.arrived(driver, self, stats)

    def failed(self, driver: Driver, err: BaseException) -> None:
        driver.lost(self.kind, self.name, self.tag, err)
        driver.restarts.lost_chunks += 1
        self.flow.rollout_lost(driver, self.worker)
        flow, worker = self.flow, self.worker
        driver.when_back(flow.workers[worker], self.kind, self.name, lambda: flow.sample(driver, worker))


@dataclass
class Update(Call):
    flow: JobsFlow
    lane: Lane
    weights: Any
    """The ref of the weights the call publishes (holding None unless its stats say ``published``)."""
    priorities: Any = None
    """The ref of the batches' new priorities (Ape-X with a prioritized replay)."""

    def done(self, driver: Driver, stats: LearnerStats) -> None:
        if driver.heard(self.kind, self.name, stats.life):  # it died between calls: this call trained a fresh one
            self.flow.restore(driver, self.lane)
            self.flow.dropped(driver, self)
            return
        self.flow.trained(driver, self, stats)

    def failed(self, driver: Driver, err: BaseException) -> None:
        if driver.lost(self.kind, self.name, self.tag, err):
            self.flow.restore(driver, self.lane)
        self.flow.dropped(driver, self)

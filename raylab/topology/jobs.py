"""The job types the rollout-and-learner topologies share (apex_dqn, ppo, appo), for raylab.driver.loop.

Rollout: a chunk in flight from rollout actor i   done -> flow.arrived     failed -> chunk lost, resampled
                                                                                      once the actor is back
Update:  a learner call in flight                 done -> flow.trained     failed / the learner died
                                                                           -> restored from the latest
                                                                              checkpoint, flow.dropped

A flow has one ``Lane`` per policy of its plan (raylab.plan.PolicyPlan; one when the run has no ``policies``):
a learner actor, its newest weights and version. A Rollout carries one chunk per lane, and each Update is one
lane's (its restarts, restores and lag are that policy's).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from raylab.driver.loop import Call, Driver, Flow
from raylab.plan import PolicyPlan, RolloutPlan
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


class RolloutFlow(Flow):
    """A flow with rollout actors ``workers`` (clients) and one ``Lane`` per policy."""

    workers: list[Any]
    lanes: list[Lane]

    def __init__(self, plan: RolloutPlan):
        self.plan = plan
        self.policies = plan.policies

    @property
    def version(self) -> int:
        """The oldest lane's version (with one policy: the learner's)."""
        return min(lane.version for lane in self.lanes)

    def create(self, driver: Driver) -> dict[str, Any]:
        spawn = driver.backend.spawn
        self.lanes = [Lane(p, spawn(p.learner)) for p in self.policies.plans]
        self.workers = [spawn(spec) for spec in self.plan.workers]
        return {
            **{lane.actor: lane.learner for lane in self.lanes},
            **{f"rollout_{i}": w for i, w in enumerate(self.workers)},
        }

    def load_learner(self, driver: Driver) -> None:
        """A resumed run's learner states; each lane's ``weights``: its learner's."""
        for lane in self.lanes:
            if lane.plan.resumed is not None:
                lane.version = driver.backend.get(lane.learner.load_state_dict(lane.plan.resumed))
            lane.weights = lane.learner.get_weights()

    def eval_weights(self, driver: Driver) -> list[Any]:
        return self.latest_weights(driver)

    def latest_weights(self, driver: Driver) -> list[Any]:
        return [lane.weights for lane in self.lanes]

    def state(self, driver: Driver) -> dict[str, Any] | None:
        """Every learner's state (None while one restarts: no periodic checkpoint then)."""
        refs = [lane.learner.state_dict() for lane in self.lanes]
        states = []
        for ref in refs:
            try:
                states.append(driver.backend.get(ref))
            except driver.backend.ActorDied:
                return None
        return self.policies.pack(states)

    def final_state(self, driver: Driver) -> dict[str, Any]:
        state = self.policies.pack(driver.backend.get([lane.learner.state_dict() for lane in self.lanes]))
        assert state is not None
        return state

    def restore(self, driver: Driver, lane: Lane) -> None:
        """Ray restarted ``lane``'s learner: it resumes from the latest periodic checkpoint, its versions moving
        on past the one it had (blocks meanwhile, seconds)."""
        state = self.policies.part(driver.monitor.latest_learner_state(), self.lanes.index(lane))
        driver.backend.wait_back(lane.learner, f"the {lane.actor}")
        version, life = driver.backend.get(
            [lane.learner.load_state_dict(state, lane.version + 1), lane.learner.get_life()]
        )
        driver.heard("learner", lane.actor, life)
        lane.version = int(version)
        self.restored(driver, lane)

    def extra(self, driver: Driver, state: dict[str, Any]) -> dict[str, Any]:
        """Several policies: each policy's learner restarts (benchmark_metrics.json's ``policies.<name>``)."""
        if not self.policies.several:
            return {}
        actors = driver.restarts.actors
        restarts = {lane.plan.name: actors[lane.actor].deaths if lane.actor in actors else 0 for lane in self.lanes}
        return {"policies": {name: {"learner_restarts": n} for name, n in restarts.items()}}

    def sample(self, driver: Driver, worker: int) -> None:
        """Start worker ``worker``'s next chunk (a Rollout job)."""
        raise NotImplementedError

    def arrived(self, driver: Driver, job: Rollout, stats: RolloutStats) -> None:
        raise NotImplementedError

    def on_rollout(self, driver: Driver, stats: RolloutStats) -> None:
        """Count an arrived chunk, each policy's lag against its own learner's version."""
        versions = [lane.version for lane in self.lanes] if self.policies.several else ()
        driver.monitor.on_rollout(stats, self.version, versions)

    def on_learner(self, driver: Driver, lane: Lane, stats: LearnerStats) -> None:
        driver.monitor.on_learner(stats, lane.plan.reports_as)

    def rollout_lost(self, driver: Driver, worker: int) -> None:
        """Worker ``worker`` died with a chunk in flight (it comes back, then samples again)."""

    def trained(self, driver: Driver, job: Update, stats: LearnerStats) -> None:
        raise NotImplementedError

    def restored(self, driver: Driver, lane: Lane) -> None:
        """``lane``'s learner came back from the latest checkpoint at ``lane.version``."""

    def dropped(self, driver: Driver, job: Update) -> None:
        """A learner call whose work is lost (its learner died)."""

    def rollout(self, driver: Driver, worker: int, weights: list[Any]) -> None:
        """Send worker ``worker`` a sample call (``weights[k]``: lane k's ref, or None when the worker has its
        newest); none once the run is stopping."""
        if driver.stopping:
            return
        *chunks, stats = self.workers[worker].sample(*weights)
        name = f"rollout_{worker}"
        job = Rollout(stats, "rollout", name, driver.restarts.tag(name), flow=self, worker=worker, chunks=chunks)
        driver.submit(job)

    def update(self, driver: Driver, lane: Lane, *parts: Any) -> Update:
        """A learner call of ``lane`` on ``parts`` (chunks, or a replay's batches), submitted."""
        stats, weights, priorities = lane.learner.update(*parts)
        job = Update(stats, "learner", lane.actor, driver.restarts.tag(lane.actor), flow=self, lane=lane,
                     weights=weights, priorities=priorities, drain=True)  # fmt: skip
        driver.submit(job)
        return job


@dataclass
class Rollout(Call):
    flow: RolloutFlow
    worker: int
    chunks: list[Any]
    """The chunk's ref, one per policy (``ref`` is the call's small RolloutStats)."""

    def done(self, driver: Driver, stats: RolloutStats) -> None:
        driver.heard(self.kind, self.name, stats.life)
        self.flow.arrived(driver, self, stats)

    def failed(self, driver: Driver, err: BaseException) -> None:
        driver.lost(self.kind, self.name, self.tag, err)
        driver.restarts.lost_chunks += 1
        self.flow.rollout_lost(driver, self.worker)
        flow, worker = self.flow, self.worker
        driver.when_back(flow.workers[worker], self.kind, self.name, lambda: flow.sample(driver, worker))


@dataclass
class Update(Call):
    flow: RolloutFlow
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

"""The job types the rollout-and-learner topologies share (apex_dqn, ppo, appo), for raylab.driver.loop.

Rollout: a chunk in flight from rollout actor i   done -> flow.arrived     failed -> chunk lost, resampled
                                                                                      once the actor is back
Update:  a learner call in flight                 done -> flow.trained     failed / the learner died
                                                                           -> restored from the latest
                                                                              checkpoint, flow.dropped

A flow has one ``Lane`` per policy (raylab/config/policies.py): a learner actor, its newest weights and
version. With one policy (the common case) there is one lane, named ``learner``; with several, lane k is
``learner_<name>``, a Rollout carries one chunk per lane, and each Update is one lane's (its restarts,
restores and lag are that policy's).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from raylab.config import RunConfig
from raylab.config.policies import policy_config, policy_map
from raylab.driver.loop import Call, Driver, Flow
from raylab.driver.resume import ResumeState, resumed
from raylab.envs.registry import EnvSpaces
from raylab.types import LearnerStats, RolloutStats


@dataclass
class Lane:
    """One policy's learner side: its learner actor (restartable, named ``actor``), newest weights (a ref) and
    version. A run has one lane per policy (raylab/config/policies.py); with one policy, one lane named
    ``learner``."""

    policy: str
    actor: str
    learner: Any
    weights: Any = None
    version: int = 0


class RolloutFlow(Flow):
    """A flow with rollout actors ``workers`` (clients) and one ``Lane`` per policy: its restorable learner,
    newest weights and version. With several policies a worker's sample call returns one chunk per lane."""

    workers: list[Any]
    lanes: list[Lane]

    def __init__(self, cfg: RunConfig, spaces: EnvSpaces, resume: ResumeState | None = None):
        self.cfg, self.spaces, self.resume = cfg, spaces, resume
        self.pmap = policy_map(cfg, spaces)  # a bad mapping fails here, before Ray starts

    @property
    def several(self) -> bool:
        return self.pmap.several

    @property
    def version(self) -> int:
        """The oldest lane's version (with one policy: the learner's)."""
        return min(lane.version for lane in self.lanes)

    def versions(self) -> list[int]:
        return [lane.version for lane in self.lanes]

    def required_cpus(self) -> float:
        names = self.pmap.names if self.several else ()
        learners = sum(policy_config(self.cfg, n).learner.num_cpus for n in names) or self.cfg.learner.num_cpus
        return self.cfg.topology.num_workers * self.cfg.topology.worker_cpus + learners

    def make_learner(self, driver: Driver, policy: str | None) -> Any:
        return driver.backend.ppo_learner(policy)

    def create(self, driver: Driver) -> dict[str, Any]:
        if self.several:
            self.lanes = [Lane(n, f"learner_{n}", self.make_learner(driver, n)) for n in self.pmap.names]
        else:
            self.lanes = [Lane(self.pmap.names[0], "learner", self.make_learner(driver, None))]
        backend, resume = driver.backend, self.resume
        self.workers = [backend.rollout(i, *resumed(resume, i)) for i in range(self.cfg.topology.num_workers)]
        return {
            **{lane.actor: lane.learner for lane in self.lanes},
            **{f"rollout_{i}": w for i, w in enumerate(self.workers)},
        }

    def lane_state(self, state: dict[str, Any] | None, lane: Lane) -> dict[str, Any] | None:
        """``lane``'s part of a checkpoint's learner state (with several policies: ``policies.<name>``)."""
        if state is None or not self.several:
            return state
        return state["policies"].get(lane.policy)

    def load_learner(self, driver: Driver) -> None:
        """A resumed run's learner states; each lane's ``weights``: its learner's."""
        for lane in self.lanes:
            if self.resume is not None:
                lane.version = driver.backend.get(
                    lane.learner.load_state_dict(self.lane_state(self.resume.learner, lane))
                )
            lane.weights = lane.learner.weights()

    def eval_weights(self, driver: Driver) -> Any:
        return self.latest_weights(driver)

    def latest_weights(self, driver: Driver) -> Any:
        """A ref to the newest weights; with several policies, a list of one ref per policy."""
        if self.several:
            return [lane.weights for lane in self.lanes]
        return self.lanes[0].weights

    def state(self, driver: Driver) -> dict[str, Any] | None:
        if not self.several:
            return self.lanes[0].learner.state_dict_or_none()
        parts = {lane.policy: lane.learner.state_dict_or_none() for lane in self.lanes}
        if any(part is None for part in parts.values()):
            return None  # a learner is restarting: no periodic checkpoint now
        return {"policies": parts}

    def final_state(self, driver: Driver) -> dict[str, Any]:
        if not self.several:
            return self.lanes[0].learner.state_dict_blocking()
        return {"policies": {lane.policy: lane.learner.state_dict_blocking() for lane in self.lanes}}

    def restore(self, driver: Driver, lane: Lane) -> None:
        """Ray restarted ``lane``'s learner: it resumes from the latest periodic checkpoint, its versions moving
        on past the one it had (blocks meanwhile, seconds)."""
        state = self.lane_state(driver.monitor.latest_learner_state(), lane)
        version, life = lane.learner.restore_blocking(state, lane.version + 1)
        driver.heard("learner", lane.actor, life)
        lane.version = int(version)
        self.restored(driver, lane)

    def extra(self, driver: Driver, state: dict[str, Any]) -> dict[str, Any]:
        """Several policies: each policy's learner restarts (benchmark_metrics.json's ``policies.<name>``)."""
        if not self.several:
            return {}
        actors = driver.restarts.actors
        return {
            "policies": {
                lane.policy: {"learner_restarts": actors[lane.actor].deaths if lane.actor in actors else 0}
                for lane in self.lanes
            }
        }

    def sample(self, driver: Driver, worker: int) -> None:
        """Start worker ``worker``'s next chunk (a Rollout job)."""
        raise NotImplementedError

    def arrived(self, driver: Driver, job: Rollout, stats: RolloutStats) -> None:
        raise NotImplementedError

    def on_rollout(self, driver: Driver, stats: RolloutStats) -> None:
        """Count an arrived chunk, each policy's lag against its own learner's version."""
        driver.monitor.on_rollout(stats, self.version, self.versions() if self.several else ())

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
        if self.several:
            chunks, stats = self.workers[worker].sample_each(weights)
        else:
            chunk, stats = self.workers[worker].sample(weights[0])
            chunks = [chunk]
        name = f"rollout_{worker}"
        job = Rollout(stats, "rollout", name, driver.restarts.tag(name), flow=self, worker=worker, chunks=chunks)
        driver.submit(job)


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
    """The ref of the weights the call publishes (None unless its stats say ``published``)."""

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


def update_job(flow: RolloutFlow, driver: Driver, lane: Lane, ref: Any, weights: Any) -> Update:
    tag = driver.restarts.tag(lane.actor)
    return Update(ref, "learner", lane.actor, tag, flow=flow, lane=lane, weights=weights, drain=True)

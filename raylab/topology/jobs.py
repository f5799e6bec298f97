"""The job types the rollout-and-learner topologies share (apex_dqn, ppo, appo), for raylab.driver.loop.

Rollout: a chunk in flight from rollout actor i   done -> flow.arrived     failed -> chunk lost, resampled
                                                                                      once the actor is back
Update:  a learner call in flight                 done -> flow.trained     failed / the learner died
                                                                           -> restored from the latest
                                                                              checkpoint, flow.dropped
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from raylab.config import RunConfig
from raylab.driver.loop import Call, Driver, Flow
from raylab.driver.resume import ResumeState, resumed
from raylab.envs.registry import EnvSpaces
from raylab.types import LearnerStats, RolloutStats


class RolloutFlow(Flow):
    """A flow with rollout actors ``workers`` (clients) and a restorable ``learner`` at ``version``, whose
    newest weights are ``weights`` (a ref)."""

    workers: list[Any]
    learner: Any
    weights: Any
    version: int = 0

    def __init__(self, cfg: RunConfig, spaces: EnvSpaces, resume: ResumeState | None = None):
        self.cfg, self.spaces, self.resume = cfg, spaces, resume

    def required_cpus(self) -> float:
        return self.cfg.topology.num_workers * self.cfg.topology.worker_cpus + self.cfg.learner.num_cpus

    def make_learner(self, driver: Driver) -> Any:
        return driver.backend.ppo_learner()

    def create(self, driver: Driver) -> dict[str, Any]:
        self.learner = self.make_learner(driver)
        backend, resume = driver.backend, self.resume
        self.workers = [backend.rollout(i, *resumed(resume, i)) for i in range(self.cfg.topology.num_workers)]
        return {"learner": self.learner, **{f"rollout_{i}": w for i, w in enumerate(self.workers)}}

    def load_learner(self, driver: Driver) -> None:
        """A resumed run's learner state; ``weights``: the learner's."""
        if self.resume is not None:
            self.version = driver.backend.get(self.learner.load_state_dict(self.resume.learner))
        self.weights = self.learner.weights()

    def eval_weights(self, driver: Driver) -> Any:
        return self.weights

    def latest_weights(self, driver: Driver) -> Any:
        return self.weights

    def state(self, driver: Driver) -> dict[str, Any] | None:
        return self.learner.state_dict_or_none()

    def final_state(self, driver: Driver) -> dict[str, Any]:
        return self.learner.state_dict_blocking()

    def sample(self, driver: Driver, worker: int) -> None:
        """Start worker ``worker``'s next chunk (a Rollout job)."""
        raise NotImplementedError

    def arrived(self, driver: Driver, job: Rollout, stats: RolloutStats) -> None:
        raise NotImplementedError

    def rollout_lost(self, driver: Driver, worker: int) -> None:
        """Worker ``worker`` died with a chunk in flight (it comes back, then samples again)."""

    def trained(self, driver: Driver, job: Update, stats: LearnerStats) -> None:
        raise NotImplementedError

    def restored(self, driver: Driver) -> None:
        """The learner came back from the latest checkpoint at ``self.version``."""

    def dropped(self, driver: Driver, job: Update) -> None:
        """A learner call whose work is lost (its learner died)."""

    def rollout(self, driver: Driver, worker: int, weights: Any) -> None:
        """Send worker ``worker`` a sample call (``weights``: a ref, or None when it has the newest); none
        once the run is stopping."""
        if driver.stopping:
            return
        chunk, stats = self.workers[worker].sample(weights)
        name = f"rollout_{worker}"
        job = Rollout(stats, "rollout", name, driver.restarts.tag(name), flow=self, worker=worker, chunk=chunk)
        driver.submit(job)


@dataclass
class Rollout(Call):
    flow: RolloutFlow
    worker: int
    chunk: Any
    """The chunk's ref (``ref`` is its small RolloutStats)."""

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
    weights: Any
    """The ref of the weights the call publishes (None unless its stats say ``published``)."""

    def done(self, driver: Driver, stats: LearnerStats) -> None:
        if driver.heard(self.kind, self.name, stats.life):  # it died between calls: this call trained a fresh one
            self.restore(driver)
            self.flow.dropped(driver, self)
            return
        self.flow.trained(driver, self, stats)

    def failed(self, driver: Driver, err: BaseException) -> None:
        if driver.lost(self.kind, self.name, self.tag, err):
            self.restore(driver)
        self.flow.dropped(driver, self)

    def restore(self, driver: Driver) -> None:
        self.flow.version = driver.restore_learner(self.flow.learner, self.flow.version + 1)
        self.flow.restored(driver)


def update_job(flow: RolloutFlow, driver: Driver, ref: Any, weights: Any) -> Update:
    return Update(ref, "learner", "learner", driver.restarts.tag("learner"), flow=flow, weights=weights, drain=True)

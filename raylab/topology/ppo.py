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

from raylab.config import RunConfig
from raylab.driver.loop import Driver
from raylab.driver.monitor import RunSummary
from raylab.driver.resume import ResumeState, resumed
from raylab.envs.registry import EnvSpaces
from raylab.remote.backend import RayBackend
from raylab.remote.clients import RolloutClient
from raylab.remote.ppo import PPOLearnerClient
from raylab.remote.runtime import learner_gpus
from raylab.topology.jobs import Rollout, RolloutFlow, Update, update_job
from raylab.types import LearnerStats, RolloutStats


class PPOTopology(RolloutFlow):
    def __init__(self, cfg: RunConfig, spaces: EnvSpaces, resume: ResumeState | None = None):
        self.cfg, self.spaces, self.resume = cfg, spaces, resume

    def required_cpus(self) -> float:
        return self.cfg.topology.num_workers * self.cfg.topology.worker_cpus + self.cfg.learner.num_cpus

    def run(self) -> RunSummary:
        return Driver(self.cfg, self.spaces, self, RayBackend(self.cfg, self.spaces), self.resume).run()

    def create(self, driver: Driver) -> dict[str, Any]:
        cfg, spaces = self.cfg, self.spaces
        self.learner = PPOLearnerClient.create(cfg, spaces, learner_gpus(cfg.learner))
        self.workers = [
            RolloutClient.create(cfg, spaces, i, *resumed(self.resume, i)) for i in range(cfg.topology.num_workers)
        ]
        return {"learner": self.learner, **{f"rollout_{i}": w for i, w in enumerate(self.workers)}}

    def start(self, driver: Driver) -> None:
        if self.resume is not None:
            self.version = driver.backend.get(self.learner.load_state_dict(self.resume.learner))
        self.weights = self.learner.weights()
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

    def eval_weights(self, driver: Driver) -> Any:
        return self.weights

    def state(self) -> dict[str, Any] | None:
        return self.learner.state_dict_or_none()

    def latest_weights(self, driver: Driver) -> Any:
        return self.weights

    def final_state(self, driver: Driver) -> dict[str, Any]:
        return self.learner.state_dict_blocking()

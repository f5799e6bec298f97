"""Ape-X DQN on Ray: acting and learning run concurrently, held at a samples-per-insert ratio.

    RolloutActor x N --chunk ref--> driver --add(ref)-------------> ReplayActor x S (shards)
          ^                                                         |  sample_many(B, K) ref  ^
          |                                                         v                         |
          +--- weights ref, only when newer <--- driver <--- LearnerActor.update (K per call)  |
                                                   |         priorities ref (prioritized) ----+
                                     EvalActor <---+ weights ref every eval interval

The driver is the wiring: it holds refs and never the data (a chunk goes rollout -> replay, a batch
replay -> learner through the object store). Each worker has one chunk in flight; the learner has up to
two calls queued so it never idles on a round trip. The limiter (raylab.replay.rate_limiter) parks a
worker whose chunk would put acting too far ahead of learning, and holds learner calls when learning would
run ahead of acting. Weights are put once per published version and passed to a worker only when it is
behind. Worker i writes to shard i % S (its n-step carry and frames stay in one place); learner calls
take turns among the shards, and each call's new priorities go back to the shard its batches came from,
as a ref the driver forwards without fetching.

Jobs (raylab.topology.jobs, apex_jobs): Rollout done -> Add to its shard, sample again or park; ApexUpdate
done -> priorities to the shard, published weights (failed: see apex_jobs); Add done -> replay counts.
"""

from __future__ import annotations

from typing import Any

from raylab.builders import build_rate_limiter, check_replay_fits, replay_snapshots_to_load
from raylab.config import RunConfig
from raylab.driver.loop import Driver
from raylab.driver.resume import ResumeState
from raylab.envs.registry import EnvSpaces
from raylab.errors import ConfigError
from raylab.replay.buffer import ReplayStats
from raylab.topology.apex_jobs import Add, ApexUpdate, ReplayFlow
from raylab.topology.jobs import Lane, Rollout, Update
from raylab.types import LearnerStats, RolloutStats

LEARNER_CALLS_IN_FLIGHT = 2


class ApexDQNTopology(ReplayFlow):
    def __init__(self, cfg: RunConfig, spaces: EnvSpaces, resume: ResumeState | None = None):
        super().__init__(cfg, spaces, resume)
        # validate what can be validated before Ray starts
        self.limiter = build_rate_limiter(cfg, spaces)
        check_replay_fits(cfg, spaces)
        self.snapshots = replay_snapshots_to_load(cfg, spaces, resume)
        if cfg.replay.num_shards > cfg.topology.num_workers:
            raise ConfigError(
                f"replay.num_shards={cfg.replay.num_shards} exceeds topology.num_workers={cfg.topology.num_workers}"
                f" (each worker writes to one shard): set replay.num_shards <= {cfg.topology.num_workers}"
            )

    def make_learner(self, driver: Driver, policy: str | None) -> Any:
        return driver.backend.learner()

    def create(self, driver: Driver) -> dict[str, Any]:
        self.shards = [driver.backend.replay(k) for k in range(self.cfg.replay.num_shards)]
        return {**super().create(driver), **{f"replay_{k}": s for k, s in enumerate(self.shards)}}

    def start(self, driver: Driver) -> None:
        self.load_learner(driver)
        if self.resume is not None:
            self.restore_replay(driver)
        self.lane = self.lanes[0]  # one policy (raylab/config/policies.py refuses several for dqn)
        self.restored(driver, self.lane)
        self.parked: list[int] = []
        self.calls_made = 0
        self.chunk_size = self.cfg.topology.rollout_length * self.spaces.slots(self.cfg.topology.envs_per_worker)
        for i in range(len(self.workers)):
            self.sample(driver, i)

    def sample(self, driver: Driver, worker: int) -> None:
        newer = self.worker_version[worker] < self.published
        self.worker_version[worker] = self.published
        self.rollout(driver, worker, [self.lane.weights if newer else None])

    def may_insert(self, driver: Driver) -> bool:
        return self.limiter.can_insert(self.chunk_size * (len(driver.in_flight(Rollout)) + 1))

    def step(self, driver: Driver) -> None:
        batch, calls = self.cfg.learner.batch_size, self.cfg.learner.updates_per_call
        while len(driver.in_flight(ApexUpdate)) < LEARNER_CALLS_IN_FLIGHT and self.limiter.can_sample(batch * calls):
            self.limiter.record_sample(batch * calls)
            shard = self.calls_made % len(self.shards)  # learner calls take turns among the shards
            shard_tag, tag = driver.restarts.tag(f"replay_{shard}"), driver.restarts.tag("learner")
            stats, weights, priorities = self.lane.learner.update(self.shards[shard].sample_many(batch, calls))
            job = ApexUpdate(stats, "learner", "learner", tag, flow=self, lane=self.lane, weights=weights,
                             priorities=priorities, shard=shard, shard_tag=shard_tag, drain=True)  # fmt: skip
            driver.submit(job)
            self.calls_made += 1
        while self.parked and self.may_insert(driver):
            self.sample(driver, self.parked.pop(0))

    def arrived(self, driver: Driver, job: Rollout, stats: RolloutStats) -> None:
        shard = job.worker % len(self.shards)  # a worker's stream stays on one shard (n-step, frames)
        name = f"replay_{shard}"
        driver.submit(Add(self.shards[shard].add(job.chunks[0]), "replay", name, driver.restarts.tag(name), flow=self))
        self.limiter.record_insert(stats.num_steps)
        self.on_rollout(driver, stats)
        if self.may_insert(driver):
            self.sample(driver, job.worker)
        else:
            self.parked.append(job.worker)

    def rollout_lost(self, driver: Driver, worker: int) -> None:
        self.worker_version[worker] = -1  # the restarted actor needs the weights

    def trained(self, driver: Driver, job: Update, stats: LearnerStats) -> None:
        assert isinstance(job, ApexUpdate)
        self.lane.version = stats.version
        driver.monitor.on_learner(stats)
        if self.cfg.replay.kind == "prioritized":  # sent only now: a call waiting on its argument holds up add()
            self.shards[job.shard].update_priorities(job.priorities)
        if stats.published:  # then job.weights holds Weights, not None
            self.lane.weights, self.published = job.weights, stats.version

    def restored(self, driver: Driver, lane: Lane) -> None:
        """(Re)start from the learner's weights at ``lane.version``: every worker gets them."""
        lane.weights, self.published = lane.learner.weights(), lane.version
        self.worker_version = [-1] * len(self.workers)

    def gauges(self, driver: Driver) -> dict[str, float]:
        return {
            "replay/inserted": self.added, "queue/rollouts_in_flight": len(driver.in_flight(Rollout)),
            "queue/learner_calls": len(driver.in_flight(ApexUpdate)), "queue/parked_workers": len(self.parked),
        }  # fmt: skip

    def latest_weights(self, driver: Driver) -> Any:
        return self.lane.learner.weights()

    def replay_stats(self, driver: Driver) -> ReplayStats | None:
        return ReplayStats.merge([s.stats_blocking() for s in self.shards])

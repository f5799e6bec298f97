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

With several policies (raylab/config/policies.py) each policy has its own replay shards, rate limiter and
learner: a worker's chunk comes back cut per policy, policy k's part goes to its shard ``worker % S`` and its
learner samples only its own shards. A worker is parked while any policy's limiter holds its inserts.

Jobs (raylab.topology.jobs, apex_jobs): Rollout done -> Add to its shard, sample again or park; ApexUpdate
done -> priorities to the shard, published weights (failed: see apex_jobs); Add done -> replay counts.
"""

from __future__ import annotations

from typing import Any

from raylab.driver.loop import Driver
from raylab.plan import RolloutPlan
from raylab.topology.apex_jobs import Add, ApexUpdate, PolicyReplay, ReplayFlow
from raylab.topology.jobs import Lane, Rollout, Update
from raylab.types import LearnerStats, RolloutStats

LEARNER_CALLS_IN_FLIGHT = 2
"""Per learner (policy)."""


class ApexDQNTopology(ReplayFlow):
    def __init__(self, plan: RolloutPlan):
        super().__init__(plan)
        self.replays = [PolicyReplay(p.replay) for p in plan.policies.plans if p.replay is not None]

    def create(self, driver: Driver) -> dict[str, Any]:
        for replay in self.replays:
            replay.shards = [driver.backend.spawn(spec) for spec in replay.plan.shards]
        return {**super().create(driver), **{f"replay_{g}": s for g, s in self.all_shards()}}

    def start(self, driver: Driver) -> None:
        self.load_learner(driver)
        self.restore_replay(driver)
        for lane in self.lanes:
            self.restored(driver, lane)
        self.parked: list[int] = []
        for i in range(len(self.workers)):
            self.sample(driver, i)

    def sample(self, driver: Driver, worker: int) -> None:
        weights = []
        for lane, replay in zip(self.lanes, self.replays, strict=True):
            newer = replay.worker_version[worker] < replay.published
            replay.worker_version[worker] = replay.published
            weights.append(lane.weights if newer else None)
        self.rollout(driver, worker, weights)

    def may_insert(self, driver: Driver) -> bool:
        chunks = len(driver.in_flight(Rollout)) + 1
        return all(r.limiter.can_insert(r.plan.chunk_size * chunks) for r in self.replays)

    def step(self, driver: Driver) -> None:
        batch, calls = self.plan.batch_size, self.plan.updates_per_call
        in_flight = driver.in_flight(ApexUpdate)
        for lane, replay in zip(self.lanes, self.replays, strict=True):
            busy = sum(1 for job in in_flight if job.lane is lane)
            samples = batch * calls * replay.plan.steps_per_item  # R2D2: the trained steps of its sequences
            while busy < LEARNER_CALLS_IN_FLIGHT and replay.limiter.can_sample(samples):
                replay.limiter.record_sample(samples)
                shard = replay.calls_made % len(replay.shards)  # learner calls take turns among the shards
                shard_tag = driver.restarts.tag(f"replay_{replay.index(shard)}")
                stats, weights, priorities = lane.learner.update(
                    replay.shards[shard].sample_many(batch, calls), env_steps=driver.monitor.progress.env_steps
                )
                job = ApexUpdate(stats, "learner", lane.actor, driver.restarts.tag(lane.actor), flow=self, lane=lane,
                                 weights=weights, priorities=priorities, replay=replay, shard=shard,
                                 shard_tag=shard_tag, drain=True)  # fmt: skip
                driver.submit(job)
                replay.calls_made += 1
                busy += 1
        while self.parked and self.may_insert(driver):
            self.sample(driver, self.parked.pop(0))

    def arrived(self, driver: Driver, job: Rollout, stats: RolloutStats) -> None:
        steps = [part.num_steps for part in stats.policies] if stats.policies else [stats.num_steps]
        for replay, chunk, num_steps in zip(self.replays, job.chunks, steps, strict=True):
            shard = job.worker % len(replay.shards)  # a worker's stream stays on one shard (n-step, frames)
            name = f"replay_{replay.index(shard)}"
            add = replay.shards[shard].add(chunk)
            driver.submit(Add(add, "replay", name, driver.restarts.tag(name), flow=self, replay=replay))
            replay.limiter.record_insert(num_steps)
        self.on_rollout(driver, stats)
        if self.may_insert(driver):
            self.sample(driver, job.worker)
        else:
            self.parked.append(job.worker)

    def rollout_lost(self, driver: Driver, worker: int) -> None:
        for replay in self.replays:
            replay.worker_version[worker] = -1  # the restarted actor needs the weights

    def trained(self, driver: Driver, job: Update, stats: LearnerStats) -> None:
        assert isinstance(job, ApexUpdate) and job.replay is not None
        job.lane.version = stats.version
        self.on_learner(driver, job.lane, stats)
        if self.plan.prioritized:  # sent only now: a call waiting on its argument holds up add()
            job.replay.shards[job.shard].update_priorities(job.priorities)
        if stats.published:  # then job.weights holds Weights, not None
            job.lane.weights, job.replay.published = job.weights, stats.version

    def restored(self, driver: Driver, lane: Lane) -> None:
        """(Re)start ``lane`` from its learner's weights at ``lane.version``: every worker gets them."""
        replay = self.replays[self.lanes.index(lane)]
        lane.weights, replay.published = lane.learner.get_weights(), lane.version
        replay.worker_version = [-1] * len(self.workers)

    def gauges(self, driver: Driver) -> dict[str, float]:
        return {
            "replay/inserted": self.added, "queue/rollouts_in_flight": len(driver.in_flight(Rollout)),
            "queue/learner_calls": len(driver.in_flight(ApexUpdate)), "queue/parked_workers": len(self.parked),
            **self.polls.gauges(driver),
        }  # fmt: skip

    def latest_weights(self, driver: Driver) -> list[Any]:
        """The run's policy now, which evaluations score and final.pt keeps: with learner.average_rate the
        learner's average of its weights, else its newest."""
        return [lane.learner.get_eval_weights() for lane in self.lanes]

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
as a ref the driver forwards without fetching. When a greedy evaluation meets stop.mean_return, those
evaluated weights (not the learner's newer ones) are the run's policy: checkpointed and evaluated again, on
fresh episodes, at the end.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass
from pathlib import Path
from typing import cast

import ray
from ray import ObjectRef

from raylab.builders import build_rate_limiter, check_replay_fits, replay_snapshots_to_load
from raylab.config import RunConfig
from raylab.driver.monitor import RunMonitor, RunSummary
from raylab.driver.restarts import Restarts
from raylab.driver.resume import ResumeState, resumed
from raylab.driver.stop import INTERRUPTED, interrupted_reason
from raylab.envs.registry import EnvSpaces
from raylab.errors import ConfigError
from raylab.remote.clients import EvalClient, LearnerClient, ReplayClient, RolloutClient
from raylab.remote.runtime import learner_gpus, placement, run_on_ray, wait_ready
from raylab.replay.buffer import ReplayStats
from raylab.replay.snapshot import snapshot_path
from raylab.types import Chunk, EvalResult, LearnerStats, Priorities, RolloutStats, Weights

LEARNER_CALLS_IN_FLIGHT = 2
WAIT_TIMEOUT_S = 0.1


@dataclass
class _Rollout:
    worker: int
    chunk: ObjectRef[Chunk]
    tag: int
    """raylab.driver.restarts: the worker's newest life the driver had heard from when it sent the call."""


@dataclass
class _Update:
    weights: ObjectRef[Weights | None]
    priorities: ObjectRef[Priorities | None]
    shard: int
    tag: int
    """The learner's tag; ``shard_tag`` the replay shard's (the call's batches came from its sample_many)."""
    shard_tag: int


@dataclass
class _Add:
    shard: int
    tag: int


@dataclass
class _Eval:
    weights: ObjectRef[Weights]


@dataclass
class _Probe:
    worker: int
    """A restarting rollout actor asked whether it is back."""


PROBE_EVERY_S = 0.5


class ApexDQNTopology:
    def __init__(self, cfg: RunConfig, spaces: EnvSpaces, resume: ResumeState | None = None):
        self.cfg = cfg
        self.resume = resume
        self.spaces = spaces
        # validate what can be validated before Ray starts
        self.limiter = build_rate_limiter(cfg)
        check_replay_fits(cfg, spaces)
        self.snapshots = replay_snapshots_to_load(cfg, spaces, resume)
        self._shards: list[ReplayClient] = []
        if cfg.replay.num_shards > cfg.topology.num_workers:
            raise ConfigError(
                f"replay.num_shards={cfg.replay.num_shards} exceeds topology.num_workers={cfg.topology.num_workers}"
                f" (each worker writes to one shard): set replay.num_shards <= {cfg.topology.num_workers}"
            )

    def required_cpus(self) -> float:
        return self.cfg.topology.num_workers * self.cfg.topology.worker_cpus + self.cfg.learner.num_cpus

    def run(self) -> RunSummary:
        return run_on_ray(self.cfg.ray, self.required_cpus(), self._run)

    def _run(self) -> RunSummary:
        snapshot = self._snapshot_replay if self.cfg.checkpoint.replay else None
        with RunMonitor(self.cfg, self.spaces, resume=self.resume, replay_snapshot=snapshot) as monitor:
            return self._drive(monitor)

    def _snapshot_replay(self, checkpoint: Path) -> None:
        """Every replay shard writes its snapshot for ``checkpoint`` (checkpoint.replay)."""
        refs = [s.snapshot(snapshot_path(checkpoint.parent, k, checkpoint.name)) for k, s in enumerate(self._shards)]
        for k, ref in enumerate(refs):
            try:
                ray.get(ref)
            except ray.exceptions.RayActorError:  # restarting: its previous snapshot stays the latest
                print(f"raylab: replay shard {k} is restarting: no snapshot of it with {checkpoint.name}", flush=True)

    def _drive(self, monitor: RunMonitor) -> RunSummary:
        cfg, spaces, limiter = self.cfg, self.spaces, self.limiter
        learner = LearnerClient.create(cfg, spaces, learner_gpus(cfg.learner))
        shards = self._shards = [ReplayClient.create(cfg, spaces, k) for k in range(cfg.replay.num_shards)]
        evaluator = EvalClient.create(cfg, spaces)
        workers = [
            RolloutClient.create(cfg, spaces, i, *resumed(self.resume, i)) for i in range(cfg.topology.num_workers)
        ]
        wait_ready([c.ready() for c in (learner, *shards, evaluator, *workers)], "raylab actors")
        monitor.record_placement(placement({
            "learner": learner.handle, **{f"replay_{k}": s.handle for k, s in enumerate(shards)},
            "eval": evaluator.handle, **{f"rollout_{i}": w.handle for i, w in enumerate(workers)},
        }))  # fmt: skip
        prioritized = cfg.replay.kind == "prioritized"

        batch, calls = cfg.learner.batch_size, cfg.learner.updates_per_call
        chunk_size = cfg.topology.rollout_length * cfg.topology.envs_per_worker
        learner_version = 0
        added = 0
        if self.resume is not None:
            learner_version = ray.get(learner.load_state_dict(self.resume.learner))
            restoring = [(s, path) for s, path in zip(shards, self.snapshots, strict=True) if path is not None]
            added = sum(ray.get([s.restore(path) for s, path in restoring]))
            if restoring:
                limiter.credit_restored(added)
                monitor.replay_size = added
                print(f"raylab: replay restored from its snapshot: {added:,} transitions", flush=True)
        weights_ref, published_version = learner.weights(), learner_version
        worker_version = [-1] * len(workers)
        pending: dict[ObjectRef, _Rollout | _Update | _Add | _Eval | _Probe] = {}
        probe_at: dict[int, float] = {}
        """Restarting rollout actors and when to ask them next whether they are back."""
        parked: list[int] = []
        rollouts_in_flight = learner_calls = calls_made = 0
        eval_in_flight = False
        evaluated_ref = weights_ref
        restarts = Restarts()
        learner_id = learner.handle._actor_id.hex()

        def check_restartable(err: Exception) -> None:
            if cfg.topology.max_actor_restarts == 0:
                raise err

        def restore_learner() -> None:
            """The learner comes back fresh from the latest periodic checkpoint, versions moving on. The
            driver blocks meanwhile (seconds); the rollout actors finish their chunks."""
            nonlocal learner_version, weights_ref, published_version
            learner_version, life = learner.restore_blocking(monitor.latest_learner_state(), learner_version + 1)
            restarts.replied("learner", "learner", life)
            weights_ref, published_version = learner.weights(), learner_version
            worker_version[:] = [-1] * len(workers)

        def submit_rollout(i: int) -> None:
            nonlocal rollouts_in_flight
            newer = worker_version[i] < published_version
            worker_version[i] = published_version
            chunk_ref, stats_ref = workers[i].sample(weights_ref if newer else None)
            pending[stats_ref] = _Rollout(i, chunk_ref, restarts.tag(f"rollout_{i}"))
            rollouts_in_flight += 1

        monitor.start()
        for i in range(len(workers)):
            submit_rollout(i)
        stop: str | None = None
        try:
            while stop is None:
                while learner_calls < LEARNER_CALLS_IN_FLIGHT and limiter.can_sample(batch * calls):
                    limiter.record_sample(batch * calls)
                    shard = calls_made % len(shards)  # learner calls take turns among the shards
                    shard_tag, tag = restarts.tag(f"replay_{shard}"), restarts.tag("learner")
                    stats_ref, new_weights_ref, priorities_ref = learner.update(shards[shard].sample_many(batch, calls))
                    pending[stats_ref] = _Update(new_weights_ref, priorities_ref, shard, tag, shard_tag)
                    learner_calls += 1
                    calls_made += 1
                while parked and limiter.can_insert(chunk_size * (rollouts_in_flight + 1)):
                    submit_rollout(parked.pop(0))
                if not eval_in_flight and monitor.eval_due():
                    monitor.eval_started()
                    eval_ref = evaluator.evaluate(
                        weights_ref, cfg.eval.episodes, cfg.stop.mean_return, cfg.eval.confirm_episodes
                    )
                    pending[eval_ref] = _Eval(weights_ref)
                    eval_in_flight = True

                for i, when in list(probe_at.items()):
                    if time.monotonic() >= when:
                        del probe_at[i]
                        pending[workers[i].life()] = _Probe(i)

                waited = time.perf_counter()
                ready: list[ObjectRef] = []
                if pending:
                    ready, _ = ray.wait(list(pending), num_returns=1, timeout=WAIT_TIMEOUT_S)
                else:  # every rollout actor is restarting and nothing else is in flight
                    time.sleep(WAIT_TIMEOUT_S)
                monitor.add_time("driver/wait_s", time.perf_counter() - waited)
                for ref in ready:
                    job = pending.pop(ref)
                    if isinstance(job, _Rollout):
                        try:
                            stats: RolloutStats = ray.get(ref)
                        except ray.exceptions.RayActorError as err:  # its in-flight chunk is lost
                            check_restartable(err)
                            rollouts_in_flight -= 1
                            restarts.failed("rollout", f"rollout_{job.worker}", job.tag)
                            restarts.lost_chunks += 1
                            worker_version[job.worker] = -1  # the restarted actor needs the weights
                            probe_at[job.worker] = time.monotonic()  # resubmitted once it is back
                            continue
                        restarts.replied("rollout", f"rollout_{job.worker}", stats.life)
                        rollouts_in_flight -= 1
                        shard = job.worker % len(shards)  # a worker's stream stays on one shard (n-step, frames)
                        pending[shards[shard].add(job.chunk)] = _Add(shard, restarts.tag(f"replay_{shard}"))
                        limiter.record_insert(stats.num_steps)
                        monitor.on_rollout(stats, learner_version)
                        if limiter.can_insert(chunk_size * (rollouts_in_flight + 1)):
                            submit_rollout(job.worker)
                        else:
                            parked.append(job.worker)
                    elif isinstance(job, _Update):
                        learner_calls -= 1
                        try:
                            learner_stats: LearnerStats = ray.get(ref)
                        except ray.exceptions.RayActorError as err:
                            check_restartable(err)
                            if getattr(err, "actor_id", None) == learner_id:
                                if restarts.failed("learner", "learner", job.tag):
                                    restore_learner()
                            else:  # the replay shard died while sampling: this call's batches are lost
                                restarts.failed("replay", f"replay_{job.shard}", job.shard_tag)
                            continue
                        if restarts.replied("learner", "learner", learner_stats.life):  # died between calls
                            restore_learner()  # this call trained a fresh network: drop its weights
                            continue
                        learner_version = learner_stats.version
                        monitor.on_learner(learner_stats)
                        if prioritized:  # sent only now: a call waiting on its argument would hold up add()
                            shards[job.shard].update_priorities(job.priorities)
                        if learner_stats.published:  # then job.weights holds Weights, not None
                            weights_ref, published_version = (
                                cast(ObjectRef[Weights], job.weights),
                                learner_stats.version,
                            )
                    elif isinstance(job, _Probe):
                        try:
                            life: int = ray.get(ref)
                        except ray.exceptions.RayActorError:
                            probe_at[job.worker] = time.monotonic() + PROBE_EVERY_S
                            continue
                        restarts.replied("rollout", f"rollout_{job.worker}", life)
                        submit_rollout(job.worker)
                    elif isinstance(job, _Add):
                        try:
                            inserted, replay_timings, restored, life = ray.get(ref)
                        except ray.exceptions.RayActorError as err:  # the shard comes back (see restored)
                            check_restartable(err)
                            restarts.failed("replay", f"replay_{job.shard}", job.tag)
                            continue
                        restarts.replied("replay", f"replay_{job.shard}", life)
                        if restored is not None:  # a restarted shard's first reply: empty, or its newest snapshot
                            restarts.replay_restored += restored
                            how = f"with {restored:,} transitions from its snapshot" if restored else "empty"
                            print(f"raylab: replay shard {job.shard} restarted {how}", flush=True)
                        added += inserted
                        monitor.add_timings("replay", replay_timings)
                        monitor.replay_size = min(added, cfg.replay.capacity)
                    else:
                        result: EvalResult = ray.get(ref)
                        eval_in_flight = False
                        monitor.on_eval(result)
                        evaluated_ref = job.weights
                monitor.gauge({
                    "replay/inserted": added, "queue/rollouts_in_flight": rollouts_in_flight,
                    "queue/learner_calls": learner_calls, "queue/parked_workers": len(parked),
                })  # fmt: skip
                monitor.gauge(restarts.metrics())
                monitor.tick(state=learner.state_dict_or_none)
                stop = monitor.stop_reason()
        except KeyboardInterrupt as err:
            stop = interrupted_reason(err)
        monitor.stopped()

        # Drain the learner so the checkpoint holds its final state and every update is counted.
        for ref in [ref for ref, job in pending.items() if isinstance(job, _Update)]:
            with contextlib.suppress(ray.exceptions.RayActorError):  # a call lost to a crash counts nothing
                monitor.on_learner(ray.get(ref))
        # The run's policy: the evaluated weights that met stop.mean_return, else the learner's last ones.
        policy_ref = evaluated_ref if monitor.target_reached() else learner.weights()
        final_eval = None
        if cfg.eval.final_episodes and stop not in INTERRUPTED:
            final_eval = ray.get(evaluator.evaluate(policy_ref, cfg.eval.final_episodes))
        policy: Weights = ray.get(policy_ref)
        state = learner.state_dict_blocking()
        clients = [learner, *shards, evaluator, *workers]
        peak = sum(ray.get([c.peak_memory_bytes() for c in clients]))
        replay_stats = ReplayStats.merge([s.stats_blocking() for s in shards])
        extra = {"restarts": restarts.metrics()}
        return monitor.finish(stop, state, policy, final_eval, replay_stats, extra_peak_memory_bytes=peak, extra=extra)

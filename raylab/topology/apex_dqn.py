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

import time
from dataclasses import dataclass
from typing import cast

import ray
from ray import ObjectRef

from raylab.builders import build_rate_limiter, check_replay_fits
from raylab.config import RunConfig
from raylab.driver.monitor import RunMonitor, RunSummary
from raylab.driver.stop import INTERRUPTED, interrupted_reason
from raylab.envs.registry import EnvSpaces
from raylab.errors import ConfigError
from raylab.remote.clients import EvalClient, LearnerClient, ReplayClient, RolloutClient
from raylab.remote.runtime import learner_gpus, placement, run_on_ray, wait_ready
from raylab.replay.buffer import ReplayStats
from raylab.types import Chunk, EvalResult, LearnerStats, Priorities, RolloutStats, Weights

LEARNER_CALLS_IN_FLIGHT = 2
WAIT_TIMEOUT_S = 0.1


@dataclass
class _Rollout:
    worker: int
    chunk: ObjectRef[Chunk]


@dataclass
class _Update:
    weights: ObjectRef[Weights | None]
    priorities: ObjectRef[Priorities | None]
    shard: int


@dataclass
class _Add:
    shard: int


@dataclass
class _Eval:
    weights: ObjectRef[Weights]


class ApexDQNTopology:
    def __init__(self, cfg: RunConfig, spaces: EnvSpaces):
        self.cfg = cfg
        self.spaces = spaces
        # validate what can be validated before Ray starts
        self.limiter = build_rate_limiter(cfg)
        check_replay_fits(cfg, spaces)
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
        cfg, spaces, limiter = self.cfg, self.spaces, self.limiter
        monitor = RunMonitor(cfg, spaces)
        learner = LearnerClient.create(cfg, spaces, learner_gpus(cfg.learner))
        shards = [ReplayClient.create(cfg, spaces, k) for k in range(cfg.replay.num_shards)]
        evaluator = EvalClient.create(cfg, spaces)
        workers = [RolloutClient.create(cfg, spaces, i) for i in range(cfg.topology.num_workers)]
        wait_ready([c.ready() for c in (learner, *shards, evaluator, *workers)], "raylab actors")
        monitor.record_placement(placement({
            "learner": learner.handle, **{f"replay_{k}": s.handle for k, s in enumerate(shards)},
            "eval": evaluator.handle, **{f"rollout_{i}": w.handle for i, w in enumerate(workers)},
        }))  # fmt: skip
        prioritized = cfg.replay.kind == "prioritized"

        batch, calls = cfg.learner.batch_size, cfg.learner.updates_per_call
        chunk_size = cfg.topology.rollout_length * cfg.topology.envs_per_worker
        weights_ref, published_version = learner.weights(), 0
        worker_version = [-1] * len(workers)
        learner_version = 0
        pending: dict[ObjectRef, _Rollout | _Update | _Add | _Eval] = {}
        parked: list[int] = []
        rollouts_in_flight = learner_calls = calls_made = 0
        added = 0
        eval_in_flight = False
        evaluated_ref = weights_ref

        def submit_rollout(i: int) -> None:
            nonlocal rollouts_in_flight
            newer = worker_version[i] < published_version
            worker_version[i] = published_version
            chunk_ref, stats_ref = workers[i].sample(weights_ref if newer else None)
            pending[stats_ref] = _Rollout(i, chunk_ref)
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
                    stats_ref, new_weights_ref, priorities_ref = learner.update(shards[shard].sample_many(batch, calls))
                    pending[stats_ref] = _Update(new_weights_ref, priorities_ref, shard)
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

                waited = time.perf_counter()
                ready, _ = ray.wait(list(pending), num_returns=1, timeout=WAIT_TIMEOUT_S)
                monitor.add_time("driver/wait_s", time.perf_counter() - waited)
                for ref in ready:
                    job = pending.pop(ref)
                    if isinstance(job, _Rollout):
                        stats: RolloutStats = ray.get(ref)
                        rollouts_in_flight -= 1
                        shard = job.worker % len(shards)  # a worker's stream stays on one shard (n-step, frames)
                        pending[shards[shard].add(job.chunk)] = _Add(shard)
                        limiter.record_insert(stats.num_steps)
                        monitor.on_rollout(stats, learner_version)
                        if limiter.can_insert(chunk_size * (rollouts_in_flight + 1)):
                            submit_rollout(job.worker)
                        else:
                            parked.append(job.worker)
                    elif isinstance(job, _Update):
                        learner_stats: LearnerStats = ray.get(ref)
                        learner_calls -= 1
                        learner_version = learner_stats.version
                        monitor.on_learner(learner_stats)
                        if prioritized:  # sent only now: a call waiting on its argument would hold up add()
                            shards[job.shard].update_priorities(job.priorities)
                        if learner_stats.published:  # then job.weights holds Weights, not None
                            weights_ref, published_version = (
                                cast(ObjectRef[Weights], job.weights),
                                learner_stats.version,
                            )
                    elif isinstance(job, _Add):
                        inserted, replay_timings = ray.get(ref)
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
                monitor.tick(state=learner.state_dict_blocking)
                stop = monitor.stop_reason()
        except KeyboardInterrupt as err:
            stop = interrupted_reason(err)
        monitor.stopped()

        # Drain the learner so the checkpoint holds its final state and every update is counted.
        for ref in [ref for ref, job in pending.items() if isinstance(job, _Update)]:
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
        return monitor.finish(stop, state, policy, final_eval, replay_stats, extra_peak_memory_bytes=peak)

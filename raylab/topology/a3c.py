"""A3C on Ray: self-driven workers push gradients to parameter-server shards; nobody waits for anybody.

    A3CWorkerActor x N  --push(grad slice, version)-->  ShardActor x S  (shared RMSProp, one writer each)
          ^   (loop on the worker: segment, gradient, push;     |
          |    block only with > pushes_in_flight unanswered)  |
          +-------------- reply: the shard's new weights <-----+
    driver: run(window) per worker -> reports -> RunMonitor;  eval: pull shards -> EvalActor

Workers drive themselves (raylab.algos.a3c.A3CWorker): the driver only hands each one a time window
(WINDOW_S) and collects its report (steps, episodes, losses, per-stage seconds including the time blocked on
the server), so it never sits between a worker and the server. A worker that dies (its process killed, a
node lost) is replaced by a fresh one with new seeds, up to topology.max_actor_restarts times each (the
restart policy of every topology: -1 always, 0 never, then a death ends the run); an exception
raised inside a worker (a bug, a bad config) stops the run. A shard that crashes is restarted by Ray
(topology.max_actor_restarts) with its initial weights, so the driver lets every worker finish its window,
then rolls the whole server back to the latest periodic checkpoint (weights and RMSProp, every shard: slices
from different moments would not make one model), versions moving on, and the workers go on from there.
The cost is the updates since that checkpoint plus the windows cut short, both counted. When a greedy
evaluation meets stop.mean_return, those evaluated weights are the run's policy, as in the other topologies.
"""

from __future__ import annotations

import contextlib
import uuid
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import ray
from ray import ObjectRef

from raylab.algos.a3c import WorkerReport
from raylab.builders import build_parameter_servers
from raylab.config import RunConfig
from raylab.driver.monitor import RunMonitor, RunSummary
from raylab.driver.restarts import Restarts
from raylab.driver.resume import ResumeState
from raylab.driver.stop import INTERRUPTED, interrupted_reason
from raylab.envs.registry import EnvSpaces
from raylab.errors import RaylabError
from raylab.params.link import ServerUpdate
from raylab.params.server import ServerStats
from raylab.remote.a3c import A3CWorkerClient, ShardClient
from raylab.remote.clients import EvalClient
from raylab.remote.runtime import placement, run_on_ray, wait_ready
from raylab.types import EvalResult, Weights

WINDOW_S = 0.25
"""Seconds a worker runs between reports to the driver."""
WAIT_TIMEOUT_S = 0.1
DRAIN_TIMEOUT_S = 30.0
"""Seconds stopping workers get to finish their window and land their pushes."""


@dataclass
class _Window:
    worker: int


@dataclass
class _Eval:
    weights: ObjectRef[Weights]


class WaitAccount:
    """Per-worker seconds by stage over the whole run: the scaling view of a training run."""

    def __init__(self) -> None:
        self.by_worker: defaultdict[int, defaultdict[str, float]] = defaultdict(lambda: defaultdict(float))

    def add(self, report: WorkerReport) -> None:
        row = self.by_worker[report.worker_id]
        row["seconds"] += report.seconds
        row["segments"] += report.segments
        for stage, secs in report.timings.items():
            row[f"{stage}_s"] += secs

    def summary(self) -> dict[str, Any]:
        workers = {str(k): dict(v) for k, v in sorted(self.by_worker.items())}
        total = sum(v["seconds"] for v in self.by_worker.values())
        wait = sum(v.get("wait_s", 0.0) for v in self.by_worker.values())
        return {"workers": workers, "wait_share": wait / total if total else 0.0}


class A3CTopology:
    def __init__(self, cfg: RunConfig, spaces: EnvSpaces, resume: ResumeState | None = None):
        self.cfg = cfg
        self.resume = resume
        self.spaces = spaces
        self.layout, self.bounds, self.initial = build_parameter_servers(cfg, spaces)

    def required_cpus(self) -> float:
        cfg = self.cfg
        return cfg.topology.num_workers * cfg.topology.worker_cpus + cfg.params.num_shards * cfg.params.shard_cpus

    def run(self) -> RunSummary:
        return run_on_ray(self.cfg.ray, self.required_cpus(), self._run)

    def _weights(self, shards: list[ShardClient]) -> Weights:
        update = ServerUpdate.join(ray.get([s.pull() for s in shards]))
        return self.layout.weights(update.version, update.params)

    def _state(self, shards: list[ShardClient]) -> dict[str, Any]:
        """Layout, bounds and every shard's weights and RMSProp state (each shard's as of its last push)."""
        states = ray.get([s.state_dict() for s in shards])
        return {"layout": self.layout.as_dict(), "bounds": self.bounds, "shards": states}

    def _run(self) -> RunSummary:
        with RunMonitor(self.cfg, self.spaces, resume=self.resume) as monitor:
            return self._drive(monitor)

    def _drive(self, monitor: RunMonitor) -> RunSummary:
        cfg, spaces = self.cfg, self.spaces
        token = uuid.uuid4().hex[:8]
        shards = [
            ShardClient.create(cfg, params, k, name=f"raylab-a3c-{token}-shard-{k}")
            for k, params in enumerate(self.initial)
        ]
        evaluator = EvalClient.create(cfg, spaces)
        incarnations = [0 if self.resume is None else self.resume.incarnation] * cfg.topology.num_workers

        def create_worker(i: int) -> A3CWorkerClient:
            name = f"raylab-a3c-{token}-worker-{i}-{incarnations[i]}"
            return A3CWorkerClient.create(cfg, spaces, i, shards, self.bounds, incarnations[i], name=name)

        workers = [create_worker(i) for i in range(cfg.topology.num_workers)]
        wait_ready([s.ready() for s in shards] + [evaluator.ready()] + [w.ready() for w in workers], "raylab actors")
        if self.resume is not None:  # before any worker's first run pulls the weights
            ray.get([s.load_state_dict(st) for s, st in zip(shards, self.resume.learner["shards"], strict=True)])
        monitor.record_placement(placement({
            **{f"server_{k}": s.handle for k, s in enumerate(shards)}, "eval": evaluator.handle,
            **{f"rollout_{i}": w.handle for i, w in enumerate(workers)},
        }))  # fmt: skip

        account = WaitAccount()
        pending: dict[ObjectRef, _Window | _Eval] = {}
        eval_in_flight = False
        evaluated_ref: ObjectRef[Weights] | None = None
        restarts = Restarts()
        worker_restarts = 0
        deaths = [0] * len(workers)
        server_down = False
        """A shard died: workers finishing their window wait (idle) until the server is restored."""
        idle: list[int] = []

        def on_report(report: WorkerReport) -> None:
            account.add(report)
            # the parameter server's busy time, as its shards measured it for this worker's pushes
            monitor.add_time("server/apply_s", report.timings.get("server_apply", 0.0))
            monitor.on_rollout(report.rollout_stats(), report.policy_version_last)
            if report.segments:
                monitor.on_learner(report.learner_stats())

        def shard_lost(err: Exception, who: str) -> None:
            nonlocal server_down
            if cfg.topology.max_actor_restarts == 0:
                raise RaylabError(
                    f"{who} lost a parameter-server shard ({_first_line(err)}): the server state is gone; resume "
                    f"from the last checkpoint, or let Ray restart shards (topology.max_actor_restarts)"
                ) from None
            server_down = True

        def restore_server() -> None:
            """Every worker is idle: wait for the crashed shards to come back, roll every shard back to the
            latest periodic checkpoint (a model whose slices come from different times is no model), versions
            moving on past any the workers saw, and have the workers drop their outstanding pushes."""
            lives = [shard.wait_back(f"parameter-server shard {k}") for k, shard in enumerate(shards)]
            crashed = [k for k, life in enumerate(lives) if restarts.replied("server", f"server_{k}", life)]
            if crashed:
                alive: list[ServerStats] = ray.get([s.stats() for s in shards])
                min_version = max(s.version for s in alive) + 1
                state = monitor.latest_learner_state()
                if state is not None:
                    ray.get([s.load_state_dict(st, min_version) for s, st in zip(shards, state["shards"], strict=True)])
                else:  # no checkpoint yet: back to the initial weights with a fresh RMSProp
                    ray.get([s.load(params, min_version) for s, params in zip(shards, self.initial, strict=True)])
                source = "the latest checkpoint" if state is not None else "the initial weights"
                which = ", ".join(map(str, crashed))
                print(f"raylab: parameter-server shard {which} crashed; server restored from {source}", flush=True)
            ray.get([w.recover() for w in workers])

        def weights_or_none() -> ObjectRef[Weights] | None:
            try:
                return ray.put(self._weights(shards))
            except ray.exceptions.RayActorError as err:
                shard_lost(err, "the evaluation")
                return None

        def state_or_none() -> dict[str, Any] | None:
            if server_down:
                return None  # no checkpoint of a server that lost a shard
            try:
                return self._state(shards)
            except ray.exceptions.RayActorError as err:
                shard_lost(err, "the checkpoint")
                return None

        monitor.start()
        for i, worker in enumerate(workers):
            pending[worker.run(seconds=WINDOW_S)] = _Window(i)
        stop: str | None = None
        try:
            while stop is None:
                if not eval_in_flight and not server_down and monitor.eval_due():
                    monitor.eval_started()
                    weights_ref = weights_or_none()
                    if weights_ref is not None:
                        eval_ref = evaluator.evaluate(
                            weights_ref, cfg.eval.episodes, cfg.stop.mean_return, cfg.eval.confirm_episodes
                        )
                        pending[eval_ref] = _Eval(weights_ref)
                        eval_in_flight = True
                ready, _ = ray.wait(list(pending), num_returns=1, timeout=WAIT_TIMEOUT_S) if pending else ([], [])
                for ref in ready:
                    job = pending.pop(ref)
                    if isinstance(job, _Window):
                        i = job.worker
                        try:
                            on_report(ray.get(ref))
                        except ray.exceptions.RayActorError as err:
                            if isinstance(err, ray.exceptions.RayTaskError):
                                # the worker is alive: an actor it called (a server shard) died; its window is lost
                                shard_lost(err, f"a3c worker {i}")
                                restarts.lost_chunks += 1
                            else:
                                incarnations[i] += 1
                                worker_restarts += 1
                                restarts.replace("rollout", f"rollout_{i}")
                                restarts.lost_chunks += 1
                                deaths[i] += 1
                                if 0 <= cfg.topology.max_actor_restarts < deaths[i]:
                                    raise RaylabError(
                                        f"a3c worker {i} died {deaths[i]} times (last: {_first_line(err)}), more than "
                                        f"topology.max_actor_restarts={cfg.topology.max_actor_restarts}: raise it, or "
                                        f"check the workers' logs under /tmp/ray/session_latest/logs"
                                    ) from None
                                print(f"raylab: a3c worker {i} died ({_first_line(err)}); restarting it", flush=True)
                                workers[i] = create_worker(i)
                                wait_ready([workers[i].ready()], f"a3c worker {i}")
                        if server_down:
                            idle.append(i)
                        else:
                            pending[workers[i].run(seconds=WINDOW_S)] = _Window(i)
                    else:
                        result: EvalResult = ray.get(ref)
                        eval_in_flight = False
                        monitor.on_eval(result)
                        evaluated_ref = job.weights
                if server_down and not any(isinstance(job, _Window) for job in pending.values()):
                    restore_server()
                    server_down = False
                    for i in idle:
                        pending[workers[i].run(seconds=WINDOW_S)] = _Window(i)
                    idle.clear()
                monitor.gauge(restarts.metrics())
                monitor.tick(state=state_or_none)
                stop = monitor.stop_reason()
        except KeyboardInterrupt as err:
            stop = interrupted_reason(err)
        monitor.stopped()

        # Let every worker finish its window and every push land, so counts and the checkpoint agree; a worker
        # that does not answer within DRAIN_TIMEOUT_S (a hung env) is killed and its pushes are lost.
        windows = {ref: job.worker for ref, job in pending.items() if isinstance(job, _Window)}
        flushes = {workers[i].flush(): i for i in windows.values()}  # queued behind each worker's window
        owner = {**windows, **flushes}
        ready, stragglers = ray.wait(list(owner), num_returns=len(owner), timeout=DRAIN_TIMEOUT_S)
        for ref in ready:
            with contextlib.suppress(ray.exceptions.RayActorError):
                on_report(ray.get(ref))
        for i in sorted({owner[ref] for ref in stragglers}):
            print(f"raylab: a3c worker {i} did not stop within {DRAIN_TIMEOUT_S:g} s; killed", flush=True)
            workers[i].kill()
        lives = ray.get([s.life() for s in shards])
        if server_down or any(life != restarts.tag(f"server_{k}") for k, life in enumerate(lives)):
            restore_server()  # a shard crashed while stopping: its fresh weights are not the run's
        policy = ray.get(evaluated_ref) if monitor.target_reached() and evaluated_ref else self._weights(shards)
        final_eval = None
        if cfg.eval.final_episodes and stop not in INTERRUPTED:
            final_eval = ray.get(evaluator.evaluate(ray.put(policy), cfg.eval.final_episodes))
        learner_state = self._state(shards)
        server: list[ServerStats] = ray.get([s.stats() for s in shards])
        peak_refs = [s.peak_memory_bytes() for s in shards] + [w.peak_memory_bytes() for w in workers]
        peak = sum(_alive_results([*peak_refs, evaluator.peak_memory_bytes()]))
        extra = {
            "a3c": {**account.summary(), "server": _server_summary(server), "worker_restarts": worker_restarts},
            "restarts": restarts.metrics(),
        }
        return monitor.finish(stop, learner_state, policy, final_eval, extra_peak_memory_bytes=peak, extra=extra)


def _server_summary(stats: list[ServerStats]) -> dict[str, Any]:
    """Per-shard totals (every shard applies every push, so their counts agree unless pushes were lost)."""
    pushes = sum(s.pushes for s in stats)
    return {
        "shards": len(stats),
        "pushes": [s.pushes for s in stats],
        "version": min(s.version for s in stats),
        "apply_s": [s.apply_s for s in stats],
        "queue_s": [s.queue_s for s in stats],
        "lag_mean": sum(s.lag_sum for s in stats) / pushes if pushes else 0.0,
        "lag_max": max(s.lag_max for s in stats),
    }


def _first_line(err: BaseException) -> str:
    return (str(err).strip().splitlines() or [type(err).__name__])[0][:160]


def _alive_results(refs: list[ObjectRef[int]]) -> list[int]:
    """Results of the refs whose actor is still alive (a worker lost while stopping has no answer)."""
    out = []
    for ref in refs:
        with contextlib.suppress(ray.exceptions.ActorDiedError):
            out.append(ray.get(ref))
    return out

"""ScalingHarness: the warm A3C actors ``python -m raylab.bench scaling`` times (raylab.bench.scaling).

It spawns the a3c topology's shard and worker actors from the same specs as a run (raylab.builders.plans) on
the Ray backend, and never imports ray itself: only raylab/remote does.
"""

from __future__ import annotations

import time

import numpy as np

from raylab.builders.plans import a3c_worker_spec, shard_spec
from raylab.config import RunConfig
from raylab.params.link import ServerLink
from raylab.params.server import ServerStats
from raylab.remote.ray_backend import RayBackend
from raylab.remote.runtime import init_ray, shutdown_ray
from raylab.rollout.a3c import WorkerReport
from raylab.types import EnvSpaces

STAGES = ("wait", "push", "receive", "sync", "learn", "env", "inference")
"""A3C worker stages a row reports (``<stage>_s``: the mean over the workers), in the row's order."""


class ScalingHarness:
    """Warm shard and worker actors for ``python -m raylab.bench scaling``: each ``measure`` restarts the
    server from given weights (fresh RMSProp, version 0) and times ``num_workers`` workers pushing a fixed
    total number of segments, seed 000's protocol. Actor start-up is outside the timing."""

    def __init__(
        self, cfg: RunConfig, spaces: EnvSpaces, max_workers: int, initial: list[np.ndarray], bounds: list[int]
    ):
        required = max_workers * cfg.topology.worker_cpus + len(initial) * cfg.params.shard_cpus
        self.started = init_ray(cfg.ray, required)
        self.bounds = bounds
        self.backend = backend = RayBackend(cfg.ray, cfg.topology.max_actor_restarts)
        backend.required_cpus = required
        self.shards = [backend.spawn(shard_spec(cfg, params, k)) for k, params in enumerate(initial)]
        link = ServerLink(self.shards, bounds, backend.transport)
        self.workers = [backend.spawn(a3c_worker_spec(cfg, spaces, None, i, link)) for i in range(max_workers)]
        backend.wait_ready(self.shards + self.workers, "benchmark actors")

    def measure(self, flat: np.ndarray, num_workers: int, total_segments: int, pushes_in_flight: int) -> dict:
        """One row: an actor's user error is raised as its own RaylabError (the Ray backend's ``get``)."""
        if not 1 <= num_workers <= len(self.workers) or total_segments < num_workers or pushes_in_flight < 0:
            raise ValueError(f"bad row: {num_workers} workers, {total_segments} segments, {pushes_in_flight} in flight")
        b = self.bounds
        self.backend.get([s.load(flat[b[k] : b[k + 1]]) for k, s in enumerate(self.shards)])
        workers = self.workers[:num_workers]
        self.backend.get([w.configure(pushes_in_flight) for w in workers])
        self.backend.get([w.restart() for w in workers])
        self.backend.get([s.stats(True) for s in self.shards])
        quotas = [
            total_segments // num_workers + (1 if i < total_segments % num_workers else 0) for i in range(num_workers)
        ]
        start = time.perf_counter()
        run_refs = [w.run(q, None) for w, q in zip(workers, quotas, strict=True)]
        flush_refs = [w.flush() for w in workers]  # queued right behind each run: the clock stops at the last push
        reports: list[WorkerReport] = self.backend.get(run_refs)
        flushed: list[WorkerReport] = self.backend.get(flush_refs)
        total_s = time.perf_counter() - start
        server: list[ServerStats] = self.backend.get([s.stats(True) for s in self.shards])
        row = {"workers": num_workers, "pushes_in_flight": pushes_in_flight, "total_s": total_s}
        return {**row, **_row(reports, flushed, server)}

    def close(self) -> None:
        if self.started:
            shutdown_ray()


def _row(reports: list[WorkerReport], flushed: list[WorkerReport], server: list[ServerStats]) -> dict:
    """Per-worker stage seconds (means over the workers), the server's apply and queue times, and the lag."""
    per_worker = []
    for run_report, flush_report in zip(reports, flushed, strict=True):
        stages: dict[str, float] = {}
        for report in (run_report, flush_report):
            for stage, secs in report.timings.items():
                stages[stage] = stages.get(stage, 0.0) + secs
        per_worker.append(stages)
    lag_pushes = sum(s.pushes for s in server)
    return {
        **{f"{stage}_s": float(np.mean([w.get(stage, 0.0) for w in per_worker])) for stage in STAGES},
        "apply_s": max(s.apply_s for s in server),
        "apply_ms_per_push": 1e3 * max(s.apply_s for s in server) / max(1, server[0].pushes),
        "server_queue_s": max(s.queue_s for s in server),
        "segments": sum(r.segments for r in reports),
        "pushes_applied": server[0].pushes,
        "env_steps": sum(r.env_steps for r in reports),
        "episodes": int(sum(len(r.episodes) for r in reports)),
        "lag_mean": sum(s.lag_sum for s in server) / lag_pushes if lag_pushes else 0.0,
        "lag_max": max(s.lag_max for s in server),
    }

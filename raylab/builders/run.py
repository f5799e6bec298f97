"""A run assembled: its plan, its flow, the backend its actors run on, and the monitor that writes its outputs."""

from __future__ import annotations

from typing import Any

from raylab.builders.plans import build_plan
from raylab.config import RunConfig
from raylab.driver.loop import Backend, Driver
from raylab.driver.monitor import RunMonitor
from raylab.driver.resume import ResumeState
from raylab.topology import make_flow
from raylab.types import EnvSpaces


def build_run(cfg: RunConfig, spaces: EnvSpaces, resume: ResumeState | None = None, keep_ray: bool = False) -> Driver:
    """The driver loop of the run ``cfg`` describes: on Ray, or with topology=local in this process (imported
    lazily: the local topology never imports Ray). ``keep_ray``: a Ray it starts outlives it (sweeps)."""
    plan = build_plan(cfg, spaces, resume)
    backend: Backend
    in_process = cfg.topology.name == "local"
    if in_process:
        from raylab.remote.inprocess import InProcessBackend

        backend = InProcessBackend()
    else:
        from raylab.remote.ray_backend import RayBackend

        backend = RayBackend(cfg.ray, plan.max_restarts, keep_ray)

    def open_monitor(beside_checkpoints: Any) -> RunMonitor:
        return RunMonitor(
            cfg, spaces, resume=resume, replay_snapshot=beside_checkpoints, actor_counts=plan.actor_counts,
            in_process=in_process,
        )  # fmt: skip

    return Driver(plan, make_flow(plan), backend, open_monitor)

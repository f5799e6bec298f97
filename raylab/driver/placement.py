"""Whether a run's actors fit a cluster, checked before any of them starts: a run that cannot be placed fails
in one line instead of waiting for resources that never come (the backend gives the nodes' resources)."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence

from raylab.errors import RaylabError
from raylab.remote.host import Resources

PLACEMENT_NOTE_EVERY_S = 30.0


def check_placeable(
    demands: Sequence[tuple[str, Resources]], nodes: Callable[[], list[dict[str, float]]], wait_s: float = 0.0
) -> None:
    """Before any actor starts: a run the Ray cluster cannot hold (its CPUs or GPUs in all, or one actor larger
    than every node) fails in one line naming the actor, what it asks for, what the cluster has and the fix,
    instead of waiting for resources that never come. ``wait_s`` > 0 (ray.placement_wait_s): wait that long
    for nodes an autoscaler may add, saying so every 30 s. ``nodes()``: each live node's resources, now."""
    deadline = time.monotonic() + wait_s
    noted = -math.inf
    while (missing := unplaceable(demands, nodes())) is not None:
        now = time.monotonic()
        if now >= deadline:
            waited = f" (after waiting {wait_s:g} s)" if wait_s else ""
            raise RaylabError(f"{missing}{waited}")
        if now - noted >= PLACEMENT_NOTE_EVERY_S:
            noted = now
            left = deadline - now
            print(f"raylab: waiting up to {left:.0f} s for the cluster to grow: {missing.split(':')[0]}", flush=True)
        time.sleep(1.0)


def unplaceable(demands: Sequence[tuple[str, Resources]], nodes: list[dict[str, float]]) -> str | None:
    """Why ``demands`` cannot all be placed on ``nodes`` (their resources), or None. GPUs asked for only where
    there are any (learner.device=auto) count as none."""
    total_cpu = sum(n.get("CPU", 0.0) for n in nodes)
    total_gpu = sum(n.get("GPU", 0.0) for n in nodes)
    gpus = sum(res.gpus for _, res in demands)
    if gpus > total_gpu + 1e-9:
        who = next(name for name, res in demands if res.gpus)
        asked = next(res.gpus for name, res in demands if res.gpus)
        return (
            f"{who} asks for {asked:g} GPU (learner.num_gpus) and the Ray cluster has {total_gpu:g}: set "
            f"learner.num_gpus=0 (learner.device=auto takes a GPU wherever there is one), or add a GPU node"
        )
    cpus = sum(res.cpus for _, res in demands)
    if cpus > total_cpu + 1e-9:
        return (
            f"the run reserves {cpus:g} CPUs ({_by_kind(demands)}) and the Ray cluster has {total_cpu:g}: lower "
            f"topology.num_workers or topology.worker_cpus, or give Ray more CPUs (ray.num_cpus for the embedded "
            f"Ray)"
        )
    largest = max((n.get("CPU", 0.0) for n in nodes), default=0.0)
    for name, res in demands:
        if res.cpus > largest + 1e-9:
            return (
                f"{name} reserves {res.cpus:g} CPUs and the largest Ray node has {largest:g}: lower its CPUs "
                f"(topology.worker_cpus, learner.num_cpus, params.shard_cpus) to at most {largest:g}"
            )
    return None


def _by_kind(demands: Sequence[tuple[str, Resources]]) -> str:
    """'4 rollout actors x 1, the learner 1': the actors that reserve CPUs, grouped by kind."""
    kinds: dict[str, list[float]] = {}
    for name, res in demands:
        if res.cpus:
            kinds.setdefault(name.rstrip("0123456789 "), []).append(res.cpus)
    parts = [f"{len(c)} {kind}s x {c[0]:g}" if len(c) > 1 else f"{kind} {c[0]:g}" for kind, c in kinds.items()]
    return ", ".join(parts)

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


class RestartWatch:
    """The same check for actors a run starts later: Ray restarts a crashed actor wherever it fits, and one
    that has not come back after ``grace_s`` while the cluster can no longer hold the run (a node left) ends
    the run in one line once ``wait_s`` (ray.placement_wait_s) has passed, saying so every 30 s meanwhile,
    instead of waiting for ever. ``nodes()``: each live node's resources (None: no cluster)."""

    GRACE_S = 10.0
    """How long a restart may take before the cluster is asked whether it can still hold the run."""

    def __init__(
        self,
        demands: Sequence[tuple[str, Resources]],
        nodes: Callable[[], list[dict[str, float]] | None],
        wait_s: float,
    ):
        self.demands, self.nodes, self.wait_s = list(demands), nodes, wait_s
        self.since: dict[str, float] = {}
        """Restarting actors and when each went down."""
        self._short_since: float | None = None
        self._noted = -math.inf
        self._next_check = 0.0

    def restarting(self, name: str) -> None:
        self.since.setdefault(name, time.monotonic())

    def back(self, name: str) -> None:
        self.since.pop(name, None)

    def check(self) -> None:
        """Cheap; call every loop iteration (the cluster is asked at most once a second)."""
        now = time.monotonic()
        if not self.since or now < self._next_check:
            return
        self._next_check = now + 1.0
        name, down = min(self.since.items(), key=lambda item: item[1])
        nodes = self.nodes()
        missing = unplaceable(self.demands, nodes) if nodes is not None and now - down >= self.GRACE_S else None
        if missing is None:
            self._short_since = None
            return
        short = self._short_since = self._short_since if self._short_since is not None else now
        where = f"{name} has waited {now - down:.0f} s to restart, and the cluster can no longer hold the run"
        if now - short >= self.wait_s:
            raise RaylabError(
                f"{where} (a node left?): {missing}; or bring the node back and continue with resume=<run dir>"
            )
        if now - self._noted >= PLACEMENT_NOTE_EVERY_S:
            self._noted = now
            print(f"raylab: {where}: waiting up to {self.wait_s - (now - short):.0f} s for it to grow", flush=True)

"""A3C's parameter server as the driver sees it: its shards, their weights and state, and the restore after
a shard's crash; the workers' last windows at the end; the per-worker time account (benchmark_metrics.json's
``a3c`` section).

    ShardActor x S (Ray restarts a crashed one with its initial weights)
       restore: every shard back to the latest periodic checkpoint (or the initial weights), versions
                moving on; every worker drops its outstanding pushes (recover)
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from typing import Any

from raylab.driver.loop import Driver, first_line
from raylab.errors import RaylabError
from raylab.params.link import ServerUpdate
from raylab.params.server import ServerStats
from raylab.plan import A3CPlan
from raylab.rollout.a3c import WORKER_STAGES, WorkerReport
from raylab.types import Weights


class ServerShards:
    """The parameter server (raylab.params.server.ParameterServer, one per shard) as the driver holds it."""

    def __init__(self, driver: Driver, plan: A3CPlan):
        self.layout, self.bounds, self.initial = plan.layout, plan.bounds, plan.initial
        self.max_restarts = plan.max_restarts
        self.shards = [driver.backend.spawn(spec) for spec in plan.shards]
        self.down = False
        """A shard died: workers finishing their window wait (idle) until the server is restored."""

    def weights(self, driver: Driver) -> Weights:
        update = ServerUpdate.join(driver.backend.get([s.pull() for s in self.shards]))
        return self.layout.weights(update.version, update.params)

    def state(self, driver: Driver) -> dict[str, Any]:
        """Layout, bounds and every shard's weights and RMSProp state (each shard's as of its last push)."""
        states = driver.backend.get([s.state_dict() for s in self.shards])
        return {"layout": self.layout.as_dict(), "bounds": self.bounds, "shards": states}

    def lost(self, err: BaseException, who: str) -> None:
        if self.max_restarts == 0:
            raise RaylabError(
                f"{who} lost a parameter-server shard ({first_line(err)}): the server state is gone; resume "
                f"from the last checkpoint, or let Ray restart shards (topology.max_actor_restarts)"
            ) from None
        self.down = True

    def weights_or_none(self, driver: Driver) -> Any | None:
        if self.down:
            return None
        try:
            return driver.backend.put(self.weights(driver))
        except driver.backend.ActorDied as err:
            self.lost(err, "the evaluation")
            return None

    def state_or_none(self, driver: Driver) -> dict[str, Any] | None:
        if self.down:
            return None  # no checkpoint of a server that lost a shard
        try:
            return self.state(driver)
        except driver.backend.ActorDied as err:
            self.lost(err, "the checkpoint")
            return None

    def restore(self, driver: Driver, workers: list[Any]) -> None:
        """Every worker is idle: wait for the crashed shards to come back, roll every shard back to the
        latest periodic checkpoint (a model whose slices come from different times is no model), versions
        moving on past any the workers saw, and have the workers drop their outstanding pushes."""
        get, shards = driver.backend.get, self.shards
        lives = [driver.backend.wait_back(shard, f"parameter-server shard {k}") for k, shard in enumerate(shards)]
        crashed = [k for k, life in enumerate(lives) if driver.heard("server", f"server_{k}", life)]
        if crashed:
            min_version = max(s.version for s in get([s.stats() for s in shards])) + 1
            state = driver.monitor.latest_learner_state()
            if state is not None:
                get([s.load_state_dict(st, min_version) for s, st in zip(shards, state["shards"], strict=True)])
            else:  # no checkpoint yet: back to the initial weights with a fresh RMSProp
                get([s.load(params, min_version) for s, params in zip(shards, self.initial, strict=True)])
            source = "the latest checkpoint" if state is not None else "the initial weights"
            which = ", ".join(map(str, crashed))
            print(f"raylab: parameter-server shard {which} crashed; server restored from {source}", flush=True)
        get([w.recover() for w in workers])
        self.down = False

    def summary(self, driver: Driver) -> dict[str, Any]:
        """Per-shard totals (every shard applies every push, so their counts agree unless pushes were lost)."""
        stats: list[ServerStats] = driver.backend.get([s.stats() for s in self.shards])
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


DRAIN_TIMEOUT_S = 30.0
"""Seconds stopping workers get to finish their window and land their pushes."""


def finish_windows(
    driver: Driver, workers: list[Any], windows: dict[Any, int], on_report: Callable[[WorkerReport], None]
) -> None:
    """The run stopped: every worker in ``windows`` ({window ref: worker}) finishes it and lands its pushes,
    so counts and the checkpoint agree; one that does not answer within DRAIN_TIMEOUT_S (a hung env) is
    killed and its pushes are lost."""
    flushes = {workers[i].flush(): i for i in windows.values()}  # queued behind each worker's window
    owner = {**windows, **flushes}
    ready = driver.backend.wait(list(owner), DRAIN_TIMEOUT_S, every=True)
    for ref in ready:
        try:
            on_report(driver.backend.get(ref))
        except driver.backend.ActorDied:
            continue
    for i in sorted({i for ref, i in owner.items() if ref not in ready}):
        print(f"raylab: a3c worker {i} did not stop within {DRAIN_TIMEOUT_S:g} s; killed", flush=True)
        driver.backend.kill(workers[i])


class WaitAccount:
    """Per-worker seconds by stage over the whole run: the scaling view of a training run."""

    def __init__(self) -> None:
        self.by_worker: defaultdict[int, defaultdict[str, float]] = defaultdict(lambda: defaultdict(float))

    def add(self, report: WorkerReport) -> None:
        row = self.by_worker[report.worker_id]
        row["seconds"] += report.seconds
        row["segments"] += report.segments
        for stage in WORKER_STAGES:  # a stage never entered (no wait: the server kept up) is 0 s, not missing
            row[f"{stage}_s"] += 0.0
        for stage, secs in report.timings.items():
            row[f"{stage}_s"] += secs

    def summary(self) -> dict[str, Any]:
        workers = {str(k): dict(v) for k, v in sorted(self.by_worker.items())}
        total = sum(v["seconds"] for v in self.by_worker.values())
        wait = sum(v.get("wait_s", 0.0) for v in self.by_worker.values())
        return {"workers": workers, "wait_share": wait / total if total else 0.0}

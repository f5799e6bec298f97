"""Ape-X's jobs beside the shared ones, and its replay shards as the driver sees them.

driver --Add(shard.add(chunk ref))--> ReplayActor g    done -> replay/inserted, replay timings; a restarted
                                                               shard's first reply: what it reloaded
                                                       failed -> the shard died (Ray restarts it)
ApexUpdate: learner.update(shard.sample_many(..))     failed -> the learner died (restored from the latest
                                                       checkpoint) or the sampled shard did (its batches lost)
monitor (periodic checkpoint, checkpoint.replay) --snapshot_replay--> every shard writes its snapshot

Each policy has its own replay (``PolicyReplay``, from its plan's ``ReplayPlan``): its shards, its rate limiter,
its published weights. Shard indices run across policies (policy k's shards follow policy k - 1's): actor names
``replay_<g>`` and snapshot files ``replay_<g>_*.npz`` stay unique in a run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from raylab.driver.loop import Call, Driver
from raylab.plan import ReplayPlan
from raylab.replay.buffer import ReplayStats
from raylab.replay.snapshot import snapshot_path
from raylab.topology.jobs import Update
from raylab.topology.rollout_flow import RolloutFlow


@dataclass
class PolicyReplay:
    """One policy's replay side at run time: its plan, its shards' clients and what the driver counts."""

    plan: ReplayPlan
    shards: list[Any] = field(default_factory=list)
    added: int = 0
    """Transitions its shards completed."""
    published: int = 0
    """The version of ``lane.weights``."""
    calls_made: int = 0
    worker_version: list[int] = field(default_factory=list)
    """The version each worker holds (-1: it needs the weights)."""

    @property
    def limiter(self) -> Any:
        return self.plan.limiter

    def index(self, shard: int) -> int:
        """The run-wide index of this replay's shard ``shard``."""
        return self.plan.first + shard


class ReplayFlow(RolloutFlow):
    replays: list[PolicyReplay]

    @property
    def added(self) -> int:
        """Transitions every shard completed (replay/inserted)."""
        return sum(r.added for r in self.replays)

    def replay_size(self) -> int:
        return sum(min(r.added, r.plan.capacity) for r in self.replays)

    def all_shards(self) -> list[tuple[int, Any]]:
        return [(r.index(j), shard) for r in self.replays for j, shard in enumerate(r.shards)]

    def restore_replay(self, driver: Driver) -> None:
        """A resumed run's shards load the snapshots saved with its checkpoint (checkpoint.replay)."""
        restored = 0
        for replay in self.replays:
            restoring = [(s, p) for s, p in zip(replay.shards, replay.plan.snapshots, strict=True) if p is not None]
            replay.added = sum(driver.backend.get(s.restore(str(path))) for s, path in restoring)
            if restoring:
                replay.limiter.credit_restored(replay.added)
                restored += replay.added
        if restored:
            driver.monitor.replay_size = self.replay_size()
            print(f"raylab: replay restored from its snapshot: {restored:,} transitions", flush=True)

    def beside_checkpoints(self, driver: Driver) -> Any:
        if self.plan.replay_snapshots is None:
            return None
        return lambda checkpoint: self.snapshot_replay(driver, checkpoint)

    def snapshot_replay(self, driver: Driver, checkpoint: Path) -> None:
        """Every replay shard writes its snapshot for ``checkpoint``; the data never passes the driver."""
        shards = self.all_shards()
        refs = [s.snapshot(str(snapshot_path(checkpoint.parent, g, checkpoint.name))) for g, s in shards]
        for (g, _), ref in zip(shards, refs, strict=True):
            try:
                driver.backend.get(ref)
            except driver.backend.ActorDied:  # restarting: its previous snapshot stays the latest
                print(f"raylab: replay shard {g} is restarting: no snapshot of it with {checkpoint.name}", flush=True)

    def extra(self, driver: Driver, state: dict[str, Any]) -> dict[str, Any]:
        stats = ReplayStats.merge(driver.backend.get([s.stats() for _, s in self.all_shards()]))
        return {**super().extra(driver, state), "replay": stats.report()}


@dataclass
class Add(Call):
    flow: ReplayFlow
    replay: PolicyReplay

    def done(self, driver: Driver, value: tuple[int, dict[str, float], int | None, int]) -> None:
        inserted, replay_timings, restored, life = value
        driver.heard(self.kind, self.name, life)
        if restored is not None:  # a restarted shard's first reply: empty, or its newest snapshot
            driver.restarts.replay_restored += restored
            how = f"with {restored:,} transitions from its snapshot" if restored else "empty"
            print(f"raylab: replay shard {self.name.removeprefix('replay_')} restarted {how}", flush=True)
        self.replay.added += inserted
        driver.monitor.add_timings("replay", replay_timings)
        driver.monitor.replay_size = self.flow.replay_size()

    def failed(self, driver: Driver, err: BaseException) -> None:  # the shard comes back (see restored)
        driver.lost(self.kind, self.name, self.tag, err)


@dataclass
class ApexUpdate(Update):
    replay: PolicyReplay | None = None
    shard: int = 0
    """The index of the shard (within ``replay``) its batches came from."""
    shard_tag: int = 0
    """The replay shard's tag (the call's batches came from its sample_many)."""

    def failed(self, driver: Driver, err: BaseException) -> None:
        assert self.replay is not None
        if driver.backend.death_of(err, self.lane.learner):
            super().failed(driver, err)
        else:  # the replay shard died while sampling: this call's batches are lost
            driver.lost("replay", f"replay_{self.replay.index(self.shard)}", self.shard_tag, err)

"""Ape-X's jobs beside the shared ones, and its replay shards as the driver sees them.

driver --Add(shard.add(chunk ref))--> ReplayActor k    done -> replay/inserted, replay timings; a restarted
                                                               shard's first reply: what it reloaded
                                                       failed -> the shard died (Ray restarts it)
ApexUpdate: learner.update(shard.sample_many(..))     failed -> the learner died (restored from the latest
                                                       checkpoint) or the sampled shard did (its batches lost)
monitor (periodic checkpoint, checkpoint.replay) --snapshot_replay--> every shard writes its snapshot
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from raylab.driver.checkpoints import ReplaySnapshot
from raylab.driver.loop import Call, Driver
from raylab.replay.rate_limiter import SamplesPerInsertLimiter
from raylab.replay.snapshot import snapshot_path
from raylab.topology.jobs import RolloutFlow, Update


class ReplayFlow(RolloutFlow):
    shards: list[Any]
    snapshots: list[Any]
    limiter: SamplesPerInsertLimiter
    added = 0
    """Transitions the shards completed (replay/inserted)."""

    def restore_replay(self, driver: Driver) -> None:
        """A resumed run's shards load the snapshots saved with its checkpoint (checkpoint.replay)."""
        restoring = [(s, path) for s, path in zip(self.shards, self.snapshots, strict=True) if path is not None]
        self.added = sum(driver.backend.get(s.restore(path)) for s, path in restoring)
        if restoring:
            self.limiter.credit_restored(self.added)
            driver.monitor.replay_size = self.added
            print(f"raylab: replay restored from its snapshot: {self.added:,} transitions", flush=True)

    def replay_snapshot(self, driver: Driver) -> ReplaySnapshot | None:
        if not self.cfg.checkpoint.replay:
            return None
        return lambda checkpoint: self.snapshot_replay(driver, checkpoint)

    def snapshot_replay(self, driver: Driver, checkpoint: Path) -> None:
        """Every replay shard writes its snapshot for ``checkpoint``; the data never passes the driver."""
        refs = [s.snapshot(snapshot_path(checkpoint.parent, k, checkpoint.name)) for k, s in enumerate(self.shards)]
        for k, ref in enumerate(refs):
            try:
                driver.backend.get(ref)
            except driver.backend.ActorDied:  # restarting: its previous snapshot stays the latest
                print(f"raylab: replay shard {k} is restarting: no snapshot of it with {checkpoint.name}", flush=True)


@dataclass
class Add(Call):
    flow: ReplayFlow

    def done(self, driver: Driver, value: tuple[int, dict[str, float], int | None, int]) -> None:
        inserted, replay_timings, restored, life = value
        driver.heard(self.kind, self.name, life)
        if restored is not None:  # a restarted shard's first reply: empty, or its newest snapshot
            driver.restarts.replay_restored += restored
            how = f"with {restored:,} transitions from its snapshot" if restored else "empty"
            print(f"raylab: replay shard {self.name.removeprefix('replay_')} restarted {how}", flush=True)
        self.flow.added += inserted
        driver.monitor.add_timings("replay", replay_timings)
        driver.monitor.replay_size = min(self.flow.added, driver.cfg.replay.capacity)

    def failed(self, driver: Driver, err: BaseException) -> None:  # the shard comes back (see restored)
        driver.lost(self.kind, self.name, self.tag, err)


@dataclass
class ApexUpdate(Update):
    priorities: Any
    shard: int
    shard_tag: int
    """The replay shard's tag (the call's batches came from its sample_many)."""

    def failed(self, driver: Driver, err: BaseException) -> None:
        if driver.backend.death_of(err, self.lane.learner):
            super().failed(driver, err)
        else:  # the replay shard died while sampling: this call's batches are lost
            driver.lost("replay", f"replay_{self.shard}", self.shard_tag, err)

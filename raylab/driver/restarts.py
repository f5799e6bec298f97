"""Counting the actors Ray restarted after a crash (topology.max_actor_restarts), as a driver sees them."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Restarts:
    """Crashed actors Ray restarted, as the driver saw them: each death counts once however many of the
    actor's calls it failed. A rollout actor's death loses the one chunk it had in flight; a replay shard's,
    the transitions it held (it comes back empty, or as of its newest snapshot with checkpoint.replay); the
    learner's, the updates since the latest periodic checkpoint, which it resumes from. An A3C
    parameter-server shard's death (``server``) rolls the whole server back to the latest periodic
    checkpoint; the workers' windows cut short count as lost chunks."""

    rollout: int = 0
    replay: int = 0
    learner: int = 0
    server: int = 0
    lost_chunks: int = 0
    replay_restored: int = 0
    """Transitions restarted replay shards reloaded from their snapshots (checkpoint.replay)."""
    down: set[str] = field(default_factory=set)
    """Actors whose last call failed and that have not answered since."""

    def died(self, kind: str, name: str) -> bool:
        """Record a failed call of ``name``; True when it is a new death (not a second call failing)."""
        if name in self.down:
            return False
        self.down.add(name)
        setattr(self, kind, getattr(self, kind) + 1)
        return True

    def answered(self, name: str) -> None:
        self.down.discard(name)

    def rejoined(self, kind: str, name: str) -> None:
        """A restarted actor's first answer: a death no failed call reported (it died between calls) counts
        here; one already counted does not count twice."""
        if name in self.down:
            self.down.discard(name)
        else:
            setattr(self, kind, getattr(self, kind) + 1)

    def rollout_answered(self, name: str, restarted: bool) -> None:
        if restarted:
            self.rejoined("rollout", name)
        else:
            self.answered(name)

    def metrics(self) -> dict[str, float]:
        return {"restarts/rollout": self.rollout, "restarts/replay": self.replay, "restarts/learner": self.learner,
                "restarts/server": self.server, "restarts/lost_chunks": self.lost_chunks,
                "restarts/replay_restored": self.replay_restored}  # fmt: skip

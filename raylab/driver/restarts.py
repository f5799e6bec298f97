"""Counting the actors Ray restarted after a crash (topology.max_actor_restarts), as a driver sees them.

A driver learns of a crash from signs that arrive in any order: calls that fail, late replies the dead
actor sent before it died, and replies of the restarted actor. Counting "one per failure, cleared by the
next reply" (the first version) counted a death twice when a failed call's error reached the driver after
the restarted actor had already answered. Here every sign is a *lower bound* on how many times the actor
died, and the count is their maximum, which no order of arrival can change:

- a reply from the actor's life ``k`` (Ray's restart count when that process started, carried by every
  reply that matters) proves ``deaths >= k``;
- a failed call proves that the life it was sent to died. The driver tags each call with the newest life
  it had heard from when it sent the call; the call ran in that life or a later one, so its failure proves
  ``deaths >= tag + 1``.

The maximum never overcounts; it can lag behind while an actor died twice without a word in between, and
catches up with the restarted actor's next reply. A death is *announced* exactly once: ``failed`` and
``replied`` return how many deaths the sign adds to the count (truthy: restore what the actor lost).
"""

from __future__ import annotations

from dataclasses import dataclass, field

KINDS = ("rollout", "replay", "learner", "server", "eval", "inference")


@dataclass
class _Actor:
    kind: str
    heard: int = 0
    """The newest life a reply came from."""
    failed: int = 0
    """1 + the newest tag of a failed call."""
    replaced: int = 0
    """Deaths of earlier actors under this name that the driver replaced with new ones (lives start at 0)."""

    @property
    def deaths(self) -> int:
        return self.replaced + max(self.heard, self.failed)


@dataclass
class Restarts:
    """Crashed actors Ray restarted, as the driver saw them. A rollout actor's death loses the chunk it had
    in flight (with topology.chunks_in_flight=2, up to two); a replay shard's, the transitions it held (it
    comes back empty, or as of its newest snapshot with checkpoint.replay); the learner's, the updates since
    the latest periodic checkpoint, which it resumes from. An A3C parameter-server shard's death (``server``)
    rolls the whole server back to the latest periodic checkpoint; the workers' windows cut short count as
    lost chunks. The evaluation actor's (``eval``) loses the evaluation it was running; the next one is due an
    eval interval later."""

    lost_chunks: int = 0
    replay_restored: int = 0
    """Transitions restarted replay shards reloaded from their snapshots (checkpoint.replay)."""
    actors: dict[str, _Actor] = field(default_factory=dict)

    def _actor(self, kind: str, name: str) -> _Actor:
        if kind not in KINDS:
            raise ValueError(f"unknown actor kind {kind!r}: one of {KINDS}")
        actor = self.actors.setdefault(name, _Actor(kind))
        if actor.kind != kind:
            raise ValueError(f"{name} was counted as a {actor.kind} actor, now as {kind}")
        return actor

    def tag(self, name: str) -> int:
        """What a call sent to ``name`` now carries: the newest life the driver has heard from."""
        actor = self.actors.get(name)
        return 0 if actor is None else actor.heard

    def replied(self, kind: str, name: str, life: int) -> int:
        """A reply from ``name`` in its life ``life``; returns the deaths it reveals that were not counted yet
        (the actor died between calls, or every failed call of that death is still on its way)."""
        actor = self._actor(kind, name)
        before = actor.deaths
        actor.heard = max(actor.heard, life)
        return actor.deaths - before

    def failed(self, kind: str, name: str, tag: int) -> int:
        """A call sent to ``name`` with ``tag`` failed because the actor died; returns 1 when this is a new
        death, 0 for another call failing with one already counted or a late failure from an earlier life."""
        actor = self._actor(kind, name)
        before = actor.deaths
        actor.failed = max(actor.failed, tag + 1)
        return actor.deaths - before

    def replace(self, kind: str, name: str) -> None:
        """The driver replaced the dead actor ``name`` with a new one (not a Ray restart): one more death,
        and the new actor's lives count from 0."""
        actor = self._actor(kind, name)
        actor.replaced += max(actor.heard + 1, actor.failed)  # its lives' deaths and its last, once
        actor.heard = actor.failed = 0

    def down(self, name: str) -> bool:
        """Known dead and not heard from since: a call failed in the newest life the driver knows."""
        actor = self.actors.get(name)
        return actor is not None and actor.failed > actor.heard

    def count(self, kind: str) -> int:
        return sum(a.deaths for a in self.actors.values() if a.kind == kind)

    @property
    def rollout(self) -> int:
        return self.count("rollout")

    @property
    def replay(self) -> int:
        return self.count("replay")

    @property
    def learner(self) -> int:
        return self.count("learner")

    @property
    def server(self) -> int:
        return self.count("server")

    def metrics(self) -> dict[str, float]:
        return {**{f"restarts/{kind}": self.count(kind) for kind in KINDS},
                "restarts/lost_chunks": self.lost_chunks, "restarts/replay_restored": self.replay_restored}  # fmt: skip

"""How an A3C worker talks to the parameter-server shards, without knowing whether they are Ray actors.

``ServerLink``: ``push`` sends a gradient and returns at once; ``poll`` collects the replies that are complete,
in push order, without blocking; ``wait_oldest`` blocks until the oldest outstanding push is applied (without
fetching it), so a worker can tell time spent blocked from time spent receiving. The same link serves shard
actors on Ray, in-process shard hosts and plain ``ParameterServer`` objects: what differs is the transport.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from raylab.params.server import PushReply
from raylab.transport import Immediate, Transport


@dataclass
class ServerUpdate:
    """One push's replies from every shard, joined: the full weights right after it was applied."""

    version: int
    """The lowest shard version (shards apply the same pushes, possibly interleaved differently)."""
    params: np.ndarray
    lag: int
    queue_s: float
    apply_s: float
    """Slowest shard's apply time (shards run in parallel)."""

    @classmethod
    def join(cls, replies: Sequence[PushReply]) -> ServerUpdate:
        replies = sorted(replies, key=lambda r: r.shard)
        return cls(
            version=min(r.version for r in replies),
            params=replies[0].params if len(replies) == 1 else np.concatenate([r.params for r in replies]),
            lag=max(r.lag for r in replies),
            queue_s=max(r.queue_s for r in replies),
            apply_s=max(r.apply_s for r in replies),
        )


def shard_slices(bounds: Sequence[int]) -> list[slice]:
    return [slice(bounds[k], bounds[k + 1]) for k in range(len(bounds) - 1)]


class ServerLink:
    """A worker's link to the shards: ``shards`` are clients of the shard actors (raylab.hosts.ShardHost:
    a push is one ``push`` call per shard, sent without waiting) or plain ``ParameterServer`` objects, whose
    replies are their own values; ``transport`` waits on and reads the replies (raylab.transport). Complete
    replies are collected in push order; ``wait_oldest`` blocks while the worker may not run further ahead."""

    def __init__(self, shards: Sequence[Any], bounds: Sequence[int], transport: Transport | None = None):
        self.shards = list(shards)
        self.slices = shard_slices(bounds)
        self.transport: Transport = transport or Immediate()
        self._pending: deque[list[Any]] = deque()

    def push(self, grad: np.ndarray, version: int) -> None:
        """Send a gradient computed on weights of ``version``; does not wait for it to be applied."""
        sent_at = time.time()
        self._pending.append(
            [s.push(grad[sl], version, sent_at) for s, sl in zip(self.shards, self.slices, strict=True)]
        )

    def in_flight(self) -> int:
        """Pushes sent whose replies have not been collected."""
        return len(self._pending)

    def wait_oldest(self) -> None:
        """Block until the oldest outstanding push is applied on every shard (``poll`` then returns it)."""
        if self._pending:
            self.transport.wait(self._pending[0], None, every=True, fetch=False)  # fetching is poll's ("receive")

    def poll(self) -> list[ServerUpdate]:
        """Replies of the oldest outstanding pushes that are already complete, oldest first; never blocks."""
        out = []
        while self._pending:
            head = self._pending[0]
            if len(self.transport.wait(head, 0, every=True, fetch=False)) < len(head):
                break
            out.append(ServerUpdate.join(self.transport.get(self._pending.popleft())))
        return out

    def pull(self) -> ServerUpdate:
        """The current weights of every shard (blocking)."""
        return ServerUpdate.join(self.transport.get([s.pull(-1) for s in self.shards]))

    def discard(self) -> int:
        """Forget every outstanding push without fetching it (the server was restored from a checkpoint; some
        replies are errors from a shard that died); returns how many."""
        dropped = len(self._pending)
        self._pending.clear()
        return dropped

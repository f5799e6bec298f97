"""How an A3C worker talks to the parameter-server shards, without knowing whether they are Ray actors.

``ServerLink`` is the contract: ``push`` sends a gradient and returns at once; ``poll`` collects the replies
that are complete, in push order, without blocking; ``wait_oldest`` blocks until the oldest outstanding push
is applied (without fetching it), so a worker can tell time spent blocked from time spent receiving.
``LocalServerLink`` calls in-process shards (unit tests, the serial path); ``raylab.remote.a3c.RayServerLink``
sends to shard actors.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from raylab.params.server import ParameterServer, PushReply


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


class ServerLink(Protocol):
    def push(self, grad: np.ndarray, version: int) -> None:
        """Send a gradient computed on weights of ``version``; does not wait for it to be applied."""
        ...

    def in_flight(self) -> int:
        """Pushes sent whose replies have not been collected."""
        ...

    def wait_oldest(self) -> None:
        """Block until the oldest outstanding push is applied on every shard (``poll`` then returns it)."""
        ...

    def poll(self) -> list[ServerUpdate]:
        """Replies of the oldest outstanding pushes that are already complete, oldest first; never blocks."""
        ...

    def pull(self) -> ServerUpdate:
        """The current weights of every shard (blocking)."""
        ...

    def discard(self) -> int:
        """Forget every outstanding push (the server was restored from a checkpoint); returns how many."""
        ...


def shard_slices(bounds: Sequence[int]) -> list[slice]:
    return [slice(bounds[k], bounds[k + 1]) for k in range(len(bounds) - 1)]


class LocalServerLink:
    """In-process shards: a push is applied at once and its reply queued until collected."""

    def __init__(self, servers: Sequence[ParameterServer], bounds: Sequence[int]):
        self.servers = list(servers)
        self.slices = shard_slices(bounds)
        self._replies: deque[ServerUpdate] = deque()

    def push(self, grad: np.ndarray, version: int) -> None:
        replies = [s.push(grad[sl], version) for s, sl in zip(self.servers, self.slices, strict=True)]
        self._replies.append(ServerUpdate.join(replies))

    def in_flight(self) -> int:
        return len(self._replies)

    def wait_oldest(self) -> None:
        pass  # applied at push time

    def poll(self) -> list[ServerUpdate]:
        out = list(self._replies)
        self._replies.clear()
        return out

    def pull(self) -> ServerUpdate:
        replies = [s.pull() for s in self.servers]
        return ServerUpdate.join([r for r in replies if r is not None])

    def discard(self) -> int:
        dropped = len(self._replies)
        self._replies.clear()
        return dropped

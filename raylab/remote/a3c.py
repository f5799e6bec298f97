"""The a3c topology's Ray actors: parameter-server shards and self-driven A3C workers, with typed clients.

``RayServerLink`` is the worker's side of the wire: a push is one ``ShardActor.push`` call per shard,
sent without waiting; complete replies are collected in push order (``ray.wait(timeout=0)``, then
``ray.get``), and ``wait_oldest`` blocks in ``ray.wait`` when the worker may not run further ahead.
"""

from __future__ import annotations

import os
import time
from collections import deque
from collections.abc import Sequence
from typing import Any

import numpy as np
import ray
from ray import ObjectRef

from raylab.algos.a3c import WorkerReport
from raylab.config import RunConfig
from raylab.envs.registry import EnvSpaces
from raylab.params.link import ServerUpdate, shard_slices
from raylab.params.server import PushReply, ServerStats
from raylab.remote.hosts import A3CWorkerHost, ShardHost
from raylab.remote.runtime import SPREAD, actor_class, wait_back

WINDOW_S = 0.25
"""Seconds a worker actor runs between reports to the driver (raylab.topology.a3c)."""


class RayServerLink:
    def __init__(self, shards: Sequence[Any], bounds: Sequence[int]):
        self.shards = list(shards)
        self.slices = shard_slices(bounds)
        self._pending: deque[list[ObjectRef[PushReply]]] = deque()

    def push(self, grad: np.ndarray, version: int) -> None:
        sent_at = time.time()
        self._pending.append(
            [h.push.remote(grad[sl], version, sent_at) for h, sl in zip(self.shards, self.slices, strict=True)]
        )

    def in_flight(self) -> int:
        return len(self._pending)

    def wait_oldest(self) -> None:
        if self._pending:
            head = self._pending[0]
            ray.wait(head, num_returns=len(head), fetch_local=False)  # fetching is poll's ("receive")

    def poll(self) -> list[ServerUpdate]:
        out = []
        while self._pending:
            head = self._pending[0]
            ready, _ = ray.wait(head, num_returns=len(head), timeout=0)
            if len(ready) < len(head):
                break
            out.append(ServerUpdate.join(ray.get(self._pending.popleft())))
        return out

    def pull(self) -> ServerUpdate:
        return ServerUpdate.join(ray.get([h.pull.remote(-1) for h in self.shards]))

    def discard(self) -> int:
        """Drop every outstanding push without fetching it (some replies are errors from a shard that died)."""
        dropped = len(self._pending)
        self._pending.clear()
        return dropped


class _RayA3CWorkerHost(A3CWorkerHost):
    """An A3C worker actor: its pushes go to the shard actors (RayServerLink), at params.worker_nice."""

    def __init__(
        self, cfg: RunConfig, spaces: EnvSpaces, worker_id: int, shards: list[Any], bounds: list[int], incarnation: int
    ):
        if cfg.params.worker_nice:
            os.nice(cfg.params.worker_nice)
        super().__init__(cfg, spaces, worker_id, RayServerLink(shards, bounds), incarnation)


ShardActor = actor_class(ShardHost)
A3CWorkerActor = actor_class(_RayA3CWorkerHost, name="A3CWorkerHost")


class ShardClient:
    @classmethod
    def create(cls, cfg: RunConfig, params: np.ndarray, shard: int, name: str | None = None) -> ShardClient:
        """Ray restarts a crashed shard (topology.max_actor_restarts) with its initial weights: the topology
        then restores the whole server from the latest checkpoint (raylab.topology.a3c)."""
        options: dict[str, Any] = {"num_cpus": cfg.params.shard_cpus, "max_restarts": cfg.topology.max_actor_restarts}
        if name:
            options["name"] = name
        return cls(ShardActor.options(**options).remote(cfg, params, shard))

    def __init__(self, handle: Any):
        self.handle = handle

    def ready(self) -> ObjectRef[bool]:
        return self.handle.ready.remote()

    def pull(self) -> ObjectRef[PushReply]:
        return self.handle.pull.remote(-1)

    def load(self, params: np.ndarray, version: int = 0) -> ObjectRef[None]:
        return self.handle.load.remote(params, version)

    def stats(self, reset: bool = False) -> ObjectRef[ServerStats]:
        return self.handle.stats.remote(reset)

    def state_dict(self) -> ObjectRef[dict]:
        return self.handle.state_dict.remote()

    def load_state_dict(self, state: dict, min_version: int = 0) -> ObjectRef[None]:
        return self.handle.load_state_dict.remote(state, min_version)

    def peak_memory_bytes(self) -> ObjectRef[int]:
        return self.handle.peak_memory_bytes.remote()

    def pid(self) -> ObjectRef[int]:
        return self.handle.pid.remote()

    def wait_back(self, what: str) -> int:
        """After a crash Ray restarts this shard: wait for it; returns the life of the one now answering."""
        wait_back(self.ready, what)
        return int(ray.get(self.life()))

    def life(self) -> ObjectRef[int]:
        """Ray's restart count when the shard now answering started (raylab.driver.restarts)."""
        return self.handle.get_life.remote()


class A3CWorkerClient:
    @classmethod
    def create(
        cls,
        cfg: RunConfig,
        spaces: EnvSpaces,
        worker_id: int,
        shards: Sequence[ShardClient],
        bounds: list[int],
        incarnation: int = 0,
        name: str | None = None,
    ) -> A3CWorkerClient:
        options: dict[str, Any] = {"num_cpus": cfg.topology.worker_cpus, "scheduling_strategy": SPREAD}
        if name:
            options["name"] = name
        handles = [s.handle for s in shards]
        return cls(A3CWorkerActor.options(**options).remote(cfg, spaces, worker_id, handles, bounds, incarnation))

    def __init__(self, handle: Any):
        self.handle = handle

    def ready(self) -> ObjectRef[bool]:
        return self.handle.ready.remote()

    def run(self, max_segments: int | None = None, seconds: float | None = None) -> ObjectRef[WorkerReport]:
        """Push gradients until ``max_segments`` or ``seconds`` (at least one)."""
        return self.handle.run.remote(max_segments, seconds)

    def window(self) -> ObjectRef[WorkerReport]:
        """The a3c topology's unit of work between two reports: WINDOW_S seconds of segments."""
        return self.run(seconds=WINDOW_S)

    def flush(self) -> ObjectRef[WorkerReport]:
        return self.handle.flush.remote()

    def configure(self, pushes_in_flight: int) -> ObjectRef[None]:
        """Pushes the worker may have in flight before it blocks (0: wait for each to be applied)."""
        return self.handle.configure.remote(pushes_in_flight)

    def restart(self) -> ObjectRef[int]:
        return self.handle.restart.remote()

    def recover(self) -> ObjectRef[int]:
        return self.handle.recover.remote()

    def peak_memory_bytes(self) -> ObjectRef[int]:
        return self.handle.peak_memory_bytes.remote()

    def kill(self) -> None:
        ray.kill(self.handle)

"""The in-process backend of raylab.driver.loop: every actor a plain host object in the driver's process, no Ray
(``topology=local``; Sample Factory's serial runner, PufferLib's Serial backend).

The flows of the Ray topologies run unchanged on it. A client calls the same host class a Ray actor wraps
(raylab.remote.hosts) at once, when the flow makes the call: the "ref" it returns is the value (``Done``),
so ``wait`` finds every call in flight done and the loop never sleeps while there is work. Nothing is
pickled or copied on the way: a chunk goes from the rollout worker to the replay (or the learner) as the
same arrays, a replay's batches are drawn while the learner takes them (its prefetch thread overlaps them
with training). The workers take turns, each chunk (A3C: each segment, pushed to in-process shards through
``LocalServerLink`` and applied at once) made as the flow asks for it. No actor dies apart from the
process: an exception raised inside a call propagates from the call, as in any plain Python program.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

import numpy as np

from raylab.config import RunConfig
from raylab.config.policies import policy_config, policy_spaces
from raylab.envs.registry import EnvSpaces
from raylab.params.link import LocalServerLink
from raylab.remote.hosts import (
    A3CWorkerHost,
    EvalHost,
    LearnerHost,
    PPOLearnerHost,
    ReplayHost,
    RolloutHost,
    ShardHost,
    _Host,
)
from raylab.replay.buffer import ReplayStats
from raylab.types import Chunk, EvalResult, LearnerStats, Priorities, RolloutStats, Weights

T = TypeVar("T")
H = TypeVar("H", bound=_Host)


@dataclass(eq=False, slots=True)
class Done(Generic[T]):
    """A call that already ran: its value (identity-hashed, as the loop keys its jobs by ref)."""

    value: T


def value(ref: Any) -> Any:
    return ref.value if isinstance(ref, Done) else ref


class NoDeath(Exception):
    """In one process no actor dies on its own: nothing raises this (the loop's ``ActorDied``)."""


class _Client(Generic[H]):
    def __init__(self, host: H):
        self.host = host

    def ready(self) -> Done[bool]:
        return Done(self.host.ready())

    def life(self) -> Done[int]:
        return Done(self.host.life)

    def wait_back(self, what: str) -> int:
        return self.host.life

    def peak_memory_bytes(self) -> Done[int]:
        return Done(0)  # the driver's own process, which the monitor measures


class RolloutClient(_Client[RolloutHost]):
    def sample(self, weights: Done[Weights] | None) -> tuple[Done[Chunk], Done[RolloutStats]]:
        chunk, stats = self.host.sample(value(weights))
        return Done(chunk), Done(stats)

    def sample_each(self, weights: list[Done[Weights] | None]) -> tuple[list[Done[Chunk]], Done[RolloutStats]]:
        chunks, stats = self.host.sample_policies([value(w) for w in weights])
        return [Done(c) for c in chunks], Done(stats)


class ReplayClient(_Client[ReplayHost]):
    def add(self, chunk: Done[Chunk]) -> Done[tuple[int, dict[str, float], int | None, int]]:
        return Done(self.host.add(chunk.value))

    def update_priorities(self, priorities: Done[Priorities | None]) -> Done[int]:
        return Done(self.host.update_priorities(priorities.value))

    def snapshot(self, path: Path) -> Done[int]:
        return Done(self.host.snapshot(str(path)))

    def restore(self, path: Path) -> Done[int]:
        return Done(self.host.restore(str(path)))

    def sample_many(self, batch_size: int, num_batches: int) -> Done[Any]:
        """Drawn as the learner takes them (ReplayHost.draw): the learner's call follows at once."""
        return Done(self.host.draw(batch_size, num_batches))

    def stats_blocking(self) -> ReplayStats:
        return self.host.stats()


class _Learner(_Client[H]):
    host: Any

    def weights(self) -> Done[Weights]:
        return Done(self.host.get_weights())

    def state_dict_blocking(self) -> dict[str, Any]:
        return self.host.state_dict()

    def state_dict_or_none(self) -> dict[str, Any] | None:
        return self.host.state_dict()

    def load_state_dict(self, state: dict[str, Any] | None, min_version: int = 0) -> Done[int]:
        return Done(self.host.load_state_dict(state, min_version))

    def restore_blocking(self, state: dict[str, Any] | None, min_version: int) -> tuple[int, int]:
        return self.host.load_state_dict(state, min_version), self.host.life


class LearnerClient(_Learner[LearnerHost]):
    def update(self, batches: Done[Any]) -> tuple[Done[LearnerStats], Done[Weights | None], Done[Priorities | None]]:
        stats, weights, priorities = self.host.update(batches.value)
        return Done(stats), Done(weights), Done(priorities)


class PPOLearnerClient(_Learner[PPOLearnerHost]):
    def update(self, chunks: list[Done[Chunk]]) -> tuple[Done[LearnerStats], Done[Weights]]:
        stats, weights = self.host.update(*[c.value for c in chunks])
        return Done(stats), Done(weights)


class EvalClient(_Client[EvalHost]):
    def evaluate(
        self, weights: Done[Weights], episodes: int, confirm_target: float | None = None, confirm_episodes: int = 0
    ) -> Done[EvalResult]:
        return Done(self.host.evaluate(weights.value, episodes, confirm_target, confirm_episodes))

    def evaluate_each(
        self,
        weights: list[Done[Weights]],
        episodes: int,
        confirm_target: float | None = None,
        confirm_episodes: int = 0,
    ) -> Done[EvalResult]:
        return Done(self.host.evaluate_each(episodes, confirm_target, confirm_episodes, *[w.value for w in weights]))


class ShardClient(_Client[ShardHost]):
    def pull(self) -> Done[Any]:
        return Done(self.host.pull(-1))  # a copy of the weights (ParameterServer.pull)

    def load(self, params: np.ndarray, version: int = 0) -> Done[None]:
        self.host.load(params, version)
        return Done(None)

    def stats(self, reset: bool = False) -> Done[Any]:
        return Done(self.host.stats(reset))

    def state_dict(self) -> Done[dict]:
        return Done(self.host.state_dict())

    def load_state_dict(self, state: dict, min_version: int = 0) -> Done[None]:
        self.host.load_state_dict(state, min_version)
        return Done(None)


class A3CWorkerClient(_Client[A3CWorkerHost]):
    def window(self) -> Done[Any]:
        """One segment (its gradient applied at once): the workers take turns, as the serial runner's do."""
        return Done(self.host.run(max_segments=1, seconds=None))

    def flush(self) -> Done[Any]:
        return Done(self.host.flush())

    def recover(self) -> Done[int]:
        return Done(self.host.recover())

    def kill(self) -> None:
        pass


class InProcessBackend:
    ActorDied: type[BaseException] = NoDeath

    def __init__(self, cfg: RunConfig, spaces: EnvSpaces):
        self.cfg, self.spaces = cfg, spaces

    def run(self, required_cpus: float, body: Callable[[], T]) -> T:
        return body()

    # -- the actors: the Ray actors' hosts, in this process -----------------------------------------------
    def evaluator(self) -> EvalClient:
        return EvalClient(EvalHost(self.cfg, self.spaces))

    def rollout(self, worker_id: int, incarnation: int = 0, env_steps: int = 0) -> RolloutClient:
        return RolloutClient(RolloutHost(self.cfg, self.spaces, worker_id, incarnation, env_steps))

    def replay(self, shard: int, policy: str | None = None) -> ReplayClient:
        if policy is None:
            return ReplayClient(ReplayHost(self.cfg, self.spaces, shard))
        return ReplayClient(
            ReplayHost(policy_config(self.cfg, policy), policy_spaces(self.cfg, self.spaces, policy), shard)
        )

    def learner(self, policy: str | None = None) -> LearnerClient:
        cfg = policy_config(self.cfg, policy) if policy is not None else self.cfg
        return LearnerClient(LearnerHost(cfg, self.spaces))

    def ppo_learner(self, policy: str | None = None) -> PPOLearnerClient:
        cfg = policy_config(self.cfg, policy) if policy is not None else self.cfg
        return PPOLearnerClient(PPOLearnerHost(cfg, self.spaces))

    def shard(self, params: np.ndarray, shard: int, name: str) -> ShardClient:
        return ShardClient(ShardHost(self.cfg, params, shard))

    def a3c_worker(
        self, worker_id: int, shards: list[ShardClient], bounds: list[int], incarnation: int, name: str
    ) -> A3CWorkerClient:
        link = LocalServerLink([s.host.server for s in shards], bounds)
        return A3CWorkerClient(A3CWorkerHost(self.cfg, self.spaces, worker_id, link, incarnation))

    # -- the calls: done when made ------------------------------------------------------------------------
    def wait(self, refs: Sequence[Any], timeout: float, every: bool = False) -> list[Any]:
        return list(refs)

    def get(self, ref: Any) -> Any:
        if isinstance(ref, list):
            return [r.value for r in ref]
        return ref.value

    def put(self, value: Any) -> Done[Any]:
        return Done(value)

    def called_died(self, err: BaseException) -> bool:
        return False

    def death_of(self, err: BaseException, client: Any) -> bool:
        return False

    def wait_ready(self, clients: Sequence[Any], what: str) -> None:
        for client in clients:
            client.ready()  # raises a host's deferred user error (a bad config found while building it)

    def placement(self, clients: dict[str, Any]) -> dict[str, str]:
        return {}

    def peak_memory_bytes(self, clients: Sequence[Any]) -> int:
        return 0  # every host is in the driver's process, which the monitor measures itself

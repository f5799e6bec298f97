"""Typed clients for raylab's Ray actors: callers see methods and ObjectRefs, never ``.remote()``.

Calls that move data return refs so the driver can pass them on without fetching (a chunk goes from a
rollout actor to the replay actor; a batch from the replay actor to the learner). Calls whose answer the
caller needs now block and say so in their name.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import ray
from ray import ObjectRef

from raylab.config import RunConfig
from raylab.envs.registry import EnvSpaces
from raylab.errors import RaylabError
from raylab.remote.hosts import EvalHost, LearnerHost, ReplayHost, RolloutHost
from raylab.remote.runtime import SPREAD, actor_class, wait_back
from raylab.replay.buffer import ReplayStats
from raylab.replay.snapshot import latest_periodic_snapshot, load_snapshot
from raylab.types import Batch, Chunk, EvalResult, LearnerStats, Priorities, RolloutStats, Weights


# The Ray actor classes; create them through the clients below, which set their resources.
class _RestartableRolloutHost(RolloutHost):
    """A rollout actor Ray restarts after a crash (topology.max_actor_restarts): the restarted one plays
    fresh env seeds instead of replaying its first episodes."""

    def __init__(self, cfg: RunConfig, spaces: EnvSpaces, worker_id: int, incarnation: int = 0, env_steps: int = 0):
        if self.life:  # set by raylab.remote.runtime before this constructor runs
            # 998..1997: apart from a resume's 1..997, and seed + stride x incarnation stays below 2**31 (EnvPool)
            incarnation = 998 + os.getpid() % 1000
        super().__init__(cfg, spaces, worker_id, incarnation, env_steps)


class _RestartableReplayHost(ReplayHost):
    """A replay shard Ray restarts after a crash: with checkpoint.replay it reloads its newest periodic
    snapshot before answering any call, else it comes back empty; its first ``add`` reply says which."""

    def __init__(self, cfg: RunConfig, spaces: EnvSpaces, shard: int = 0):
        super().__init__(cfg, spaces, shard)
        if self._startup_error is None and self.life:
            self.restored = 0
            snapshot = latest_periodic_snapshot(Path(cfg.run_dir) / "checkpoints", shard)
            if cfg.checkpoint.replay and snapshot is not None:
                try:
                    self.restored = load_snapshot(snapshot, self.replay)
                except RaylabError as err:  # the run goes on with an empty shard, as without snapshots
                    print(f"raylab: replay shard {shard} restarted empty: {err}", flush=True)


RolloutActor = actor_class(_RestartableRolloutHost, name="RolloutHost")
ReplayActor = actor_class(_RestartableReplayHost, name="ReplayHost")
LearnerActor = actor_class(LearnerHost)
EvalActor = actor_class(EvalHost)


class _Client:
    def __init__(self, handle: Any):
        self.handle = handle

    def ready(self) -> ObjectRef[bool]:
        return self.handle.ready.remote()

    def peak_memory_bytes(self) -> ObjectRef[int]:
        return self.handle.peak_memory_bytes.remote()

    def pid(self) -> ObjectRef[int]:
        return self.handle.pid.remote()

    def life(self) -> ObjectRef[int]:
        """Ray's restart count when the actor now answering started (raylab.driver.restarts)."""
        return self.handle.get_life.remote()

    def wait_back(self, what: str) -> int:
        """After a crash Ray restarts this actor: wait for it; returns the life of the one now answering."""
        wait_back(self.ready, what)
        return int(ray.get(self.life()))


class RolloutClient(_Client):
    @classmethod
    def create(
        cls, cfg: RunConfig, spaces: EnvSpaces, worker_id: int, incarnation: int = 0, env_steps: int = 0
    ) -> RolloutClient:
        """``incarnation`` and ``env_steps``: a resumed run's fresh seeds and exploration position."""
        options = {
            "num_cpus": cfg.topology.worker_cpus, "scheduling_strategy": SPREAD,
            "max_restarts": cfg.topology.max_actor_restarts,
        }  # fmt: skip
        handle = RolloutActor.options(**options).remote(cfg, spaces, worker_id, incarnation, env_steps)
        return cls(handle)

    def sample(self, weights: ObjectRef[Weights] | Weights | None) -> tuple[ObjectRef[Chunk], ObjectRef[RolloutStats]]:
        """Start one chunk; ``weights`` (only when newer than the worker's; a ref, or small weights by value)
        is loaded first."""
        chunk, stats = self.handle.sample.options(num_returns=2).remote(weights)
        return chunk, stats

    def sample_each(
        self, weights: list[ObjectRef[Weights] | None]
    ) -> tuple[list[ObjectRef[Chunk]], ObjectRef[RolloutStats]]:
        """Several policies: start one chunk per policy; ``weights[k]`` (None: unchanged) is policy k's."""
        refs = self.handle.sample_each.options(num_returns=len(weights) + 1).remote(*weights)
        return list(refs[:-1]), refs[-1]


class ReplayClient(_Client):
    @classmethod
    def create(cls, cfg: RunConfig, spaces: EnvSpaces, shard: int = 0) -> ReplayClient:
        return cls(
            ReplayActor.options(num_cpus=0, max_restarts=cfg.topology.max_actor_restarts).remote(cfg, spaces, shard)
        )

    def update_priorities(self, priorities: ObjectRef[Priorities | None]) -> ObjectRef[int]:
        return self.handle.update_priorities.remote(priorities)

    def add(self, chunk: ObjectRef[Chunk]) -> ObjectRef[tuple[int, dict[str, float], int | None, int]]:
        return self.handle.add.remote(chunk)

    def snapshot(self, path: Path) -> ObjectRef[int]:
        return self.handle.snapshot.remote(str(path))

    def restore(self, path: Path) -> ObjectRef[int]:
        return self.handle.restore.remote(str(path))

    def sample_many(self, batch_size: int, num_batches: int) -> ObjectRef[list[Batch]]:
        return self.handle.sample_many.remote(batch_size, num_batches)

    def stats_blocking(self) -> ReplayStats:
        return ray.get(self.handle.stats.remote())


class RestorableLearner:
    """What a learner client adds for crash recovery, on top of the three calls below (each client has them)."""

    def ready(self) -> ObjectRef[bool]:
        raise NotImplementedError

    def load_state_dict(self, state: dict[str, Any] | None, min_version: int = 0) -> ObjectRef[int]:
        raise NotImplementedError

    def state_dict_blocking(self) -> dict[str, Any]:
        raise NotImplementedError

    def life(self) -> ObjectRef[int]:
        raise NotImplementedError

    def restore_blocking(self, state: dict[str, Any] | None, min_version: int) -> tuple[int, int]:
        """After a crash Ray restarted this learner: wait for it, then load ``state`` (the latest periodic
        checkpoint's; None: none yet) with versions moving on past ``min_version``. Returns (the version,
        the life of the learner now answering)."""
        wait_back(self.ready, "the learner")
        version, life = ray.get([self.load_state_dict(state, min_version), self.life()])
        return int(version), int(life)

    def state_dict_or_none(self) -> dict[str, Any] | None:
        """The learner's state, or None while it is restarting (no periodic checkpoint then)."""
        try:
            return self.state_dict_blocking()
        except ray.exceptions.RayActorError:
            return None


class LearnerClient(_Client, RestorableLearner):
    @classmethod
    def create(cls, cfg: RunConfig, spaces: EnvSpaces, num_gpus: float) -> LearnerClient:
        options = {
            "num_cpus": cfg.learner.num_cpus,
            "num_gpus": num_gpus,
            "max_restarts": cfg.topology.max_actor_restarts,
        }
        return cls(LearnerActor.options(**options).remote(cfg, spaces))

    def update(
        self, batches: ObjectRef[list[Batch]]
    ) -> tuple[ObjectRef[LearnerStats], ObjectRef[Weights | None], ObjectRef[Priorities | None]]:
        stats, weights, priorities = self.handle.update.options(num_returns=3).remote(batches)
        return stats, weights, priorities

    def weights(self) -> ObjectRef[Weights]:
        return self.handle.get_weights.remote()

    def state_dict_blocking(self) -> dict[str, Any]:
        return ray.get(self.handle.state_dict.remote())

    def load_state_dict(self, state: dict[str, Any] | None, min_version: int = 0) -> ObjectRef[int]:
        return self.handle.load_state_dict.remote(state, min_version)


class EvalClient(_Client):
    @classmethod
    def create(cls, cfg: RunConfig, spaces: EnvSpaces) -> EvalClient:
        """Ray restarts a crashed evaluator (topology.max_actor_restarts), like every other actor."""
        return cls(EvalActor.options(num_cpus=0, max_restarts=cfg.topology.max_actor_restarts).remote(cfg, spaces))

    def evaluate(
        self,
        weights: ObjectRef[Weights],
        episodes: int,
        confirm_target: float | None = None,
        confirm_episodes: int = 0,
    ) -> ObjectRef[EvalResult]:
        return self.handle.evaluate.remote(weights, episodes, confirm_target, confirm_episodes)

    def evaluate_each(
        self,
        weights: list[ObjectRef[Weights]],
        episodes: int,
        confirm_target: float | None = None,
        confirm_episodes: int = 0,
    ) -> ObjectRef[EvalResult]:
        """Several policies: ``weights[k]`` is policy k's."""
        return self.handle.evaluate_each.remote(episodes, confirm_target, confirm_episodes, *weights)

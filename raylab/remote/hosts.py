"""What runs inside each Ray actor: a plain component built by its builder, plus ``ready``/``peak_memory``.

These classes import no Ray themselves; ``raylab.remote.clients`` wraps them with ``ray.remote``.
"""

from __future__ import annotations

import dataclasses
import resource
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from raylab.builders import build_evaluator, build_learner, build_replay, build_rollout_worker
from raylab.config import RunConfig
from raylab.envs.registry import EnvSpaces
from raylab.errors import RaylabError
from raylab.replay.buffer import ReplayStats
from raylab.replay.snapshot import load_snapshot, save_snapshot
from raylab.types import Batch, Chunk, EvalResult, LearnerStats, Priorities, RolloutStats, Weights


def _single_thread_torch() -> None:
    import torch

    torch.set_num_threads(1)


class _Host:
    _startup_error: RaylabError | None = None
    life = 0
    """Ray's restart count when this actor started (raylab.remote.runtime sets it; 0 outside Ray); the
    replies the driver counts restarts by carry it."""

    @contextmanager
    def _deferring_user_errors(self) -> Iterator[None]:
        """Keep a user error from the constructor and raise it from ``ready()``: Ray reports a failed
        constructor as ActorDiedError with only a message, but a failed method keeps the exception itself."""
        try:
            yield
        except RaylabError as err:
            self._startup_error = err

    def ready(self) -> bool:
        if self._startup_error is not None:
            raise self._startup_error
        return True

    def peak_memory_bytes(self) -> int:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


class RolloutHost(_Host):
    def __init__(self, cfg: RunConfig, spaces: EnvSpaces, worker_id: int, incarnation: int = 0, env_steps: int = 0):
        _single_thread_torch()
        with self._deferring_user_errors():
            self.worker = build_rollout_worker(cfg, spaces, worker_id, incarnation, env_steps)

    def sample(self, weights: Weights | None) -> tuple[Chunk, RolloutStats]:
        if weights is not None:
            self.worker.set_weights(weights)
        chunk, stats = self.worker.sample()
        stats.life = self.life
        return chunk, stats


class ReplayHost(_Host):
    def __init__(self, cfg: RunConfig, spaces: EnvSpaces, shard: int = 0):
        with self._deferring_user_errors():
            self.replay = build_replay(cfg, spaces, shard)

    restored: int | None = None
    """Set by a restarted shard (raylab.remote.clients): the transitions it reloaded from its newest
    snapshot (0: none); its next ``add`` reply says so, once."""

    def add(self, chunk: Chunk) -> tuple[int, dict[str, float], int | None, int]:
        """(transitions completed, seconds per replay stage since the last add: add, sample, priority
        update — the driver's per-interval view of this shard's time, riding on a reply it fetches anyway —,
        ``restored``, None unless this is a restarted shard's first reply, and the shard's life)."""
        restored, self.restored = self.restored, None
        return self.replay.add_chunk(chunk), self.replay.interval_timings(), restored, self.life

    def snapshot(self, path: str) -> int:
        """Write this shard's snapshot to ``path`` (raylab.replay.snapshot); returns the transitions saved."""
        save_snapshot(Path(path), self.replay)
        return len(self.replay)

    def restore(self, path: str) -> int:
        """Replace the contents with the snapshot at ``path``; returns the transitions restored."""
        return load_snapshot(Path(path), self.replay)

    def sample_many(self, batch_size: int, num_batches: int) -> list[Batch]:
        """Batches, or none while this shard is still empty (its workers' first chunks are in flight)."""
        if len(self.replay) == 0:
            return []
        return self.replay.sample_many(batch_size, num_batches)

    def update_priorities(self, priorities: Priorities | None) -> int:
        if priorities is None:
            return 0
        return self.replay.update_priorities(priorities.keys, priorities.td_errors)

    def stats(self) -> ReplayStats:
        return self.replay.stats()


class LearnerHost(_Host):
    def __init__(self, cfg: RunConfig, spaces: EnvSpaces):
        with self._deferring_user_errors():
            self.learner = build_learner(cfg, spaces)

    def update(self, batches: list[Batch]) -> tuple[LearnerStats, Weights | None, Priorities | None]:
        """Train on ``batches``: (stats for the driver, new weights only when this call published, the
        batches' new priorities for the replay, which travel to it without passing through the driver)."""
        stats = self.learner.update_many(batches)
        weights = None
        if stats.published:
            start = time.perf_counter()
            weights = self.learner.get_weights()
            stats.timings = {**(stats.timings or {}), "publish_s": time.perf_counter() - start}
        return dataclasses.replace(stats, priorities=None, life=self.life), weights, stats.priorities

    def get_weights(self) -> Weights:
        return self.learner.get_weights()

    def state_dict(self) -> dict:
        return self.learner.state_dict()

    def load_state_dict(self, state: dict | None, min_version: int = 0) -> int:
        """Resume from a checkpoint's learner state (after a restart; None: no checkpoint yet, start fresh).
        Versions never go back: the restored learner continues from ``min_version`` when that is ahead of
        the checkpoint's, so that rollout actors holding newer weights accept its next ones. Returns the
        version."""
        if state is not None:
            self.learner.load_state_dict(state)
        self.learner.version = max(self.learner.version, min_version)
        return self.learner.version


class EvalHost(_Host):
    def __init__(self, cfg: RunConfig, spaces: EnvSpaces):
        _single_thread_torch()
        with self._deferring_user_errors():
            self.evaluator = build_evaluator(cfg, spaces)

    def evaluate(
        self, weights: Weights, episodes: int, confirm_target: float | None = None, confirm_episodes: int = 0
    ) -> EvalResult:
        return self.evaluator.evaluate(weights, episodes, confirm_target, confirm_episodes)

"""What runs inside each actor: a plain component built by its builder, plus ``ready``/``peak_memory``.

These classes import no Ray themselves: ``raylab.remote.clients`` (and ``remote.ppo``, ``remote.a3c``) wrap
them with ``ray.remote``; the in-process backend (raylab.driver.inprocess) calls them directly.
"""

from __future__ import annotations

import dataclasses
import resource
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from raylab.algos.a3c import WorkerReport
from raylab.builders import (
    build_a3c_worker,
    build_evaluator,
    build_learner,
    build_parameter_server,
    build_replay,
    build_rollout_worker,
)
from raylab.config import RunConfig
from raylab.envs.registry import EnvSpaces
from raylab.errors import RaylabError
from raylab.params.link import ServerLink
from raylab.params.server import PushReply, ServerStats
from raylab.replay.buffer import ReplayStats
from raylab.replay.snapshot import load_snapshot, save_snapshot
from raylab.types import Batch, Chunk, EvalResult, LearnerStats, Priorities, RolloutStats, Weights


class _Host:
    _startup_error: RaylabError | None = None
    single_threaded = False
    """In an actor of its own, torch uses one thread (raylab.remote.runtime); in the driver's process (the
    in-process backend) the host leaves torch's threads as they are."""
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
    single_threaded = True

    def __init__(self, cfg: RunConfig, spaces: EnvSpaces, worker_id: int, incarnation: int = 0, env_steps: int = 0):
        with self._deferring_user_errors():
            self.worker = build_rollout_worker(cfg, spaces, worker_id, incarnation, env_steps)

    def sample(self, weights: Weights | None) -> tuple[Chunk, RolloutStats]:
        if weights is not None:
            self.worker.set_weights(weights)
        chunk, stats = self.worker.sample()
        stats.life = self.life
        return chunk, stats

    def sample_each(self, *weights: Weights | None) -> tuple[Chunk | RolloutStats, ...]:
        """Several policies: one Weights (or None: unchanged) per policy in; one chunk per policy, then the
        stats, out (each a return value of its own, so each chunk goes to its learner as its own ref)."""
        chunks, stats = self.sample_policies(list(weights))
        return (*chunks, stats)

    def sample_policies(self, weights: list[Weights | None]) -> tuple[list[Chunk], RolloutStats]:
        """``sample_each`` as (chunks, stats): what the in-process backend calls."""
        if any(w is not None for w in weights):
            self.worker.set_weights(weights)
        chunks, stats = self.worker.sample_each()
        stats.life = self.life
        return chunks, stats


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

    def draw(self, batch_size: int, num_batches: int) -> Iterator[Batch]:
        """``sample_many`` drawn lazily, one batch as the learner takes it: in one process the learner's
        prefetch thread draws batch k + 1 while batch k trains, and no batch is copied."""
        if len(self.replay) == 0:
            return iter(())
        return (self.replay.sample(batch_size) for _ in range(num_batches))

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

    def update(self, batches: Iterable[Batch]) -> tuple[LearnerStats, Weights | None, Priorities | None]:
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


class PPOLearnerHost(_Host):
    def __init__(self, cfg: RunConfig, spaces: EnvSpaces):
        with self._deferring_user_errors():
            self.learner = build_learner(cfg, spaces)

    def update(self, *chunks: Chunk) -> tuple[LearnerStats, Weights]:
        """Train on one round (the chunks arrive as separate refs, resolved by Ray); returns the new weights."""
        stats = self.learner.update_many(list(chunks))
        stats.life = self.life
        return stats, self.learner.get_weights()

    def get_weights(self) -> Weights:
        return self.learner.get_weights()

    def state_dict(self) -> dict:
        return self.learner.state_dict()

    def load_state_dict(self, state: dict | None, min_version: int = 0) -> int:
        """Resume from a checkpoint's learner state (None: none yet, start fresh); versions never go back,
        so that rollout actors holding newer weights accept the next ones. Returns the version."""
        if state is not None:
            self.learner.load_state_dict(state)
        self.learner.version = max(self.learner.version, min_version)
        return self.learner.version


class EvalHost(_Host):
    single_threaded = True

    def __init__(self, cfg: RunConfig, spaces: EnvSpaces):
        with self._deferring_user_errors():
            self.evaluator = build_evaluator(cfg, spaces)

    def evaluate(
        self, weights: Weights, episodes: int, confirm_target: float | None = None, confirm_episodes: int = 0
    ) -> EvalResult:
        return self.evaluator.evaluate(weights, episodes, confirm_target, confirm_episodes)

    def evaluate_each(
        self, episodes: int, confirm_target: float | None, confirm_episodes: int, *weights: Weights
    ) -> EvalResult:
        """Several policies: one Weights per policy (each its own argument, resolved by Ray)."""
        return self.evaluator.evaluate(list(weights), episodes, confirm_target, confirm_episodes)


class ShardHost(_Host):
    """One parameter-server shard (A3C)."""

    single_threaded = True

    def __init__(self, cfg: RunConfig, params: np.ndarray, shard: int):
        with self._deferring_user_errors():
            self.server = build_parameter_server(cfg, params, shard)

    def push(self, grad: np.ndarray, version: int, sent_at: float) -> PushReply:
        return self.server.push(grad, version, sent_at)

    def pull(self, known_version: int) -> PushReply | None:
        return self.server.pull(known_version)

    def load(self, params: np.ndarray, version: int = 0) -> None:
        self.server.load(params, version)

    def stats(self, reset: bool = False) -> ServerStats:
        return self.server.stats(reset)

    def state_dict(self) -> dict:
        return self.server.state_dict()

    def load_state_dict(self, state: dict, min_version: int = 0) -> None:
        self.server.load_state_dict(state, min_version)


class A3CWorkerHost(_Host):
    """A self-driven A3C worker pushing to the shards through ``link`` (raylab.params.link)."""

    single_threaded = True

    def __init__(self, cfg: RunConfig, spaces: EnvSpaces, worker_id: int, link: ServerLink, incarnation: int):
        with self._deferring_user_errors():
            self.worker = build_a3c_worker(cfg, spaces, worker_id, link, incarnation)

    def run(self, max_segments: int | None, seconds: float | None) -> WorkerReport:
        return self.worker.run(max_segments, seconds)

    def flush(self) -> WorkerReport:
        return self.worker.flush()

    def configure(self, pushes_in_flight: int) -> None:
        if pushes_in_flight < 0:
            raise ValueError(f"pushes_in_flight must be >= 0, got {pushes_in_flight}")
        self.worker.pushes_in_flight = pushes_in_flight

    def restart(self) -> int:
        """Start over from the server's current weights (after the shards were reloaded)."""
        return self.worker.restart()

    def recover(self) -> int:
        """The server was restored after a shard's crash: drop outstanding pushes; returns how many."""
        return self.worker.recover()

"""ReplayBuffer = RingStorage + RingWriter + a sampler (uniform or prioritized), fed chunks through an NStepAdder.

With ``frame_stack > 1`` and image observations the buffer stores frames once (``raylab.replay.frames``):
``obs``/``next_obs`` columns hold frame ids and stacks are rebuilt when a batch is read.

With a ``SequenceLayout`` (R2D2: algo=dqn with model.recurrent) the items are sequences instead of transitions
(raylab/replay/sequences.py): the same ring, samplers, keys, priorities, de-duplication and snapshots, with a
SequenceAdder and ``SequenceBatch`` batches; priorities are per sequence.

Items are addressed by *key*, the insert number: item ``key`` lives in slot ``key % capacity`` while it is
stored. Batches carry keys, so a priority update that arrives after its item was overwritten (the learner
is a call or two behind the replay) is recognised and dropped instead of landing on the newer item.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import psutil

from raylab.errors import ConfigError
from raylab.metrics.timing import StageTimer
from raylab.replay.adder import NStepAdder
from raylab.replay.frames import ID_DTYPE, FrameDedup, FramePool
from raylab.replay.prioritized import PrioritizedSampler
from raylab.replay.sampler import UniformSampler
from raylab.replay.sequences import SEQUENCE_FIELDS, SequenceAdder, Sequences
from raylab.replay.storage import RingStorage
from raylab.replay.writer import RingWriter
from raylab.types import Batch, Chunk, SequenceBatch, Transitions

DEDUP_POOL_SLACK = 1.05
"""Frames allocated up front per transition of capacity with de-duplication (the pool grows if needed)."""


@dataclass
class ReplayStats:
    size: int
    capacity: int
    inserted: int
    sampled: int
    inserted_by_worker: dict[int, int]
    nbytes: int
    priority_updates: int = 0
    stale_priority_updates: int = 0
    """Updates dropped because their item had been overwritten before the update arrived."""
    frames: int = 0
    """Frames stored (with de-duplication; 0 without)."""
    shards: int = 1
    timings: dict[str, float] = field(default_factory=dict)
    """Seconds spent adding chunks, sampling batches and updating priorities, since the start."""

    @property
    def bytes_per_transition(self) -> float:
        """Memory allocated per transition of capacity (everything: frames, ids, scalars, priorities)."""
        return self.nbytes / max(1, self.capacity)

    @property
    def frames_per_transition(self) -> float:
        """Frames stored per stored transition (de-duplication; 0 without it)."""
        return self.frames / max(1, self.size)

    def report(self) -> dict[str, Any]:
        """benchmark_metrics.json's ``replay`` section."""
        return {
            "size": self.size,
            "capacity": self.capacity,
            "inserted": self.inserted,
            "sampled": self.sampled,
            "inserted_by_worker": {str(k): v for k, v in sorted(self.inserted_by_worker.items())},
            "nbytes": self.nbytes,
            "bytes_per_transition": round(self.bytes_per_transition, 1),
            "frames": self.frames,
            "frames_per_transition": round(self.frames_per_transition, 4),
            "shards": self.shards,
            "priority_updates": self.priority_updates,
            "stale_priority_updates": self.stale_priority_updates,
            "timings": self.timings,
        }

    @classmethod
    def merge(cls, shards: list[ReplayStats]) -> ReplayStats:
        """One view of K replay shards: counts added up, workers' inserts combined."""
        by_worker: Counter[int] = Counter()
        for s in shards:
            by_worker.update(s.inserted_by_worker)
        return cls(
            size=sum(s.size for s in shards),
            capacity=sum(s.capacity for s in shards),
            inserted=sum(s.inserted for s in shards),
            sampled=sum(s.sampled for s in shards),
            inserted_by_worker=dict(by_worker),
            nbytes=sum(s.nbytes for s in shards),
            priority_updates=sum(s.priority_updates for s in shards),
            stale_priority_updates=sum(s.stale_priority_updates for s in shards),
            frames=sum(s.frames for s in shards),
            shards=sum(s.shards for s in shards),
            timings={k: sum(s.timings.get(k, 0.0) for s in shards) for k in {k for s in shards for k in s.timings}},
        )


@dataclass(frozen=True)
class PrioritizedSpec:
    alpha: float = 0.6
    beta: float = 0.4
    beta_final: float = 1.0
    beta_anneal_inserts: int = 0
    """Anneal beta linearly to ``beta_final`` over this many inserted transitions (0 = fixed beta)."""
    eps: float = 1e-6

    def beta_at(self, inserted: int) -> float:
        if self.beta_anneal_inserts <= 0:
            return self.beta
        frac = min(1.0, inserted / self.beta_anneal_inserts)
        return self.beta + frac * (self.beta_final - self.beta)


@dataclass(frozen=True)
class SequenceLayout:
    """R2D2's replay items: sequences of ``burn_in + trace`` steps starting every ``period`` steps of an episode,
    each with the recurrent state (``state_size`` floats) the policy acted from at its start."""

    burn_in: int
    trace: int
    period: int
    state_size: int

    @property
    def length(self) -> int:
        return self.burn_in + self.trace

    def items(self, steps: int) -> int:
        """Sequences that hold about ``steps`` env steps (each step starts about 1 / period of them)."""
        return max(1, steps // self.period)


def dedup_applies(obs_shape: tuple[int, ...], obs_dtype: np.dtype, frame_stack: int) -> bool:
    """Frame de-duplication needs stacked channel-first uint8 images: (k * C, H, W) with k > 1."""
    images = len(obs_shape) == 3 and np.dtype(obs_dtype) == np.uint8
    return frame_stack > 1 and images and obs_shape[0] % frame_stack == 0


def require_dedup_applies(obs_shape: tuple[int, ...], obs_dtype: np.dtype, frame_stack: int) -> None:
    if not dedup_applies(obs_shape, obs_dtype, frame_stack):
        raise ConfigError(
            f"replay.frame_dedup=true needs stacked uint8 images (env.frame_stack > 1), got {obs_shape} "
            f"{np.dtype(obs_dtype)} with frame_stack={frame_stack}: set replay.frame_dedup=auto"
        )


def bytes_per_transition(obs_shape: tuple[int, ...], obs_dtype: np.dtype, frame_stack: int, dedup: bool) -> float:
    """Replay memory per stored transition: two observations, or about one frame with de-duplication."""
    scalars = 8 + 8 + 4 + 4 + 8  # key, action, reward, discount, priority leaf
    obs_bytes = int(np.prod(obs_shape, dtype=np.int64)) * np.dtype(obs_dtype).itemsize
    if dedup:
        return DEDUP_POOL_SLACK * (obs_bytes / frame_stack + 4 + 4) + 2 * frame_stack * ID_DTYPE.itemsize + scalars
    return 2 * obs_bytes + scalars


def bytes_per_sequence(
    obs_shape: tuple[int, ...], obs_dtype: np.dtype, frame_stack: int, dedup: bool, layout: SequenceLayout
) -> float:
    """Replay memory per stored sequence: m + 1 observations (m + 1 id rows and ``period`` new frames with
    de-duplication), m actions and rewards, the start state and the scalars."""
    m = layout.length
    scalars = 8 + 8 + 2 + 2 + 1 + 4 * layout.state_size + m * (8 + 4)  # key, priority, burn_in, length, ...
    obs_bytes = int(np.prod(obs_shape, dtype=np.int64)) * np.dtype(obs_dtype).itemsize
    if dedup:
        frames = DEDUP_POOL_SLACK * layout.period * (obs_bytes / frame_stack + 4 + 4)
        return frames + (m + 1) * frame_stack * ID_DTYPE.itemsize + scalars
    return (m + 1) * obs_bytes + scalars


def check_fits_in_memory(
    capacity: int,
    obs_shape: tuple[int, ...],
    obs_dtype: np.dtype,
    frame_stack: int = 1,
    dedup: bool = False,
    sequence: SequenceLayout | None = None,
) -> None:
    """ConfigError when ``capacity`` transitions (with ``sequence``: env steps, held as sequences) would not fit
    in 90 % of the memory available now."""
    if sequence is not None:
        needed = sequence.items(capacity) * bytes_per_sequence(obs_shape, obs_dtype, frame_stack, dedup, sequence)
    else:
        needed = capacity * bytes_per_transition(obs_shape, obs_dtype, frame_stack, dedup)
    check_bytes_fit(capacity, needed)


def check_bytes_fit(capacity: int, needed: float) -> None:
    """ConfigError when ``needed`` bytes (``capacity`` transitions) would not fit in 90 % of the memory available."""
    available = psutil.virtual_memory().available
    if needed > 0.9 * available:
        raise ConfigError(
            f"replay.capacity={capacity} needs {needed / 2**30:.1f} GiB but {available / 2**30:.1f} GiB "
            f"is available: lower replay.capacity"
        )


class ReplayBuffer:
    """n-step transitions (or R2D2's sequences) in preallocated ring storage, sampled uniformly or by priority.

    ``capacity`` counts items: transitions, or with ``sequence`` sequences (SequenceLayout.items of the env
    steps they should hold)."""

    def __init__(
        self,
        capacity: int,
        obs_shape: tuple[int, ...],
        obs_dtype: np.dtype,
        n_step: int,
        gamma: float,
        seed: int,
        prioritized: PrioritizedSpec | None = None,
        frame_stack: int = 1,
        dedup: bool = False,
        timer: StageTimer | None = None,
        sequence: SequenceLayout | None = None,
    ):
        obs_dtype = np.dtype(obs_dtype)
        if dedup:
            require_dedup_applies(obs_shape, obs_dtype, frame_stack)
        steps = capacity * sequence.period if sequence is not None else capacity
        check_fits_in_memory(steps, obs_shape, obs_dtype, frame_stack, dedup, sequence)
        self.capacity = int(capacity)
        self.sequence = sequence
        self.dedup: FrameDedup | None = None
        obs_spec: tuple[tuple[int, ...], np.dtype] = (tuple(obs_shape), obs_dtype)
        if dedup:
            frame_shape = (obs_shape[0] // frame_stack, *obs_shape[1:])
            pool = FramePool(frame_shape, obs_dtype, int(DEDUP_POOL_SLACK * steps) + 64)
            self.dedup = FrameDedup(pool, frame_stack, n_step if sequence is None else sequence.length)
            obs_spec = ((frame_stack,), ID_DTYPE)
        self.fields: tuple[str, ...] = _FIELDS
        self.id_columns: tuple[str, ...] = ("obs", "next_obs")
        """The columns that hold frame ids with de-duplication."""
        specs: dict[str, tuple[tuple[int, ...], np.dtype]] = {
            "obs": obs_spec,
            "actions": ((), np.dtype(np.int64)),
            "rewards": ((), np.dtype(np.float32)),
            "discounts": ((), np.dtype(np.float32)),
            "next_obs": obs_spec,
        }
        if sequence is not None:
            m = sequence.length
            self.fields, self.id_columns = SEQUENCE_FIELDS, ("obs",)
            specs = {
                "obs": ((m + 1, *obs_spec[0]), obs_spec[1]),
                "actions": ((m,), np.dtype(np.int64)),
                "rewards": ((m,), np.dtype(np.float32)),
                "state": ((sequence.state_size,), np.dtype(np.float32)),
                "burn_in": ((), np.dtype(np.int16)),
                "length": ((), np.dtype(np.int16)),
                "terminal": ((), np.dtype(bool)),
            }
        self.storage = RingStorage(capacity, specs)
        self.keys = np.full(capacity, -1, np.int64)
        """The key of the item in each slot (-1: empty)."""
        self.writer = RingWriter(capacity)
        self.prioritized = prioritized
        self.uniform = UniformSampler(seed)
        self.per = (
            PrioritizedSampler(capacity, prioritized.alpha, prioritized.eps, seed) if prioritized is not None else None
        )
        self.adder: NStepAdder | SequenceAdder = (
            NStepAdder(n_step, gamma)
            if sequence is None
            else SequenceAdder(sequence.burn_in, sequence.trace, sequence.state_size)
        )
        self.sampled = 0
        self.priority_updates = 0
        self.stale_priority_updates = 0
        self.inserted_by_worker: Counter[int] = Counter()
        self.timer = timer if timer is not None else StageTimer()
        self._timings: Counter[str] = Counter()

    def __len__(self) -> int:
        return self.writer.size

    # -- writing -------------------------------------------------------------------------------------------
    def add_chunk(self, chunk: Chunk) -> int:
        """Add a worker's chunk; returns how many transitions it completed."""
        with self.timer.stage("add_s"):
            if self.dedup is not None:
                count = self.add(self.adder.add(self.dedup.encode(chunk)))
                self.dedup.release(chunk.worker_id)
            else:
                count = self.add(self.adder.add(chunk))
        self.inserted_by_worker[chunk.worker_id] += count
        return count

    def add(self, items: Transitions | Sequences) -> int:
        """Store transitions, or sequences (with de-duplication, their observations are frame ids)."""
        count = len(items)
        if count == 0:
            return 0
        columns = {f: getattr(items, f) for f in self.fields}
        if count > self.capacity:  # only the newest ``capacity`` would survive: store just those
            columns = {f: v[-self.capacity :] for f, v in columns.items()}
            count = self.capacity
        first_key = self.writer.total  # key % capacity == slot, since the writer's cursor is total % capacity
        indices = self.writer.next_indices(count)
        if self.dedup is not None:
            pool = self.dedup.pool
            for name in self.id_columns:
                pool.incref(columns[name])
            evicted = indices[self.keys[indices] >= 0]
            if evicted.size:
                for name in self.id_columns:
                    pool.decref(self.storage.columns[name][evicted])
        self.storage.write(indices, columns)
        self.keys[indices] = first_key + np.arange(count)
        if self.per is not None:
            self.per.on_insert(indices)
        return count

    # -- reading -------------------------------------------------------------------------------------------
    def sample(self, batch_size: int) -> Batch | SequenceBatch:
        return self.sample_many(batch_size, 1)[0]

    def sample_many(self, batch_size: int, num_batches: int) -> list[Batch | SequenceBatch]:
        """``num_batches`` batches gathered in one pass (one Ray call feeds many learner updates)."""
        with self.timer.stage("sample_s"):
            return self._sample_many(batch_size, num_batches)

    def _sample_many(self, batch_size: int, num_batches: int) -> list[Batch | SequenceBatch]:
        count = batch_size * num_batches
        weights: np.ndarray | None = None
        if self.per is not None and self.prioritized is not None:
            # one stratified draw per batch, so each batch's importance weights are normalised on their own
            draws = [
                self.per.sample(len(self), batch_size, self.prioritized.beta_at(self.writer.total))
                for _ in range(num_batches)
            ]
            indices = np.concatenate([d[0] for d in draws])
            weights = np.concatenate([d[1] for d in draws])
        else:
            indices = self.uniform.sample(len(self), count)
        self.sampled += count
        columns = self.storage.read(indices)
        if self.dedup is not None:
            for name in self.id_columns:
                columns[name] = self.dedup.pool.gather(columns[name])
        keys = self.keys[indices]
        kind: type[Batch] | type[SequenceBatch] = Batch if self.sequence is None else SequenceBatch
        return [
            kind(
                **{k: v[i * batch_size : (i + 1) * batch_size] for k, v in columns.items()},
                indices=keys[i * batch_size : (i + 1) * batch_size],
                weights=None if weights is None else weights[i * batch_size : (i + 1) * batch_size],
            )
            for i in range(num_batches)
        ]

    def update_priorities(self, keys: np.ndarray, td_errors: np.ndarray) -> int:
        """New |TD errors| for sampled items (by key); returns how many were still stored and updated."""
        if self.per is None:
            return 0
        with self.timer.stage("priority_update_s"):
            return self._update_priorities(keys, td_errors)

    def _update_priorities(self, keys: np.ndarray, td_errors: np.ndarray) -> int:
        assert self.per is not None
        keys = np.asarray(keys, np.int64)
        slots = keys % self.capacity
        current = self.keys[slots] == keys
        self.per.update(slots[current], np.asarray(td_errors)[current])
        updated = int(current.sum())
        self.priority_updates += updated
        self.stale_priority_updates += len(keys) - updated
        return updated

    # -- snapshots (raylab.replay.snapshot) -----------------------------------------------------------------
    def state_arrays(self) -> dict[str, np.ndarray]:
        """Everything stored, as plain arrays (no pickle): slots ``[0, size)``, keys, the writer, priorities,
        samplers' RNG states, counters and, with de-duplication, the frame pool. Not the workers' n-step
        carries or frame holds: a restored buffer starts each worker's stream afresh."""
        size = len(self)
        out: dict[str, np.ndarray] = {
            "capacity": np.array(self.capacity, np.int64),
            "writer": np.array([self.writer.cursor, self.writer.size, self.writer.total], np.int64),
            "keys": self.keys[:size],
            "counters": np.array([self.sampled, self.priority_updates, self.stale_priority_updates], np.int64),
            "inserted_by_worker": np.array(sorted(self.inserted_by_worker.items()), np.int64).reshape(-1, 2),
            "rng_uniform": np.array(json.dumps(self.uniform.rng.bit_generator.state)),
        }
        for name, col in self.storage.columns.items():
            out[f"storage_{name}"] = col[:size]
        if self.per is not None:
            out["per_nodes"] = self.per.tree.nodes
            out["per_max_priority"] = np.array(self.per.max_priority, np.float64)
            out["rng_per"] = np.array(json.dumps(self.per.rng.bit_generator.state))
        if self.dedup is not None:
            out["frames"] = self.dedup.pool.frames
        return out

    def load_state_arrays(self, arrays: Mapping[str, np.ndarray]) -> int:
        """Replace this buffer's contents with ``state_arrays()`` of a buffer of the same configuration
        (raylab.replay.snapshot checks that first, with messages naming the setting); returns the
        transitions restored."""
        if int(arrays["capacity"]) != self.capacity or (self.per is not None) != ("per_nodes" in arrays):
            raise ValueError("the snapshot's capacity or sampler differs from this buffer's")
        for name, col in self.storage.columns.items():
            if f"storage_{name}" not in arrays:
                raise ConfigError(
                    f"the replay snapshot holds no {name}: it was made with{'out' if self.sequence else ''} "
                    "model.recurrent (R2D2's sequences): resume with the model it was made with"
                )
            saved = arrays[f"storage_{name}"]
            if saved.shape[1:] != col.shape[1:] or saved.dtype != col.dtype:
                raise ConfigError(
                    f"the replay snapshot's {name} are {saved.dtype}{list(saved.shape[1:])}, this run stores "
                    f"{col.dtype}{list(col.shape[1:])}: resume with the env the snapshot was made with"
                )
        cursor, size, total = (int(v) for v in arrays["writer"])
        self.writer.cursor, self.writer.size, self.writer.total = cursor, size, total
        self.keys[:] = -1
        self.keys[:size] = arrays["keys"]
        for name, col in self.storage.columns.items():
            col[:size] = arrays[f"storage_{name}"]
        self.sampled, self.priority_updates, self.stale_priority_updates = (int(v) for v in arrays["counters"])
        self.inserted_by_worker = Counter({int(w): int(n) for w, n in arrays["inserted_by_worker"]})
        self.uniform.rng.bit_generator.state = json.loads(str(arrays["rng_uniform"]))
        if self.per is not None:
            self.per.tree.nodes[:] = arrays["per_nodes"]
            self.per.max_priority = float(arrays["per_max_priority"])
            self.per.rng.bit_generator.state = json.loads(str(arrays["rng_per"]))
        if self.dedup is not None:
            self.dedup.restore(arrays["frames"], *(self.storage.columns[c][:size] for c in self.id_columns))
        if isinstance(self.adder, NStepAdder):  # no worker's carry survives
            self.adder = NStepAdder(self.adder.n, self.adder.gamma)
        else:
            old = self.adder
            self.adder = SequenceAdder(old.burn_in, old.length - old.burn_in, old.state_size)
        return size

    # -- accounting ----------------------------------------------------------------------------------------
    @property
    def nbytes(self) -> int:
        total = self.storage.nbytes + self.keys.nbytes
        if self.dedup is not None:
            total += self.dedup.pool.nbytes
        if self.per is not None:
            total += self.per.tree.nodes.nbytes
        return total

    def stats(self) -> ReplayStats:
        return ReplayStats(
            size=len(self),
            capacity=self.capacity,
            inserted=self.writer.total,
            sampled=self.sampled,
            inserted_by_worker=dict(self.inserted_by_worker),
            nbytes=self.nbytes,
            priority_updates=self.priority_updates,
            stale_priority_updates=self.stale_priority_updates,
            frames=self.dedup.pool.live if self.dedup is not None else 0,
            timings=self.timings(),
        )

    def timings(self) -> dict[str, float]:
        """Cumulative seconds per replay stage."""
        self.interval_timings()
        return dict(self._timings)

    def interval_timings(self) -> dict[str, float]:
        """Seconds per replay stage since the last call (the driver's per-interval view; also summed into
        ``timings()``)."""
        out = self.timer.pop()
        self._timings.update(out)
        return out


_FIELDS = ("obs", "actions", "rewards", "discounts", "next_obs")

"""ReplayBuffer = RingStorage + RingWriter + UniformSampler, fed chunks through an NStepAdder."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np
import psutil

from raylab.errors import ConfigError
from raylab.replay.adder import NStepAdder
from raylab.replay.sampler import UniformSampler
from raylab.replay.storage import RingStorage
from raylab.replay.writer import RingWriter
from raylab.types import Batch, Chunk, Transitions


@dataclass
class ReplayStats:
    size: int
    capacity: int
    inserted: int
    sampled: int
    inserted_by_worker: dict[int, int]
    nbytes: int


def check_fits_in_memory(capacity: int, obs_shape: tuple[int, ...], obs_dtype: np.dtype) -> None:
    """ConfigError when ``capacity`` transitions would not fit in 90 % of the memory available now."""
    per_item = 2 * int(np.prod(obs_shape, dtype=np.int64)) * np.dtype(obs_dtype).itemsize + 8 + 4 + 4
    needed, available = capacity * per_item, psutil.virtual_memory().available
    if needed > 0.9 * available:
        raise ConfigError(
            f"replay.capacity={capacity} needs {needed / 2**30:.1f} GiB but {available / 2**30:.1f} GiB "
            f"is available: lower replay.capacity"
        )


class ReplayBuffer:
    """n-step transitions in preallocated ring storage, sampled uniformly."""

    def __init__(
        self,
        capacity: int,
        obs_shape: tuple[int, ...],
        obs_dtype: np.dtype,
        n_step: int,
        gamma: float,
        seed: int,
    ):
        obs_dtype = np.dtype(obs_dtype)
        check_fits_in_memory(capacity, obs_shape, obs_dtype)
        self.storage = RingStorage(
            capacity,
            {
                "obs": (obs_shape, obs_dtype),
                "actions": ((), np.dtype(np.int64)),
                "rewards": ((), np.dtype(np.float32)),
                "discounts": ((), np.dtype(np.float32)),
                "next_obs": (obs_shape, obs_dtype),
            },
        )
        self.writer = RingWriter(capacity)
        self.sampler = UniformSampler(seed)
        self.adder = NStepAdder(n_step, gamma)
        self.sampled = 0
        self.inserted_by_worker: Counter[int] = Counter()

    def __len__(self) -> int:
        return self.writer.size

    def add_chunk(self, chunk: Chunk) -> int:
        """Add a worker's chunk; returns how many transitions it completed."""
        count = self.add(self.adder.add(chunk))
        self.inserted_by_worker[chunk.worker_id] += count
        return count

    def add(self, transitions: Transitions) -> int:
        count = len(transitions)
        if count:
            indices = self.writer.next_indices(count)
            self.storage.write(indices, vars(transitions))
        return count

    def sample(self, batch_size: int) -> Batch:
        indices = self.sampler.sample(len(self), batch_size)
        self.sampled += batch_size
        return Batch(**self.storage.read(indices), indices=indices)

    def sample_many(self, batch_size: int, num_batches: int) -> list[Batch]:
        """``num_batches`` batches gathered in one pass (one Ray call feeds many learner updates)."""
        indices = self.sampler.sample(len(self), batch_size * num_batches)
        self.sampled += batch_size * num_batches
        columns = self.storage.read(indices)
        return [
            Batch(**{k: v[i * batch_size : (i + 1) * batch_size] for k, v in columns.items()},
                  indices=indices[i * batch_size : (i + 1) * batch_size])
            for i in range(num_batches)
        ]  # fmt: skip

    def stats(self) -> ReplayStats:
        return ReplayStats(
            size=len(self),
            capacity=self.storage.capacity,
            inserted=self.writer.total,
            sampled=self.sampled,
            inserted_by_worker=dict(self.inserted_by_worker),
            nbytes=self.storage.nbytes,
        )

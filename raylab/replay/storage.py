"""Preallocated column storage: one numpy array per field, written and read by index."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np


class RingStorage:
    """``capacity`` rows of fixed-shape fields, allocated once (uint8 stays uint8)."""

    def __init__(self, capacity: int, specs: Mapping[str, tuple[tuple[int, ...], np.dtype]]):
        self.capacity = int(capacity)
        self.columns = {name: np.zeros((self.capacity, *shape), dtype) for name, (shape, dtype) in specs.items()}

    @property
    def nbytes(self) -> int:
        return sum(col.nbytes for col in self.columns.values())

    def write(self, indices: np.ndarray, values: Mapping[str, np.ndarray]) -> None:
        for name, col in self.columns.items():
            col[indices] = values[name]

    def read(self, indices: np.ndarray) -> dict[str, np.ndarray]:
        return {name: col[indices] for name, col in self.columns.items()}

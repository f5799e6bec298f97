"""Which slots new items go to: a ring that overwrites the oldest items first."""

from __future__ import annotations

import numpy as np


class RingWriter:
    def __init__(self, capacity: int):
        self.capacity = int(capacity)
        self.cursor = 0
        self.size = 0
        self.total = 0
        """Items ever written."""

    def next_indices(self, count: int) -> np.ndarray:
        """Slots for ``count`` new items (if count > capacity, only the last ``capacity`` survive)."""
        indices = (self.cursor + np.arange(count)) % self.capacity
        self.cursor = int((self.cursor + count) % self.capacity)
        self.size = min(self.capacity, self.size + count)
        self.total += count
        return indices

"""Which stored items a batch takes."""

from __future__ import annotations

import numpy as np


class UniformSampler:
    """Uniform with replacement over the ``size`` stored items."""

    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)

    def sample(self, size: int, count: int) -> np.ndarray:
        if size <= 0:
            raise ValueError("cannot sample from an empty replay")
        return self.rng.integers(0, size, count)

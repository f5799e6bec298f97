"""A cheap per-stage timer: ``with timer.stage("env"): ...`` accumulates seconds per stage name."""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager


class StageTimer:
    """Accumulates wall seconds per named stage until ``pop()`` hands them over and starts again."""

    def __init__(self) -> None:
        self._seconds: defaultdict[str, float] = defaultdict(float)

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self._seconds[name] += time.perf_counter() - start

    def add(self, name: str, seconds: float) -> None:
        self._seconds[name] += seconds

    def pop(self) -> dict[str, float]:
        out = dict(self._seconds)
        self._seconds.clear()
        return out

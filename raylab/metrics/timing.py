"""A cheap per-stage timer: ``with timer.stage("env"): ...`` accumulates seconds per stage name.

Every actor keeps one (rollout: env/inference/weight_sync/wait, learner: update/batch_wait/publish/wait,
replay: add/sample/priority_update, A3C: push/sync/wait on the server lock ...) and hands its seconds to
the driver with each result; the driver sums them per report interval and turns them into shares of the
interval (raylab/driver/progress.py).

Cost: a stage is one bound-method call and two ``perf_counter`` reads, about 0.3 µs here (a generator-based
``contextlib.contextmanager`` costs about 1.0 µs; benchmarks/timer_overhead.json has both). With
``enabled=False`` (``logger.timing=false``) every stage is one shared no-op object: the end-to-end cost of
timing on against off is in the same JSON.
"""

from __future__ import annotations

import time
from collections import defaultdict
from typing import Any

_now = time.perf_counter


class _Stage:
    """The context manager of one stage name; reused, so entering a stage allocates nothing."""

    __slots__ = ("_name", "_seconds", "_start")

    def __init__(self, seconds: defaultdict[str, float], name: str):
        self._seconds = seconds
        self._name = name
        self._start = 0.0

    def __enter__(self) -> None:
        self._start = _now()

    def __exit__(self, *exc: Any) -> None:
        self._seconds[self._name] += _now() - self._start


class _NoStage:
    __slots__ = ()

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc: Any) -> None:
        pass


_NO_STAGE = _NoStage()


class StageTimer:
    """Accumulates wall seconds per named stage until ``pop()`` hands them over and starts again.

    Stages of one timer must not nest under the same name (each name has one start time).
    ``enabled=False`` turns every call into a no-op and ``pop()`` returns ``{}``.
    """

    def __init__(self, enabled: bool = True) -> None:
        self.enabled = enabled
        self._seconds: defaultdict[str, float] = defaultdict(float)
        self._stages: dict[str, _Stage] = {}

    def stage(self, name: str) -> _Stage | _NoStage:
        if not self.enabled:
            return _NO_STAGE
        stage = self._stages.get(name)
        if stage is None:
            stage = self._stages[name] = _Stage(self._seconds, name)
        return stage

    def add(self, name: str, seconds: float) -> None:
        if self.enabled:
            self._seconds[name] += seconds

    def pop(self) -> dict[str, float]:
        out = dict(self._seconds)
        self._seconds.clear()
        return out


class GapTimer:
    """Seconds between the end of one call and the start of the next: how long a component sat waiting
    for another one (a rollout actor for the driver to hand it its next chunk, a learner for its next
    batches). ``begin()`` at the top of each call returns the gap since the last ``end()``, once (0 the
    first time, and for a second call that begins before the next ``end()``)."""

    def __init__(self) -> None:
        self._ended: float | None = None

    def begin(self) -> float:
        if self._ended is None:
            return 0.0
        gap = _now() - self._ended
        self._ended = None
        return gap

    def end(self) -> None:
        self._ended = _now()

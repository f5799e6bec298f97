"""Samples-per-insert rate limiting (Reverb's SampleToInsertRatio), as a plain class the driver consults."""

from __future__ import annotations


class SamplesPerInsertLimiter:
    """Keeps ``samples ~= samples_per_insert * (inserts - min_size)`` within ``error_buffer`` samples.

    The learner may sample only once ``min_size`` items were inserted and while it is not ahead of the target
    by more than ``error_buffer``; actors may insert until ``min_size`` is reached and then while the learner
    would not fall behind by more than ``error_buffer``. ``samples_per_insert = 0`` turns limiting off (both
    sides run free). Deadlock-free when
    ``error_buffer >= (sample_request + samples_per_insert * insert_request) / 2``; see ``min_error_buffer``.
    """

    def __init__(self, samples_per_insert: float, min_size: int, error_buffer: float):
        self.samples_per_insert = float(samples_per_insert)
        self.min_size = int(min_size)
        self.error_buffer = float(error_buffer)
        self.inserts = 0
        self.samples = 0

    @staticmethod
    def min_error_buffer(samples_per_insert: float, sample_request: int, insert_request: int) -> float:
        return (sample_request + samples_per_insert * insert_request) / 2.0

    def _deficit(self, extra_inserts: int = 0) -> float:
        """Samples the learner is behind its target (negative when ahead)."""
        return self.samples_per_insert * (self.inserts + extra_inserts - self.min_size) - self.samples

    def can_sample(self, count: int) -> bool:
        if self.inserts < self.min_size:
            return False
        if self.samples_per_insert == 0:
            return True
        return self._deficit() + self.error_buffer >= count

    def can_insert(self, count: int) -> bool:
        if self.samples_per_insert == 0 or self.inserts < self.min_size:
            return True
        return self._deficit(count) <= self.error_buffer

    def credit_restored(self, count: int) -> None:
        """``count`` transitions are already stored (a restored replay snapshot): they count toward
        ``min_size`` but earn the learner no samples, so learning resumes at once without a burst on old data."""
        self.min_size = max(0, self.min_size - int(count))

    def record_insert(self, count: int) -> None:
        self.inserts += count

    def record_sample(self, count: int) -> None:
        self.samples += count

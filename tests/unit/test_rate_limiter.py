"""Samples-per-insert limiter: the ratio holds within the error buffer, and it can never deadlock."""

import numpy as np

from raylab.replay import SamplesPerInsertLimiter


def test_learner_waits_for_min_size_then_follows_the_ratio():
    lim = SamplesPerInsertLimiter(samples_per_insert=4, min_size=100, error_buffer=64)
    assert not lim.can_sample(32)
    lim.record_insert(100)
    assert lim.can_sample(32) and lim.can_sample(64) and not lim.can_sample(65)
    lim.record_sample(64)
    assert not lim.can_sample(1)
    lim.record_insert(16)  # target now 4 * 16 = 64 samples
    assert lim.can_sample(64)


def test_actors_wait_when_the_learner_falls_behind():
    lim = SamplesPerInsertLimiter(samples_per_insert=4, min_size=100, error_buffer=64)
    assert lim.can_insert(10_000)  # filling up to min_size is never limited
    lim.record_insert(100)
    assert lim.can_insert(16) and not lim.can_insert(17)
    lim.record_sample(64)
    assert lim.can_insert(32)


def test_zero_ratio_disables_limiting():
    lim = SamplesPerInsertLimiter(samples_per_insert=0, min_size=10, error_buffer=0)
    lim.record_insert(10)
    lim.record_sample(10**9)
    assert lim.can_sample(10**9) and lim.can_insert(10**9)


def test_random_schedules_never_deadlock_and_keep_the_ratio():
    rng = np.random.default_rng(0)
    for _ in range(50):
        spi = float(rng.choice([0.5, 1, 4, 16]))
        sample_req, insert_req = int(rng.integers(1, 512)), int(rng.integers(1, 256))
        buffer = SamplesPerInsertLimiter.min_error_buffer(spi, sample_req, insert_req)
        lim = SamplesPerInsertLimiter(spi, int(rng.integers(1, 1000)), buffer)
        for _ in range(2000):
            can_s, can_i = lim.can_sample(sample_req), lim.can_insert(insert_req)
            assert can_s or can_i, "deadlock"
            if can_s and (not can_i or rng.random() < 0.5):
                lim.record_sample(sample_req)
            else:
                lim.record_insert(insert_req)
            if lim.inserts >= lim.min_size:
                deficit = spi * (lim.inserts - lim.min_size) - lim.samples
                assert -buffer - 1e-9 <= deficit <= buffer + spi * insert_req + 1e-9

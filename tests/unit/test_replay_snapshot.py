"""Replay snapshots (checkpoint.replay): a buffer written and read back is the same buffer, for uniform,
prioritized and frame-de-duplicated replay; anything that does not fit is refused in one line, untouched."""

from __future__ import annotations

import numpy as np
import pytest

from raylab.errors import ConfigError, RaylabError
from raylab.replay import ReplayBuffer
from raylab.replay.buffer import PrioritizedSpec
from raylab.replay.rate_limiter import SamplesPerInsertLimiter
from raylab.replay.snapshot import check_snapshot, latest_periodic_snapshot, load_snapshot, save_snapshot
from tests.unit.test_frames import StackedEnvs, live_ids_are_exactly_the_referenced, stored
from tests.unit.test_replay import chunks_of, make_stream


def vector_buffer(seed=0, capacity=100, prioritized=False):
    spec = PrioritizedSpec(beta_anneal_inserts=500) if prioritized else None
    return ReplayBuffer(capacity, (1,), np.dtype(np.float32), n_step=3, gamma=0.9, seed=seed, prioritized=spec)


def filled(buffer, steps=120, envs=2):
    """Chunks from two workers (the ring wraps), a few batches sampled, priorities updated when prioritized."""
    for w in range(2):
        for chunk in chunks_of(make_stream(steps, envs, w), 10, worker_id=w):
            buffer.add_chunk(chunk)
    for batch in buffer.sample_many(16, 3):
        buffer.update_priorities(batch.indices, np.linspace(0.1, 3.0, len(batch)))
    return buffer


def assert_same_batches(a, b, rounds=3):
    for _ in range(rounds):
        for x, y in zip(a.sample_many(8, 4), b.sample_many(8, 4), strict=True):
            for field in ("obs", "actions", "rewards", "discounts", "next_obs", "indices", "weights"):
                xv, yv = getattr(x, field), getattr(y, field)
                if xv is None:
                    assert yv is None
                else:
                    np.testing.assert_array_equal(xv, yv, err_msg=field)


@pytest.mark.parametrize("prioritized", [False, True])
def test_a_restored_buffer_samples_exactly_what_the_original_would(tmp_path, prioritized):
    original = filled(vector_buffer(prioritized=prioritized))
    path = save_snapshot(tmp_path / "replay_0_step_000000000100.npz", original)
    restored = vector_buffer(seed=99, prioritized=prioritized)  # another seed: the RNG state comes from the file
    assert load_snapshot(path, restored) == len(original) == 100
    a, b = original.stats(), restored.stats()
    assert (a.size, a.inserted, a.sampled, a.inserted_by_worker) == (
        b.size,
        b.inserted,
        b.sampled,
        b.inserted_by_worker,
    )
    assert a.priority_updates == b.priority_updates > 0 if prioritized else True
    np.testing.assert_array_equal(original.keys, restored.keys)
    assert_same_batches(original, restored)
    # it goes on: new chunks get the next keys, overwrite the oldest slots, and sampling still agrees
    # (the restored adder has no carry: each worker's first n - 1 steps after the restore are not completed)
    more = chunks_of(make_stream(20, 2, 7), 10, worker_id=5)
    for chunk in more:
        original.add_chunk(chunk)
        restored.add_chunk(chunk)
    np.testing.assert_array_equal(original.keys, restored.keys)
    assert_same_batches(original, restored)


def test_a_restored_dedup_buffer_keeps_its_frames_and_frees_the_streams_holds(tmp_path):
    k, frame = 4, (1, 6, 6)

    def dedup_buffer():
        return ReplayBuffer(200, (k, 6, 6), np.dtype(np.uint8), n_step=3, gamma=0.9, seed=0, frame_stack=k, dedup=True)

    original = dedup_buffer()
    envs = [StackedEnvs(3, k, frame, end_prob=0.1, seed=s) for s in range(2)]
    for seq in range(15):  # 2 x 15 x 8 x 3 = 720 steps: the ring wraps
        for w, env in enumerate(envs):
            original.add_chunk(env.chunk(8, w, seq))
    assert original.dedup._workers  # streams hold frames the stored transitions do not use (yet)
    path = save_snapshot(tmp_path / "replay_0_final.npz", original)
    restored = dedup_buffer()
    load_snapshot(path, restored)
    for key, column in stored(original).items():
        np.testing.assert_array_equal(column, stored(restored)[key], err_msg=key)
    assert live_ids_are_exactly_the_referenced(restored) and not restored.dedup._workers
    assert restored.dedup.pool.live < original.dedup.pool.live  # the holds went back to the free list
    assert_same_batches(original, restored)
    for seq in range(15, 25):  # new streams on the restored pool: references stay exact as the ring wraps
        for w, env in enumerate(envs):
            restored.add_chunk(env.chunk(8, w, seq))
        assert live_ids_are_exactly_the_referenced(restored)


def test_a_snapshot_that_does_not_fit_is_refused_in_one_line_and_changes_nothing(tmp_path):
    path = save_snapshot(tmp_path / "replay_0_step_000000000100.npz", filled(vector_buffer()))
    target = filled(vector_buffer(seed=3), steps=30)
    before = target.state_arrays()
    with pytest.raises(ConfigError, match=r"capacity 100, this run's is 50: set replay\.capacity"):
        load_snapshot(path, vector_buffer(capacity=50))
    with pytest.raises(ConfigError, match=r"another replay\.kind or replay\.frame_dedup"):
        load_snapshot(path, vector_buffer(prioritized=True))
    with pytest.raises(ConfigError, match="capacity 100, this run's is 50"):
        check_snapshot(path, 50, prioritized=False, dedup=False)
    check_snapshot(path, 100, prioritized=False, dedup=False)  # fits: no error
    corrupt = tmp_path / "replay_0_step_000000000200.npz"
    corrupt.write_bytes(path.read_bytes()[: len(path.read_bytes()) // 2])
    with pytest.raises(RaylabError, match=r"is corrupt .*checkpoint\.replay=false"):
        load_snapshot(corrupt, target)
    with pytest.raises(RaylabError, match=r"is corrupt"):
        check_snapshot(corrupt, 100, prioritized=False, dedup=False)
    flipped = tmp_path / "replay_0_step_000000000300.npz"  # whole, with bytes changed inside the arrays
    data = bytearray(path.read_bytes())
    data[len(data) // 2 : len(data) // 2 + 64] = bytes(64)
    flipped.write_bytes(bytes(data))
    with pytest.raises(RaylabError, match=r"is corrupt \(BadZipFile\)"):
        load_snapshot(flipped, target)
    with pytest.raises(RaylabError, match="does not exist"):
        load_snapshot(tmp_path / "nothing.npz", target)
    after = target.state_arrays()
    assert set(before) == set(after)
    for key in before:
        np.testing.assert_array_equal(before[key], after[key], err_msg=key)


def test_the_latest_periodic_snapshot_is_the_highest_step_of_that_shard(tmp_path):
    assert latest_periodic_snapshot(tmp_path, 0) is None
    for name in ("replay_0_step_000000000100.npz", "replay_0_step_000000002000.npz", "replay_1_step_000000009000.npz",
                 "replay_0_final.npz", ".replay_0_step_000000009999.npz.tmp1"):  # fmt: skip
        (tmp_path / name).write_bytes(b"")
    assert latest_periodic_snapshot(tmp_path, 0).name == "replay_0_step_000000002000.npz"
    assert latest_periodic_snapshot(tmp_path, 1).name == "replay_1_step_000000009000.npz"


def test_restored_transitions_count_toward_min_size_but_earn_no_samples():
    limiter = SamplesPerInsertLimiter(samples_per_insert=2.0, min_size=1000, error_buffer=64)
    assert not limiter.can_sample(32)
    limiter.credit_restored(5000)
    assert limiter.can_sample(64) and not limiter.can_sample(65)  # the error buffer, not 2 x 5000
    limiter.record_insert(100)
    assert limiter.can_sample(264) and not limiter.can_sample(265)

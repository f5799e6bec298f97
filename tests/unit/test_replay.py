"""Replay pieces alone and composed: storage, writer, sampler, n-step adder, buffer."""

import numpy as np
import pytest

from raylab.errors import ConfigError
from raylab.replay import NStepAdder, ReplayBuffer, RingStorage, RingWriter, UniformSampler
from raylab.types import Chunk, Transitions


def test_writer_wraps_around_and_counts():
    writer = RingWriter(5)
    np.testing.assert_array_equal(writer.next_indices(3), [0, 1, 2])
    np.testing.assert_array_equal(writer.next_indices(4), [3, 4, 0, 1])
    assert (writer.size, writer.cursor, writer.total) == (5, 2, 7)


def test_storage_keeps_dtypes_and_shapes():
    storage = RingStorage(4, {"obs": ((2, 3), np.dtype(np.uint8)), "r": ((), np.dtype(np.float32))})
    storage.write(np.array([1, 3]), {"obs": np.full((2, 2, 3), 7, np.uint8), "r": np.array([1.5, 2.5])})
    out = storage.read(np.array([3, 1, 0]))
    assert out["obs"].dtype == np.uint8 and out["obs"].shape == (3, 2, 3)
    np.testing.assert_array_equal(out["r"], [2.5, 1.5, 0.0])
    assert storage.nbytes == 4 * 6 + 4 * 4


def test_uniform_sampler_stays_in_range_and_covers_it():
    idx = UniformSampler(0).sample(10, 10_000)
    assert idx.min() == 0 and idx.max() == 9
    counts = np.bincount(idx, minlength=10)
    assert counts.min() > 850 and counts.max() < 1150
    with pytest.raises(ValueError):
        UniformSampler(0).sample(0, 1)


# -- the n-step adder against a brute-force reference ------------------------------------------------------


def make_stream(steps, envs, seed):
    """A long random experience stream; every observation is unique so transitions can be traced."""
    rng = np.random.default_rng(seed)
    obs = (np.arange((steps + 1) * envs, dtype=np.float32).reshape(steps + 1, envs, 1)) + 1.0
    rewards = rng.standard_normal((steps, envs)).astype(np.float32)
    term = rng.random((steps, envs)) < 0.08
    trunc = (rng.random((steps, envs)) < 0.08) & ~term
    finals = {(t, e): -obs[t + 1, e] for t, e in zip(*np.nonzero(trunc), strict=True)}
    return obs, rewards, term, trunc, finals


def chunks_of(stream, length, worker_id=0, seq0=0):
    obs, rewards, term, trunc, finals = stream
    out = []
    for k, start in enumerate(range(0, rewards.shape[0] - length + 1, length)):
        end = start + length
        idx = [(t, e) for (t, e) in sorted(finals) if start <= t < end]
        out.append(Chunk(
            obs=obs[start : end + 1], actions=np.tile(np.arange(start, end)[:, None], (1, obs.shape[1])),
            rewards=rewards[start:end], terminated=term[start:end], truncated=trunc[start:end],
            final_obs=np.array([finals[i] for i in idx], np.float32).reshape(-1, 1),
            final_index=np.array([(t - start, e) for t, e in idx], np.int64).reshape(-1, 2),
            policy_version=0, worker_id=worker_id, seq=seq0 + k,
        ))  # fmt: skip
    return out


def reference(stream, n, gamma, num_targets):
    obs, rewards, term, trunc, finals = stream
    rows = []
    for t in range(num_targets):
        for e in range(rewards.shape[1]):
            ret, k, discount, nxt = 0.0, 0, None, None
            while k < n:
                ret += gamma**k * rewards[t + k, e]
                k += 1
                if term[t + k - 1, e]:
                    discount, nxt = 0.0, obs[t + k, e]
                    break
                if trunc[t + k - 1, e]:
                    discount, nxt = gamma**k, finals[(t + k - 1, e)]
                    break
            if discount is None:
                discount, nxt = gamma**n, obs[t + n, e]
            rows.append((obs[t, e, 0], t, ret, discount, nxt[0]))
    return rows


def rows_of(transitions: list[Transitions]):
    out = []
    for tr in transitions:
        for i in range(len(tr)):
            out.append((tr.obs[i, 0], tr.actions[i], tr.rewards[i], tr.discounts[i], tr.next_obs[i, 0]))
    return out


@pytest.mark.parametrize(("n", "chunk_len"), [(1, 5), (3, 5), (3, 2), (5, 3), (4, 16)])
def test_adder_matches_brute_force_across_chunk_boundaries(n, chunk_len):
    gamma, envs = 0.9, 3
    stream = make_stream(48, envs, seed=n * 100 + chunk_len)
    adder = NStepAdder(n, gamma)
    got = rows_of([adder.add(c) for c in chunks_of(stream, chunk_len)])
    covered = 48 // chunk_len * chunk_len  # steps that made it into whole chunks
    expected = reference(stream, n, gamma, num_targets=covered - n + 1)
    assert len(got) == len(expected)
    for g, e in zip(got, expected, strict=True):
        assert g[0] == e[0] and g[1] == e[1]  # same start obs and action
        assert g[2] == pytest.approx(e[2], rel=1e-5, abs=1e-5)
        assert g[3] == pytest.approx(e[3], rel=1e-6)
        if e[3] > 0:
            assert g[4] == e[4]  # bootstrap obs (the final obs after a truncation)


def test_adder_keeps_workers_apart_and_drops_a_broken_stream():
    adder = NStepAdder(3, 0.9)
    a = chunks_of(make_stream(16, 2, 1), 8, worker_id=0)
    b = chunks_of(make_stream(16, 2, 2), 8, worker_id=1)
    sizes = [len(adder.add(c)) for c in (a[0], b[0], a[1], b[1])]
    assert sizes == [6 * 2, 6 * 2, 8 * 2, 8 * 2]
    restarted = chunks_of(make_stream(16, 2, 3), 8, worker_id=0, seq0=0)  # seq restarts at 0
    assert len(adder.add(restarted[0])) == 6 * 2
    assert adder.dropped_streams == 1


# -- the composed buffer -----------------------------------------------------------------------------------


def test_buffer_adds_chunks_and_samples_batches():
    buffer = ReplayBuffer(100, (1,), np.dtype(np.float32), n_step=2, gamma=0.9, seed=0)
    for c in chunks_of(make_stream(40, 2, 0), 10, worker_id=3):
        buffer.add_chunk(c)
    assert len(buffer) == (40 - 1) * 2
    assert buffer.stats().inserted_by_worker == {3: 78}
    b = buffer.sample(32)
    assert b.obs.shape == (32, 1) and b.actions.dtype == np.int64 and len(b) == 32
    many = buffer.sample_many(8, 4)
    assert len(many) == 4 and all(len(x) == 8 for x in many)
    assert buffer.stats().sampled == 64


def test_buffer_overwrites_oldest_when_full():
    buffer = ReplayBuffer(10, (1,), np.dtype(np.float32), n_step=1, gamma=0.9, seed=0)
    for c in chunks_of(make_stream(30, 1, 0), 10):
        buffer.add_chunk(c)
    assert len(buffer) == 10
    assert sorted(buffer.storage.columns["actions"].tolist()) == list(range(20, 30))


def test_buffer_keeps_uint8_frames_uint8():
    buffer = ReplayBuffer(16, (2, 4, 4), np.dtype(np.uint8), n_step=1, gamma=0.9, seed=0)
    assert buffer.storage.columns["obs"].dtype == np.uint8
    assert buffer.stats().nbytes == 16 * (2 * 32 + 8 + 4 + 4 + 8)  # two frames, action, reward, discount, key


def test_replay_that_cannot_fit_in_memory_is_a_config_error():
    with pytest.raises(ConfigError, match=r"lower replay\.capacity"):
        ReplayBuffer(10**12, (4, 84, 84), np.dtype(np.uint8), n_step=1, gamma=0.9, seed=0)

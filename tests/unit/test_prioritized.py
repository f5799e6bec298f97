"""Sum tree and proportional prioritized sampling: prefix sums, empirical frequencies, importance weights."""

from __future__ import annotations

import numpy as np
import pytest

from raylab.replay.prioritized import PrioritizedSampler, SumTree


@pytest.mark.parametrize("capacity", [1, 4, 5, 100])
def test_total_and_find_follow_prefix_sums(capacity):
    tree = SumTree(capacity)
    p = np.arange(1, capacity + 1, dtype=np.float64)
    tree.set(np.arange(capacity), p)
    assert tree.total == pytest.approx(p.sum())
    edges = np.concatenate([[0.0], np.cumsum(p)])
    # a value just inside each leaf's range lands on that leaf
    values = np.concatenate([edges[:-1] + 1e-9, edges[1:] - 1e-9])
    expected = np.concatenate([np.arange(capacity), np.arange(capacity)])
    assert np.array_equal(tree.find(values), expected)
    assert tree.find(np.array([p.sum() * (1 + 1e-12)]))[0] == capacity - 1  # rounding past the total


def test_updates_with_repeats_keep_the_last_and_parents_agree():
    tree = SumTree(6)
    tree.set(np.array([0, 1, 2, 3, 4, 5]), np.ones(6))
    tree.set(np.array([2, 4, 2]), np.array([5.0, 7.0, 3.0]))
    assert np.allclose(tree.get(np.arange(6)), [1, 1, 3, 1, 7, 1])
    assert tree.total == pytest.approx(14.0)
    internal = np.arange(1, tree.leaves)
    assert np.allclose(tree.nodes[internal], tree.nodes[2 * internal] + tree.nodes[2 * internal + 1])


def test_zero_priority_leaves_are_never_found():
    tree = SumTree(8)
    tree.set(np.arange(8), np.array([0, 2, 0, 0, 1, 0, 0, 0], np.float64))
    found = tree.find(np.linspace(0, tree.total, 1001))
    assert set(found.tolist()) == {1, 4}


def test_bad_updates_are_refused():
    tree = SumTree(4)
    with pytest.raises(IndexError):
        tree.set(np.array([4]), np.array([1.0]))
    with pytest.raises(ValueError):
        tree.set(np.array([0]), np.array([-1.0]))
    with pytest.raises(ValueError):
        tree.set(np.array([0]), np.array([np.nan]))


def test_empirical_frequencies_follow_priorities():
    rng = np.random.default_rng(1)
    n, alpha = 50, 0.7
    sampler = PrioritizedSampler(64, alpha=alpha, eps=0.0, seed=2)
    td = rng.uniform(0.01, 3.0, n)
    sampler.update(np.arange(n), td)
    draws = np.concatenate([sampler.sample(n, 256, beta=0.5)[0] for _ in range(800)])  # 204,800 draws
    freq = np.bincount(draws, minlength=64)[:n] / draws.size
    expected = td**alpha / (td**alpha).sum()
    assert np.bincount(draws, minlength=64)[n:].sum() == 0  # empty slots are never drawn
    assert np.abs(freq - expected).max() < 0.003
    # chi-square against the priorities: 49 degrees of freedom, 99.9 % quantile is about 85
    counts = freq * draws.size
    chi2 = ((counts - expected * draws.size) ** 2 / (expected * draws.size)).sum()
    assert chi2 < 85


def test_importance_weights_are_normalised_n_p_to_the_minus_beta():
    sampler = PrioritizedSampler(16, alpha=1.0, eps=0.0, seed=0)
    td = np.array([1.0, 2.0, 3.0, 4.0, 10.0, 0.5, 0.5, 1.0])
    sampler.update(np.arange(8), td)
    indices, weights = sampler.sample(8, 32, beta=0.4)
    probs = td[indices] / td.sum()
    expected = (8 * probs) ** -0.4
    assert np.allclose(weights, expected / expected.max(), rtol=1e-6)
    assert weights.dtype == np.float32 and weights.max() == pytest.approx(1.0)
    _, uniform = sampler.sample(8, 32, beta=0.0)
    assert np.all(uniform == 1.0)  # beta = 0: no correction


def test_new_items_enter_with_the_largest_priority_seen():
    sampler = PrioritizedSampler(8, alpha=0.5, eps=0.0)
    sampler.update(np.array([0, 1]), np.array([4.0, 9.0]))
    sampler.on_insert(np.array([2]))
    assert sampler.tree.get(np.array([2]))[0] == pytest.approx(9.0**0.5)


def test_draws_are_stratified_over_the_batch():
    """One draw per equal slice of the total: with equal priorities, a batch of N covers all N items."""
    sampler = PrioritizedSampler(32, alpha=1.0, eps=0.0)
    sampler.update(np.arange(32), np.ones(32))
    indices, _ = sampler.sample(32, 32, beta=0.4)
    assert sorted(indices.tolist()) == list(range(32))


# -- wired into the ReplayBuffer ------------------------------------------------------------------------------


def _transitions(n, start=0):
    from raylab.types import Transitions

    obs = np.arange(start, start + n, dtype=np.float32).reshape(n, 1)
    return Transitions(obs, np.zeros(n, np.int64), np.zeros(n, np.float32), np.ones(n, np.float32), obs + 0.5)


def _prioritized_buffer(capacity, alpha=1.0, beta=1.0, anneal=0):
    from raylab.replay import ReplayBuffer
    from raylab.replay.buffer import PrioritizedSpec

    spec = PrioritizedSpec(alpha=alpha, beta=beta, beta_final=1.0, beta_anneal_inserts=anneal)
    return ReplayBuffer(capacity, (1,), np.dtype(np.float32), n_step=1, gamma=0.9, seed=0, prioritized=spec)


def test_buffer_samples_by_the_learners_td_errors_and_weights_them():
    buffer = _prioritized_buffer(10, alpha=1.0, beta=1.0)
    buffer.add(_transitions(10))
    keys = np.arange(10)
    td = np.arange(1, 11, dtype=np.float64)
    assert buffer.update_priorities(keys, -td) == 10  # the sign of a TD error does not matter
    batches = buffer.sample_many(100, 200)
    drawn = np.concatenate([b.obs[:, 0] for b in batches]).astype(int)
    freq = np.bincount(drawn, minlength=10) / len(drawn)
    np.testing.assert_allclose(freq, td / td.sum(), atol=0.006)
    for b in batches[:5]:  # w_i = (N P(i))^-1 / max: with beta 1 the weight is inversely proportional to td
        expected = (1.0 / td[b.obs[:, 0].astype(int)]) / (1.0 / td[b.obs[:, 0].astype(int)]).max()
        np.testing.assert_allclose(b.weights, expected, rtol=1e-5)
        np.testing.assert_array_equal(b.indices, b.obs[:, 0].astype(int))  # keys are insert numbers


def test_updates_for_overwritten_items_are_dropped():
    buffer = _prioritized_buffer(4)
    buffer.add(_transitions(4))
    stale = buffer.sample(4).indices.copy()
    buffer.add(_transitions(2, start=4))  # keys 4, 5 overwrite slots 0, 1 (keys 0, 1)
    updated = buffer.update_priorities(np.array([0, 1, 2, 3]), np.full(4, 100.0))
    assert updated == 2 and buffer.stats().stale_priority_updates == 2
    slots = np.array([0, 1])
    # new items entered at the max priority seen before the update (1.0), not the stale update's 100
    np.testing.assert_allclose(buffer.per.tree.get(slots), 1.0)
    assert set(stale.tolist()) <= {0, 1, 2, 3}


def test_new_items_enter_at_the_largest_priority_and_beta_anneals():
    buffer = _prioritized_buffer(8, alpha=0.5, beta=0.4, anneal=100)
    buffer.add(_transitions(4))
    buffer.update_priorities(np.arange(4), np.array([0.0, 3.0, 8.0, 1.0]))
    buffer.add(_transitions(1, start=4))
    assert buffer.per.tree.get(np.array([4]))[0] == pytest.approx((8.0 + 1e-6) ** 0.5)
    assert buffer.prioritized.beta_at(0) == 0.4
    assert buffer.prioritized.beta_at(50) == pytest.approx(0.7)
    assert buffer.prioritized.beta_at(10_000) == 1.0

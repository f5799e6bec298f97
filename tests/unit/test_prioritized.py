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

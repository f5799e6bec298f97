"""Prioritized sampling (Schaul et al. 2016) on an array-backed sum tree, vectorized with numpy.

Every operation works on a whole batch of indices at once: a batch of B updates touches B leaves and then each
tree level once (``np.unique`` of the parents), and a batch of B draws walks all B root-to-leaf paths in
lock-step, one numpy operation per level. There is no Python loop over items, which is what makes a sum tree
cheap enough to sit behind a replay actor serving batches of 512.
"""

from __future__ import annotations

import numpy as np


class SumTree:
    """Sums of non-negative priorities over ``capacity`` leaves; finds the leaf where a prefix sum falls.

    Node 1 is the root, node k has children 2k and 2k+1; leaf i is node ``leaves + i`` (the leaf count is
    padded to a power of two, so all leaves are at one depth and padding leaves stay 0).
    """

    def __init__(self, capacity: int):
        if capacity < 1:
            raise ValueError(f"capacity must be >= 1, got {capacity}")
        self.capacity = capacity
        self.leaves = 1 << max(capacity - 1, 0).bit_length()
        self.nodes = np.zeros(2 * self.leaves, np.float64)

    @property
    def total(self) -> float:
        return float(self.nodes[1])

    def get(self, indices: np.ndarray) -> np.ndarray:
        return self.nodes[np.asarray(indices, np.int64) + self.leaves]

    def set(self, indices: np.ndarray, priorities: np.ndarray) -> None:
        """Set leaves; with repeated indices the last value wins (as in a sequence of single updates)."""
        indices = np.asarray(indices, np.int64)
        priorities = np.broadcast_to(np.asarray(priorities, np.float64), indices.shape)
        if indices.size == 0:
            return
        if indices.min() < 0 or indices.max() >= self.capacity:
            raise IndexError(f"indices must be in [0, {self.capacity})")
        if not np.all(np.isfinite(priorities)) or priorities.min() < 0:
            raise ValueError("priorities must be finite and >= 0")
        # last occurrence of each index: unique over the reversed array keeps the first of the reversal
        _, last = np.unique(indices[::-1], return_index=True)
        keep = indices.size - 1 - last
        nodes = indices[keep] + self.leaves
        self.nodes[nodes] = priorities[keep]
        parents = np.unique(nodes // 2)
        while parents.size and parents[-1] >= 1:
            self.nodes[parents] = self.nodes[2 * parents] + self.nodes[2 * parents + 1]
            if parents[0] == 1:
                break
            parents = np.unique(parents // 2)

    def find(self, values: np.ndarray) -> np.ndarray:
        """Leaf index for each prefix-sum value in [0, total): the i with sum(p[:i]) <= v < sum(p[:i+1]).

        A value at or past the total (float rounding) lands on the last leaf with a non-zero priority; a
        zero-priority leaf is never returned while the total is positive.
        """
        v = np.asarray(values, np.float64).copy()
        node = np.ones(v.shape, np.int64)
        while self.leaves > 1 and node.size and node[0] < self.leaves:
            left = 2 * node
            left_sum = self.nodes[left]
            right_sum = self.nodes[left + 1]
            go_right = ((v >= left_sum) & (right_sum > 0)) | (left_sum <= 0)
            v = np.where(go_right, v - left_sum, v)
            node = np.where(go_right, left + 1, left)
        return node - self.leaves


class PrioritizedSampler:
    """Proportional prioritized replay: P(i) = p_i^alpha / sum_k p_k^alpha, p_i = |TD error_i| + eps.

    New items enter with the largest priority seen so far, so each is sampled at least about once before the
    learner has scored it. Draws are stratified (one uniform value in each of B equal slices of the total),
    which lowers the variance of a batch's composition. Importance weights w_i = (N P(i))^-beta are
    normalised by the batch's largest weight, as in Acme's DQN, so they only ever scale a loss down.
    """

    def __init__(self, capacity: int, alpha: float = 0.6, eps: float = 1e-6, seed: int = 0):
        if not 0.0 <= alpha <= 1.0:
            raise ValueError(f"alpha must be in [0, 1], got {alpha}")
        self.tree = SumTree(capacity)
        self.alpha = alpha
        self.eps = eps
        self.max_priority = 1.0
        self.rng = np.random.default_rng(seed)

    def on_insert(self, indices: np.ndarray) -> None:
        """Slots just (over)written by new items: they get the largest priority seen so far."""
        self.tree.set(indices, self.max_priority**self.alpha)

    def update(self, indices: np.ndarray, td_errors: np.ndarray) -> None:
        """The learner's new |TD errors| for items it sampled."""
        priorities = np.abs(np.asarray(td_errors, np.float64)) + self.eps
        self.max_priority = max(self.max_priority, float(priorities.max(initial=0.0)))
        self.tree.set(indices, priorities**self.alpha)

    def sample(self, size: int, batch_size: int, beta: float) -> tuple[np.ndarray, np.ndarray]:
        """``batch_size`` indices among the first ``size`` slots, and their importance weights (float32)."""
        total = self.tree.total
        if size < 1 or total <= 0:
            raise ValueError("cannot sample from an empty prioritized replay")
        bounds = np.arange(batch_size, dtype=np.float64) / batch_size
        values = (bounds + self.rng.random(batch_size) / batch_size) * total
        indices = self.tree.find(values)
        probs = self.tree.get(indices) / total
        weights = (size * probs) ** -beta
        return indices, (weights / weights.max()).astype(np.float32)

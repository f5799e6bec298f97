"""The returns computed on a CPU, where the data is, in NumPy and without torch: n-step targets (DQN/Ape-X; once
per transition, in the replay that completes it) and bootstrapped segment returns (an A3C worker's short
segment, on its own core). A learner's targets (GAE, V-trace, the bootstrap fix-up before env crashes) run in
torch on its device: raylab.algos.advantages.

All functions work on time-major ``[T, E]`` arrays.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class NStepTargets:
    """For each start step t (and env e) of an n-step window.

    ``returns[t]``     sum_{k < K} gamma^k r[t + k], K = steps until the window or the episode ends (<= n)
    ``discounts[t]``   gamma^K, or 0 when the episode terminated inside the window
    ``lengths[t]``     K
    ``truncated[t]``   the window ended because the episode was truncated at step t + K - 1
    ``valid[t]``       False when the window reached a ``cut`` step (an env crash): drop that target
    The bootstrap observation is obs[t + K], except after a truncation, where it is that episode's last
    observation (the env already reset).
    """

    returns: np.ndarray
    discounts: np.ndarray
    lengths: np.ndarray
    truncated: np.ndarray
    valid: np.ndarray


def n_step_targets(
    rewards: np.ndarray,
    terminated: np.ndarray,
    truncated: np.ndarray,
    gamma: float,
    n: int,
    num_targets: int,
    cut: np.ndarray | None = None,
) -> NStepTargets:
    """n-step targets for the first ``num_targets`` steps of ``[L, E]`` sequences (needs L >= num_targets + n - 1).

    A window stops at the first step that ends an episode, so returns never mix episodes. ``cut`` marks steps
    without a real outcome (an env crashed there); targets whose window reaches one are marked invalid.
    """
    length = rewards.shape[0]
    if num_targets + n - 1 > length:
        raise ValueError(f"need {num_targets + n - 1} steps for {num_targets} {n}-step targets, got {length}")
    shape = (num_targets, *rewards.shape[1:])
    returns = np.zeros(shape, np.float32)
    steps = np.zeros(shape, np.int64)
    alive = np.ones(shape, bool)
    ended_terminal = np.zeros(shape, bool)
    ended_truncated = np.zeros(shape, bool)
    invalid = np.zeros(shape, bool)
    for k in range(n):
        window = slice(k, k + num_targets)
        returns += np.where(alive, (gamma**k) * rewards[window], 0.0).astype(np.float32)
        steps += alive
        term, trunc = terminated[window], truncated[window]
        if cut is not None:
            invalid |= alive & cut[window]
        ended_terminal |= alive & term
        ended_truncated |= alive & trunc & ~term
        alive &= ~(term | trunc)
    discounts = np.where(ended_terminal, 0.0, np.power(gamma, steps)).astype(np.float32)
    return NStepTargets(returns, discounts, steps, ended_truncated & ~invalid, ~invalid)


def bootstrapped_returns(
    rewards: np.ndarray, terminated: np.ndarray, truncated: np.ndarray, bootstrap: np.ndarray, gamma: float
) -> np.ndarray:
    """A3C's n-step returns over a ``[T, E]`` segment, computed backwards from its end.

    ``R[t] = r[t] + gamma * next`` where ``next`` is 0 when step t terminated its episode, ``bootstrap[t]``
    (the value of that episode's last observation) when step t truncated it or t is the segment's last
    step, and ``R[t + 1]`` otherwise. So every step's return is the discounted sum of its episode's rewards
    up to the segment's end (at most T steps), closed by a value estimate unless the episode terminated.
    ``bootstrap`` is read only at truncated steps and at the last step.
    """
    steps = rewards.shape[0]
    returns = np.empty(rewards.shape, np.float32)
    following = bootstrap[steps - 1].astype(np.float32)
    for t in range(steps - 1, -1, -1):
        if t < steps - 1:
            following = np.where(truncated[t], bootstrap[t], returns[t + 1])
        following = np.where(terminated[t], 0.0, following)
        returns[t] = rewards[t] + gamma * following
    return returns

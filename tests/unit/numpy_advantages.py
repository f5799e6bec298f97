"""The NumPy GAE, V-trace and crash fix-up raylab ran before they moved to torch on the learner's device (commit
fefcb63's raylab/algos/returns.py, unchanged): the oracle tests/unit/test_advantages.py holds the torch ones to."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def bootstrap_before_crashes(
    valid: np.ndarray, terminated: np.ndarray, truncated: np.ndarray, bootstrap: np.ndarray, values: np.ndarray
) -> None:
    """In place: a crashed step (``valid`` False) has no real outcome, so it leaves the loss and the step
    before it ends its episode there, bootstrapping from the value of the state the crash happened in;
    unless that step already ended its episode, in which case the crashed step was a new episode's first."""
    for t, e in zip(*np.nonzero(~valid), strict=True):
        if t > 0 and not (terminated[t - 1, e] or truncated[t - 1, e]):
            truncated[t - 1, e] = True
            bootstrap[t - 1, e] = values[t, e]


def _boundaries(terminated: np.ndarray, truncated: np.ndarray, gamma: float) -> tuple[np.ndarray, np.ndarray]:
    """Per-step discount (0 after a terminal) and whether a correction may flow back from step t + 1."""
    discounts = np.where(terminated, 0.0, gamma).astype(np.float32)
    carry = ~(terminated | truncated)
    return discounts, carry


def _backward(deltas: np.ndarray, factors: np.ndarray, carry: np.ndarray) -> np.ndarray:
    """``out[t] = deltas[t] + factors[t] * out[t + 1]`` (0 past the end, and where ``carry[t]`` is False)."""
    out = np.empty(deltas.shape, np.float32)
    following = np.zeros(deltas.shape[1:], np.float32)
    for t in range(deltas.shape[0] - 1, -1, -1):
        following = deltas[t] + factors[t] * np.where(carry[t], following, 0.0)
        out[t] = following
    return out


def gae(
    rewards: np.ndarray,
    values: np.ndarray,
    next_values: np.ndarray,
    terminated: np.ndarray,
    truncated: np.ndarray,
    gamma: float,
    lam: float,
) -> tuple[np.ndarray, np.ndarray]:
    """Generalized advantage estimation (Schulman et al. 2016) over ``[T, E]``; returns (advantages, returns).

    ``values[t]`` is V(obs_t); ``next_values[t]`` the value of what followed step t: V(obs_{t+1}), or V(that
    episode's last observation) when step t truncated it (the env already reset), and V(obs_T) at the last
    step. A terminal step does not bootstrap; no advantage flows back across an episode's end.
    ``lam = 1`` gives ``bootstrapped_returns - values``.
    """
    discounts, carry = _boundaries(terminated, truncated, gamma)
    advantages = _backward(rewards + discounts * next_values - values, discounts * lam, carry)
    return advantages, (advantages + values).astype(np.float32)


@dataclass
class VTraceTargets:
    vs: np.ndarray
    """V-trace value targets v_s."""
    pg_advantages: np.ndarray
    """rho_s * (r_s + gamma_s * q_s - V(x_s)) with rho clipped at ``pg_rho_bar``; q_s as in ``vtrace``."""
    advantages: np.ndarray
    """r_s + gamma_s * q_s - V(x_s) without the importance weight (for a clipped-ratio surrogate)."""
    rhos: np.ndarray
    """Unclipped importance ratios pi / mu (diagnostics)."""


def vtrace(
    behaviour_logp: np.ndarray,
    target_logp: np.ndarray,
    rewards: np.ndarray,
    values: np.ndarray,
    next_values: np.ndarray,
    terminated: np.ndarray,
    truncated: np.ndarray,
    gamma: float,
    rho_bar: float = 1.0,
    c_bar: float = 1.0,
    pg_rho_bar: float = 1.0,
    lam: float = 1.0,
) -> VTraceTargets:
    """IMPALA's V-trace (Espeholt et al. 2018, eq. 1 and section 4.2) over ``[T, E]``, per-episode; ``lam``
    scales the traces, ``c = lam * min(c_bar, pi/mu)``, and the policy gradient bootstraps from
    ``q_s = lam * v_{s+1} + (1 - lam) * V(x_{s+1})`` (rlax's ``vtrace_td_error_and_advantage``), or V(x_{s+1})
    alone where the episode ended at s.

    ``v_s = V(x_s) + sum_t gamma^(t-s) (prod_{i<t} c_i) rho_t (r_t + gamma V(x_{t+1}) - V(x_t))``, computed
    backwards as ``v_s - V(x_s) = delta_s + gamma_s c_s (v_{s+1} - V(x_{s+1}))``, with
    ``rho = min(rho_bar, pi/mu)``. ``values``/``next_values`` as in ``gae``. With pi = mu (on-policy) and the
    bars >= 1, v_s is GAE(lam)'s return and the advantages are GAE(lam)'s.
    """
    discounts, carry = _boundaries(terminated, truncated, gamma)
    ratios = np.exp(target_logp - behaviour_logp).astype(np.float32)
    rhos = np.minimum(rho_bar, ratios)
    cs = lam * np.minimum(c_bar, ratios)
    corrections = _backward(rhos * (rewards + discounts * next_values - values), discounts * cs, carry)  # v_s - V(x_s)
    vs = (values + corrections).astype(np.float32)
    # v_{s+1} - V(x_{s+1}) as the policy gradient sees it: 0 where the episode ended at s
    next_corrections = np.zeros(rewards.shape, np.float32)
    next_corrections[:-1] = np.where(carry[:-1], corrections[1:], 0.0)
    vs_next = lam * (next_values + next_corrections) + (1.0 - lam) * next_values
    advantages = (rewards + discounts * vs_next - values).astype(np.float32)
    pg_advantages = np.minimum(pg_rho_bar, ratios) * advantages
    return VTraceTargets(vs, pg_advantages.astype(np.float32), advantages, ratios)

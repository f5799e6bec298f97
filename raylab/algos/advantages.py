"""A learner's targets in torch, on its device: GAE (PPO), V-trace (APPO) and the bootstrap fix-up before env
crashes that both share. A round's values come from the learner's value pass on the device and its targets
stay there, so no round crosses to the host and back (the NumPy returns computed where the data is, on a CPU:
raylab.algos.returns).

All functions work on time-major ``[T, E]`` tensors (NumPy arrays are viewed, not copied) and return float32
tensors on the inputs' device. The loops over time are one fused multiply-add per step.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeAlias

import numpy as np
import torch

Tensorish: TypeAlias = np.ndarray | torch.Tensor


def bootstrap_before_crashes(
    valid: Tensorish, terminated: Tensorish, truncated: Tensorish, bootstrap: Tensorish, values: Tensorish
) -> tuple[torch.Tensor, torch.Tensor]:
    """A crashed step (``valid`` False) has no real outcome, so it leaves the loss and the step before it ends
    its episode there, bootstrapping from the value of the state the crash happened in; unless that step
    already ended its episode, in which case the crashed step was a new episode's first. Returns the new
    ``(truncated, bootstrap)``; vectorized (each crash at t touches only row t - 1, which no other crash reads)."""
    valid, terminated, truncated = _t(valid), _t(terminated), _t(truncated)
    bootstrap, values = _t(bootstrap), _t(values)
    fix = ~valid[1:] & ~(terminated[:-1] | truncated[:-1])
    truncated, bootstrap = truncated.clone(), bootstrap.clone()
    truncated[:-1] |= fix
    bootstrap[:-1] = torch.where(fix, values[1:].to(bootstrap.dtype), bootstrap[:-1])
    return truncated, bootstrap


def _boundaries(terminated: torch.Tensor, truncated: torch.Tensor, gamma: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-step discount (0 after a terminal) and whether a correction may flow back from step t + 1 (1 or 0)."""
    discounts = (~terminated).to(torch.float32) * gamma
    carry = (~(terminated | truncated)).to(torch.float32)
    return discounts, carry


def _backward(deltas: torch.Tensor, factors: torch.Tensor) -> torch.Tensor:
    """``out[t] = deltas[t] + factors[t] * out[t + 1]`` (0 past the end): one fused multiply-add per step, on
    the tensors' device. ``factors`` already holds 0 where nothing may flow back."""
    d, f = deltas.unbind(0), factors.unbind(0)  # the rows as views, in two operations rather than 2T
    following = torch.zeros_like(d[0])
    rows = []
    for t in range(len(d) - 1, -1, -1):
        following = torch.addcmul(d[t], f[t], following)
        rows.append(following)
    rows.reverse()
    return torch.stack(rows)


def gae(
    rewards: Tensorish,
    values: Tensorish,
    next_values: Tensorish,
    terminated: Tensorish,
    truncated: Tensorish,
    gamma: float,
    lam: float,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Generalized advantage estimation (Schulman et al. 2016) over ``[T, E]``; returns (advantages, returns),
    float32 on the inputs' device.

    ``values[t]`` is V(obs_t); ``next_values[t]`` the value of what followed step t: V(obs_{t+1}), or V(that
    episode's last observation) when step t truncated it (the env already reset), and V(obs_T) at the last
    step. A terminal step does not bootstrap; no advantage flows back across an episode's end.
    ``lam = 1`` gives ``bootstrapped_returns - values``.
    """
    rewards, values, next_values = _f(rewards), _f(values), _f(next_values)
    discounts, carry = _boundaries(_t(terminated), _t(truncated), gamma)
    advantages = _backward(rewards + discounts * next_values - values, discounts * lam * carry)
    return advantages, advantages + values


@dataclass
class VTraceTargets:
    vs: torch.Tensor
    """V-trace value targets v_s."""
    pg_advantages: torch.Tensor
    """rho_s * (r_s + gamma_s * q_s - V(x_s)) with rho clipped at ``pg_rho_bar``, where
    q_s = lam * v_{s+1} + (1 - lam) * V(x_{s+1}) (rlax's ``vtrace_td_error_and_advantage``; v_{s+1} at lam = 1),
    and q_s = V(x_{s+1}) where the episode ended at s (a truncation's last value; nothing after a termination)."""
    advantages: torch.Tensor
    """r_s + gamma_s * q_s - V(x_s) without the importance weight (for a clipped-ratio surrogate)."""
    rhos: torch.Tensor
    """Unclipped importance ratios pi / mu (diagnostics)."""


def vtrace(
    behaviour_logp: Tensorish,
    target_logp: Tensorish,
    rewards: Tensorish,
    values: Tensorish,
    next_values: Tensorish,
    terminated: Tensorish,
    truncated: Tensorish,
    gamma: float,
    rho_bar: float = 1.0,
    c_bar: float = 1.0,
    pg_rho_bar: float = 1.0,
    lam: float = 1.0,
) -> VTraceTargets:
    """IMPALA's V-trace (Espeholt et al. 2018, eq. 1 and section 4.2) over ``[T, E]``, per-episode, float32 on
    the inputs' device.

    ``v_s = V(x_s) + sum_t gamma^(t-s) (prod_{i<t} c_i) rho_t (r_t + gamma V(x_{t+1}) - V(x_t))``, computed
    backwards as ``v_s - V(x_s) = delta_s + gamma_s c_s (v_{s+1} - V(x_{s+1}))``, with
    ``rho = min(rho_bar, pi/mu)`` and ``c = lam * min(c_bar, pi/mu)`` (the paper's remark 2; rlax's ``lambda_``).
    ``values``/``next_values`` as in ``gae``. With pi = mu (on-policy) and the bars >= 1, v_s is GAE(lam)'s
    return and the advantages are GAE(lam)'s: at lam = 1 the n-step bootstrapped return.
    """
    rewards, values, next_values = _f(rewards), _f(values), _f(next_values)
    discounts, carry = _boundaries(_t(terminated), _t(truncated), gamma)
    ratios = torch.exp(_f(target_logp) - _f(behaviour_logp))
    rhos = ratios.clamp(max=rho_bar)
    cs = lam * ratios.clamp(max=c_bar)
    corrections = _backward(rhos * (rewards + discounts * next_values - values), discounts * cs * carry)
    vs = values + corrections  # v_s - V(x_s) above
    # v_{s+1} - V(x_{s+1}) as the policy gradient sees it: 0 where the episode ended at s
    next_corrections = torch.zeros_like(rewards)
    next_corrections[:-1] = carry[:-1] * corrections[1:]
    advantages = rewards + discounts * (next_values + lam * next_corrections) - values
    pg_advantages = ratios.clamp(max=pg_rho_bar) * advantages
    return VTraceTargets(vs, pg_advantages, advantages, ratios)


def _t(x: Tensorish) -> torch.Tensor:
    """A NumPy array as a tensor sharing its memory (tensors pass through)."""
    return x if isinstance(x, torch.Tensor) else torch.from_numpy(np.ascontiguousarray(x))


def _f(x: Tensorish) -> torch.Tensor:
    return _t(x).to(torch.float32)

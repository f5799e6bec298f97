"""PPO's clipped objective (Schulman et al. 2017) with the value clipping and entropy bonus of openai/baselines."""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass
class PPOLoss:
    loss: torch.Tensor
    """policy_loss + value_coef * value_loss - entropy_coef * entropy: what to differentiate."""
    policy_loss: torch.Tensor
    value_loss: torch.Tensor
    entropy: torch.Tensor
    approx_kl: torch.Tensor
    """Mean of (ratio - 1) - log ratio, the low-variance KL(old || new) estimator (Schulman's k3)."""
    clip_fraction: torch.Tensor
    """Share of samples whose ratio left [1 - clip, 1 + clip]."""


def ppo_loss(
    log_probs: torch.Tensor,
    entropies: torch.Tensor,
    values: torch.Tensor,
    old_log_probs: torch.Tensor,
    old_values: torch.Tensor,
    advantages: torch.Tensor,
    returns: torch.Tensor,
    *,
    clip: float,
    value_clip: float | None,
    value_coef: float,
    entropy_coef: float,
    normalize_advantages: bool = True,
    mask: torch.Tensor | None = None,
) -> PPOLoss:
    """Every argument ``[N]`` (one minibatch): the log-probabilities of the actions taken under the current
    policy and its entropies (from the action distribution, raylab/models/distributions.py), then values.

    policy: ``-mean(min(ratio * A, clip(ratio, 1 - clip, 1 + clip) * A))``, A normalized per minibatch.
    value: ``0.5 * mean(max((V - R)^2, (V_old + clip(V - V_old, -vc, vc) - R)^2))``, or the plain squared
    error when ``value_clip`` is None. ``mask [N]`` (sequences of a recurrent policy: steps of crashed envs)
    leaves the False steps out of every mean.
    """
    log_ratio = log_probs - old_log_probs
    ratio = log_ratio.exp()
    if normalize_advantages and advantages.numel() > 1:
        advantages = (advantages - advantages.mean()) / (advantages.std() + 1e-8)
    weight = None if mask is None else mask.float() / mask.float().sum().clamp(min=1.0)

    def mean(x: torch.Tensor) -> torch.Tensor:
        return x.mean() if weight is None else (x * weight).sum()

    surrogate = torch.min(ratio * advantages, ratio.clamp(1.0 - clip, 1.0 + clip) * advantages)
    policy_loss = -mean(surrogate)
    errors = (values - returns).pow(2)
    if value_clip is not None:
        clipped = old_values + (values - old_values).clamp(-value_clip, value_clip)
        errors = torch.max(errors, (clipped - returns).pow(2))
    value_loss = 0.5 * mean(errors)
    entropy = mean(entropies)
    loss = policy_loss + value_coef * value_loss - entropy_coef * entropy
    with torch.no_grad():
        approx_kl = mean((ratio - 1.0) - log_ratio)
        clip_fraction = mean(((ratio - 1.0).abs() > clip).float())
    return PPOLoss(loss, policy_loss, value_loss, entropy, approx_kl, clip_fraction)

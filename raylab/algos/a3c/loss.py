"""The n-step advantage actor-critic loss (Mnih et al. 2016), shared by every topology that uses it."""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass
class ActorCriticLoss:
    loss: torch.Tensor
    """policy_loss + value_coef * value_loss - entropy_coef * entropy: what to differentiate."""
    policy_loss: torch.Tensor
    value_loss: torch.Tensor
    entropy: torch.Tensor


def actor_critic_loss(
    log_probs: torch.Tensor,
    entropies: torch.Tensor,
    values: torch.Tensor,
    returns: torch.Tensor,
    value_coef: float,
    entropy_coef: float,
    mask: torch.Tensor | None = None,
) -> ActorCriticLoss:
    """Policy gradient with advantage ``returns - V(s)`` (no gradient through the advantage), half squared
    value error, and the policy's entropy; all averaged over the (unmasked) steps.

    Shapes: all ``[N]``: the log-probabilities of the actions taken and the policy's entropies (from the
    action distribution, raylab/models/distributions.py), values, returns, mask. ``mask`` drops steps
    without a real outcome (an env crashed there).
    """
    advantages = (returns - values).detach()
    value_errors = 0.5 * (returns - values).pow(2)
    policy_terms = -log_probs * advantages
    if mask is None:
        policy_loss, value_loss, entropy = policy_terms.mean(), value_errors.mean(), entropies.mean()
    else:
        weight = mask.float() / mask.float().sum().clamp(min=1.0)
        policy_loss = (policy_terms * weight).sum()
        value_loss = (value_errors * weight).sum()
        entropy = (entropies * weight).sum()
    loss = policy_loss + value_coef * value_loss - entropy_coef * entropy
    return ActorCriticLoss(loss, policy_loss, value_loss, entropy)

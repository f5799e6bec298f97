"""The DQN loss, every formula visible in one place."""

from __future__ import annotations

from typing import NamedTuple

import torch
import torch.nn.functional as F


class DQNLoss(NamedTuple):
    loss: torch.Tensor
    """Scalar to minimize."""
    td_error: torch.Tensor
    """target - Q(s, a), per sample, detached (Ape-X priorities come from it)."""
    q_taken: torch.Tensor
    """Q(s, a), per sample, detached."""


def dqn_loss(
    q: torch.Tensor,
    actions: torch.Tensor,
    rewards: torch.Tensor,
    discounts: torch.Tensor,
    next_q_target: torch.Tensor,
    next_q_online: torch.Tensor | None = None,
    huber_delta: float = 1.0,
    weights: torch.Tensor | None = None,
) -> DQNLoss:
    """n-step (double) DQN with the Huber loss.

    target = R_n + discount * Q_target(s_n, a*), with a* = argmax_a Q_online(s_n, a) for double DQN
    (``next_q_online`` given) and argmax_a Q_target(s_n, a) otherwise; ``discount`` is gamma^n, or 0 after a
    terminal. ``weights`` are importance weights (prioritized replay).
    """
    q_taken = q.gather(1, actions.long().unsqueeze(1)).squeeze(1)
    with torch.no_grad():
        chooser = next_q_online if next_q_online is not None else next_q_target
        next_action = chooser.argmax(dim=1, keepdim=True)
        next_value = next_q_target.gather(1, next_action).squeeze(1)
        target = rewards + discounts * next_value
    per_sample = F.huber_loss(q_taken, target, delta=huber_delta, reduction="none")
    loss = (per_sample * weights).mean() if weights is not None else per_sample.mean()
    return DQNLoss(loss, (target - q_taken).detach(), q_taken.detach())

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


def quantile_huber_loss(
    quantiles: torch.Tensor,
    actions: torch.Tensor,
    rewards: torch.Tensor,
    discounts: torch.Tensor,
    next_quantiles_target: torch.Tensor,
    next_q_chooser: torch.Tensor,
    kappa: float = 1.0,
    weights: torch.Tensor | None = None,
) -> DQNLoss:
    """QR-DQN (Dabney et al. 2018): quantile regression of Z(s, a) onto r + discount * Z_target(s_n, a*).

    ``quantiles`` [B, A, N] are the online atoms, ``next_quantiles_target`` [B, A, N] the target net's at s_n,
    ``next_q_chooser`` [B, A] the values that pick a* (online means for double DQN). Atom i estimates the
    quantile at tau_i = (2i + 1) / 2N; the loss per sample is sum_i mean_j |tau_i - 1{u_ij < 0}| * H_kappa(u_ij)
    / kappa with u_ij = target_j - atom_i. Unlike seed 002 there is no x10000 multiplier: the loss has the
    scale the optimizer's lr was tuned for. The TD error (for priorities) is the difference of the means.
    """
    num_atoms = quantiles.shape[2]
    taken = quantiles.gather(1, actions.long().view(-1, 1, 1).expand(-1, 1, num_atoms)).squeeze(1)  # [B, N]
    with torch.no_grad():
        next_action = next_q_chooser.argmax(dim=1).view(-1, 1, 1).expand(-1, 1, num_atoms)
        next_atoms = next_quantiles_target.gather(1, next_action).squeeze(1)  # [B, N]
        target = rewards.unsqueeze(1) + discounts.unsqueeze(1) * next_atoms
    u = target.unsqueeze(1) - taken.unsqueeze(2)  # [B, N pred, N target]
    tau = (torch.arange(num_atoms, device=quantiles.device, dtype=quantiles.dtype) + 0.5) / num_atoms
    huber = F.huber_loss(u, torch.zeros_like(u), delta=kappa, reduction="none")
    rho = (tau.view(1, -1, 1) - (u.detach() < 0).to(u.dtype)).abs() * huber / kappa
    per_sample = rho.mean(dim=2).sum(dim=1)
    loss = (per_sample * weights).mean() if weights is not None else per_sample.mean()
    q_taken = taken.detach().mean(dim=1)
    return DQNLoss(loss, target.mean(dim=1) - q_taken, q_taken)

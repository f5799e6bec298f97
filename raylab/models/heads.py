"""Q-value heads: ``[B, A, atoms]`` outputs (atoms = 1 for DQN, the quantiles for QR-DQN)."""

from __future__ import annotations

import torch
from torch import nn


class QHead(nn.Module):
    """Linear layer to ``atoms`` values per action."""

    def __init__(self, in_dim: int, num_actions: int, atoms: int = 1):
        super().__init__()
        self.num_actions, self.atoms = num_actions, atoms
        self.q = nn.Linear(in_dim, num_actions * atoms)

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        return self.q(features).view(-1, self.num_actions, self.atoms)


class DuelingQHead(nn.Module):
    """Wang et al. 2016: Q(s, a) = V(s) + A(s, a) - mean_a' A(s, a'), atom by atom."""

    def __init__(self, in_dim: int, num_actions: int, atoms: int = 1):
        super().__init__()
        self.num_actions, self.atoms = num_actions, atoms
        self.value = nn.Linear(in_dim, atoms)
        self.advantage = nn.Linear(in_dim, num_actions * atoms)

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        advantage = self.advantage(features).view(-1, self.num_actions, self.atoms)
        value = self.value(features).view(-1, 1, self.atoms)
        return value + advantage - advantage.mean(dim=1, keepdim=True)

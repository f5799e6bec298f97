"""Q-value heads."""

from __future__ import annotations

import torch
from torch import nn


class QHead(nn.Module):
    """Linear layer to one Q value per action."""

    def __init__(self, in_dim: int, num_actions: int):
        super().__init__()
        self.q = nn.Linear(in_dim, num_actions)

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        return self.q(features)


class DuelingQHead(nn.Module):
    """Wang et al. 2016: Q(s, a) = V(s) + A(s, a) - mean_a' A(s, a')."""

    def __init__(self, in_dim: int, num_actions: int):
        super().__init__()
        self.value = nn.Linear(in_dim, 1)
        self.advantage = nn.Linear(in_dim, num_actions)

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        advantage = self.advantage(features)
        return self.value(features) + advantage - advantage.mean(dim=1, keepdim=True)

"""``model.factory``: the contract is raylab/models/custom.py (``make_model(spaces, head, **model.options)``)."""

from __future__ import annotations

import torch
from torch import nn


class Trunk(nn.Module):
    def __init__(self, obs_size: int, hidden: int):
        super().__init__()
        self.layers = nn.Sequential(nn.Linear(obs_size, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh())

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.layers(obs.flatten(1))


class QModel(nn.Module):
    """head="q": obs [B, *obs_shape] -> Q values [B, num_actions]."""

    def __init__(self, obs_size: int, num_actions: int, hidden: int):
        super().__init__()
        self.trunk = Trunk(obs_size, hidden)
        self.q = nn.Linear(hidden, num_actions)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.q(self.trunk(obs))


class ActorCriticModel(nn.Module):
    """head="actor_critic": obs -> (logits [B, num_actions], value [B])."""

    def __init__(self, obs_size: int, num_actions: int, hidden: int):
        super().__init__()
        self.trunk = Trunk(obs_size, hidden)
        self.logits = nn.Linear(hidden, num_actions)
        self.value = nn.Linear(hidden, 1)

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        features = self.trunk(obs)
        return self.logits(features), self.value(features).squeeze(-1)


def make_model(spaces, head: str, hidden: int = 64) -> nn.Module:
    """``spaces``: raylab.types.EnvSpaces (obs_shape, obs_dtype, num_actions); ``head``: "q" or "actor_critic"."""
    obs_size = 1
    for n in spaces.obs_shape:
        obs_size *= int(n)
    if head == "q":
        return QModel(obs_size, spaces.num_actions, hidden)
    if head == "actor_critic":
        return ActorCriticModel(obs_size, spaces.num_actions, hidden)
    raise ValueError(f"raylab_corridor has no model for head {head!r}")

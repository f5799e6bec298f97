"""Running observation normalization that lives in the model (model.normalize_obs).

Its statistics are buffers: the learner updates them from the observations it trains on (``update``, once
per round, before the round's value pass), and they travel inside the published weights and the checkpoints,
so every rollout actor, the evaluator and ``raylab.evaluate`` normalize exactly as the learner did. Nothing
else updates them: actors only read.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

CLIP = 10.0
"""Normalized observations are clipped to [-CLIP, CLIP], as in Stable-Baselines3's VecNormalize."""


class RunningNorm(nn.Module):
    """``(obs - mean) / sqrt(var + eps)``, clipped; mean and var merged batch by batch (Chan et al.)."""

    mean: torch.Tensor
    var: torch.Tensor
    count: torch.Tensor

    def __init__(self, shape: Sequence[int], eps: float = 1e-8):
        super().__init__()
        self.eps = eps
        self.register_buffer("mean", torch.zeros(tuple(shape), dtype=torch.float64))
        self.register_buffer("var", torch.ones(tuple(shape), dtype=torch.float64))
        self.register_buffer("count", torch.zeros((), dtype=torch.float64))

    @torch.no_grad()
    def update(self, obs: torch.Tensor) -> None:
        """Merge a batch ``[N, *shape]`` into the running statistics."""
        batch = obs.detach().to(torch.float64).reshape(-1, *self.mean.shape)
        n = batch.shape[0]
        if n == 0:
            return
        b_mean, b_var = batch.mean(dim=0), batch.var(dim=0, unbiased=False)
        total = self.count + n
        delta = b_mean - self.mean
        self.mean.add_(delta * n / total)
        m2 = self.var * self.count + b_var * n + delta.pow(2) * self.count * n / total
        self.var.copy_(m2 / total)
        self.count.copy_(total)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        # before the first update: mean 0, var 1, i.e. the raw observation (clipped); no branch on count, so
        # the forward pass stays one graph under torch.compile
        mean = self.mean.to(obs.dtype)
        std = torch.sqrt(self.var + self.eps).to(obs.dtype)
        return ((obs - mean) / std).clamp(-CLIP, CLIP)

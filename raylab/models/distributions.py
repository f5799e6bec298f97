"""The action distributions of raylab's actor-critics (PPO, APPO, A3C), over the head's output ``params``.

An actor-critic's ``forward(obs)`` returns ``(params, value)``; ``model.dist`` says what ``params`` mean:

- ``Categorical(num_actions)``: ``params`` are logits ``[N, A]``; actions are int64 ``[N]``.
- ``MultiCategorical(nvec)``: one categorical per entry of a MultiDiscrete action (a MultiBinary one is entries
  of 2): ``params`` are their logits side by side ``[N, sum(nvec)]``; actions are int64 ``[N, K]``; a
  log-probability or an entropy is the sum over the entries (they are independent), as SB3's
  ``MultiCategoricalDistribution`` and RLlib's ``TorchMultiCategorical`` do.
- ``DiagGaussian(action_dim)``: ``params`` are the mean and the log standard deviation side by side,
  ``[N, 2 * D]`` (raylab's head: a state-independent log-std parameter, broadcast); actions are float32
  ``[N, D]``, sampled *unbounded*. The env receives them clipped to its Box bounds (the ``ClipAction``
  wrapper of the shared preprocessing), while the learner scores the unclipped sample: its log-probability
  is exactly the one of the action the policy drew, as in CleanRL's and Stable-Baselines3's PPO. (Squashing
  with tanh would need the change-of-variables term in every log-probability and entropy; clipping keeps the
  Gaussian's closed forms, and the policy learns to keep its mean inside the bounds.)

Every method works on float32 tensors and is safe under autocast (callers pass ``params.float()``).
"""

from __future__ import annotations

import math

import torch
from torch.nn import functional as F

LOG_2PI = math.log(2.0 * math.pi)


class Categorical:
    discrete = True

    def __init__(self, num_actions: int):
        self.num_actions = int(num_actions)

    def sample(self, params: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
        return torch.multinomial(torch.softmax(params, 1), 1, generator=generator).squeeze(1)

    def mode(self, params: torch.Tensor) -> torch.Tensor:
        return params.argmax(dim=1)

    def log_prob(self, params: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        return F.log_softmax(params, dim=-1).gather(1, actions.long().reshape(-1, 1)).squeeze(1)

    def entropy(self, params: torch.Tensor) -> torch.Tensor:
        log_probs = F.log_softmax(params, dim=-1)
        return -(log_probs.exp() * log_probs).sum(dim=-1)

    def log_prob_and_entropy(self, params: torch.Tensor, actions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Both from one log-softmax (what a loss needs)."""
        log_probs = F.log_softmax(params, dim=-1)
        chosen = log_probs.gather(1, actions.long().reshape(-1, 1)).squeeze(1)
        return chosen, -(log_probs.exp() * log_probs).sum(dim=-1)

    def sample_with_log_prob(
        self, params: torch.Tensor, generator: torch.Generator | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        log_probs = F.log_softmax(params, dim=1)
        actions = torch.multinomial(log_probs.exp(), 1, generator=generator)
        return actions.squeeze(1), log_probs.gather(1, actions).squeeze(1)


class DiagGaussian:
    discrete = False

    def __init__(self, action_dim: int):
        self.action_dim = int(action_dim)

    def split(self, params: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return params[:, : self.action_dim], params[:, self.action_dim :]

    def sample(self, params: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
        mean, log_std = self.split(params)
        noise = torch.randn(mean.shape, generator=generator, dtype=mean.dtype, device=mean.device)
        return mean + log_std.exp() * noise

    def mode(self, params: torch.Tensor) -> torch.Tensor:
        return self.split(params)[0]

    def log_prob(self, params: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        mean, log_std = self.split(params)
        z = (actions.reshape(mean.shape) - mean) * torch.exp(-log_std)
        return -(0.5 * z.pow(2) + log_std + 0.5 * LOG_2PI).sum(dim=1)

    def entropy(self, params: torch.Tensor) -> torch.Tensor:
        _, log_std = self.split(params)
        return (log_std + 0.5 * (1.0 + LOG_2PI)).sum(dim=1)

    def log_prob_and_entropy(self, params: torch.Tensor, actions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.log_prob(params, actions), self.entropy(params)

    def sample_with_log_prob(
        self, params: torch.Tensor, generator: torch.Generator | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        actions = self.sample(params, generator)
        return actions, self.log_prob(params, actions)


class MultiCategorical:
    discrete = True

    def __init__(self, nvec: tuple[int, ...]):
        self.nvec = tuple(int(n) for n in nvec)
        self.num_outputs = sum(self.nvec)

    def _logits(self, params: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return torch.split(params, list(self.nvec), dim=1)

    def sample(self, params: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
        return self.sample_with_log_prob(params, generator)[0]

    def mode(self, params: torch.Tensor) -> torch.Tensor:
        return torch.stack([logits.argmax(dim=1) for logits in self._logits(params)], dim=1)

    def log_prob(self, params: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        return self.log_prob_and_entropy(params, actions)[0]

    def entropy(self, params: torch.Tensor) -> torch.Tensor:
        parts = [Categorical(n).entropy(logits) for n, logits in zip(self.nvec, self._logits(params), strict=True)]
        return torch.stack(parts, dim=1).sum(dim=1)

    def log_prob_and_entropy(self, params: torch.Tensor, actions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        actions = actions.long().reshape(len(params), len(self.nvec))
        log_prob = params.new_zeros(len(params))
        entropy = params.new_zeros(len(params))
        for i, (n, logits) in enumerate(zip(self.nvec, self._logits(params), strict=True)):
            chosen, ent = Categorical(n).log_prob_and_entropy(logits, actions[:, i])
            log_prob, entropy = log_prob + chosen, entropy + ent
        return log_prob, entropy

    def sample_with_log_prob(
        self, params: torch.Tensor, generator: torch.Generator | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        drawn = [
            Categorical(n).sample_with_log_prob(lg, generator)
            for n, lg in zip(self.nvec, self._logits(params), strict=True)
        ]
        return torch.stack([a for a, _ in drawn], dim=1), torch.stack([lp for _, lp in drawn], dim=1).sum(dim=1)


ActionDist = Categorical | MultiCategorical | DiagGaussian

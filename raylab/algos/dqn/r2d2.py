"""R2D2 (Kapturowski et al. 2019): a recurrent Q network trained on replayed sequences from their stored start
states, with burn-in, n-step double-Q targets inside each sequence and value rescaling; the objective the
Learner optimizes for algo=dqn with model.recurrent (raylab/replay/sequences.py makes its sequences).

As Acme's R2D2 learner (google-deepmind/acme acme/agents/jax/r2d2/learning.py): the online and the target
network both unroll every sequence from its stored state; the first ``burn_in`` steps only warm the state up;
the n-step target of step t bootstraps from the target network's value of the online network's greedy action
``min(t + n, length)`` steps on (fewer than n steps at the sequence's end, none after a terminal), all under the
value rescaling h; priorities are ``w * max_t |delta| + (1 - w) * mean_t |delta|`` per sequence. Two
departures, both for short episodes and raylab's other losses:

- a sequence that starts an episode has no burn-in (its zero state is exact), so every step of an episode is
  trained, not only those after the first ``burn_in``; the gradient is not stopped at the burn-in boundary
  (one unroll per network, which differing burn-ins per sequence need), only the loss is masked there;
- the loss is 0.5 delta^2 averaged over the batch's trained steps (importance-weighted) instead of summed over
  each sequence's steps, so learner.lr and learner.max_grad_norm mean what they mean for DQN whatever the trace.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import torch

from raylab.algos.dqn.objective import DQN
from raylab.algos.objective import LossOutput
from raylab.models.factory import RecurrentQNetwork
from raylab.types import SequenceBatch


def value_rescale(x: torch.Tensor, eps: float) -> torch.Tensor:
    """h(x) = sign(x) (sqrt(|x| + 1) - 1) + eps x (Pohlen et al. 2018)."""
    return torch.sign(x) * (torch.sqrt(x.abs() + 1.0) - 1.0) + eps * x


def value_rescale_inverse(x: torch.Tensor, eps: float) -> torch.Tensor:
    """h^-1(x): sign(x) (((sqrt(1 + 4 eps (|x| + 1 + eps)) - 1) / (2 eps))^2 - 1), or sign(x) ((|x| + 1)^2 - 1)
    for eps = 0."""
    if eps == 0:
        return torch.sign(x) * ((x.abs() + 1.0) ** 2 - 1.0)
    root = (torch.sqrt(1.0 + 4.0 * eps * (x.abs() + 1.0 + eps)) - 1.0) / (2.0 * eps)
    return torch.sign(x) * (root**2 - 1.0)


class R2D2Loss(NamedTuple):
    loss: torch.Tensor
    """Scalar to minimize."""
    priorities: torch.Tensor
    """[B] the sequences' new priorities (the max/mean mix of |TD error| over their trained steps), detached."""
    td_error: torch.Tensor
    """Mean |TD error| over the trained steps, detached."""
    q_taken: torch.Tensor
    """Mean Q(s, a) over the trained steps, detached."""
    mask: torch.Tensor
    """[m, B] the trained steps."""


def r2d2_loss(
    q: torch.Tensor,
    q_target: torch.Tensor,
    actions: torch.Tensor,
    rewards: torch.Tensor,
    burn_in: torch.Tensor,
    length: torch.Tensor,
    terminal: torch.Tensor,
    gamma: float,
    n_step: int,
    rescale_eps: float | None,
    max_weight: float,
    weights: torch.Tensor | None = None,
) -> R2D2Loss:
    """Time-major: ``q``, ``q_target`` ``[m + 1, B, A]`` (online, target) over a sequence's observations;
    ``actions``, ``rewards`` ``[m, B]`` (rewards zero after ``length``); ``burn_in``, ``length``, ``terminal``
    ``[B]``; ``rescale_eps`` None: no value rescaling; ``weights`` ``[B]`` importance weights."""
    steps, batch = actions.shape
    device = q.device
    t = torch.arange(steps, device=device).unsqueeze(1)  # [m, 1]
    length = length.long().unsqueeze(0)  # [1, B]
    mask = (t >= burn_in.long().unsqueeze(0)) & (t < length)
    q_taken = q[:-1].gather(2, actions.long().unsqueeze(2)).squeeze(2)  # [m, B]
    with torch.no_grad():
        chosen = q.detach().argmax(dim=2, keepdim=True)  # double Q: the online net picks, the target net values
        values = q_target.gather(2, chosen).squeeze(2)  # [m + 1, B]
        if rescale_eps is not None:
            values = value_rescale_inverse(values, rescale_eps)
        padded = torch.cat([rewards.float(), rewards.new_zeros(n_step, batch, dtype=torch.float32)])
        returns = sum(gamma**k * padded[k : k + steps] for k in range(n_step))  # rewards are 0 after length
        boot = torch.minimum(t + n_step, length).clamp(max=steps)  # [m, B]
        discount = gamma ** (boot - t).clamp(min=0).float()
        discount = discount * ~((boot == length) & terminal.unsqueeze(0))
        target = returns + discount * values.gather(0, boot)
        if rescale_eps is not None:
            target = value_rescale(target, rescale_eps)
    delta = target - q_taken
    weight = mask.float() if weights is None else mask.float() * weights.unsqueeze(0)
    loss = 0.5 * (weight * delta.square()).sum() / mask.sum().clamp(min=1)
    with torch.no_grad():
        abs_delta = delta.detach().abs() * mask
        count = mask.sum(dim=0).clamp(min=1)
        priorities = max_weight * abs_delta.max(dim=0).values + (1.0 - max_weight) * abs_delta.sum(dim=0) / count
        trained = mask.sum().clamp(min=1)
    return R2D2Loss(loss, priorities, abs_delta.sum() / trained, (q_taken.detach() * mask).sum() / trained, mask)


class R2D2(DQN):
    """DQN's networks, target updates and checkpoints, trained on sequences: one step per SequenceBatch,
    ``loss`` is ``r2d2_loss`` on both networks' unrolls. The fused learner path has no R2D2 step
    (raylab/learner/fused refuses it)."""

    def __init__(
        self,
        q_net: RecurrentQNetwork,
        *,
        gamma: float,
        n_step: int,
        rescale_eps: float | None,
        priority_max_weight: float,
        **dqn: Any,
    ):
        super().__init__(q_net, **dqn)
        self.gamma = gamma
        self.n_step = n_step
        self.rescale_eps = rescale_eps
        """Value rescaling's epsilon; None: no rescaling."""
        self.priority_max_weight = priority_max_weight

    def batch_arrays(self, batch: SequenceBatch) -> tuple[dict[str, np.ndarray], int | None]:  # type: ignore[override]
        """The sequences' arrays; the env steps they train are those after each one's burn-in."""
        arrays = {
            "obs": batch.obs, "actions": batch.actions, "rewards": batch.rewards, "state": batch.state,
            "burn_in": batch.burn_in.astype(np.int64), "length": batch.length.astype(np.int64),
            "terminal": batch.terminal,
        }  # fmt: skip
        if batch.weights is not None:
            arrays["weights"] = batch.weights
        trained = int(np.maximum(batch.length.astype(np.int64) - batch.burn_in, 0).sum())
        return arrays, trained

    def loss(self, batch: dict[str, torch.Tensor]) -> LossOutput:
        """The R2D2 loss; its priorities are the per-sequence ``td_errors`` the Learner returns to the replay."""
        out = self.r2d2_loss(batch)
        return LossOutput(out.loss, {"td_error": out.td_error, "q": out.q_taken}, out.priorities)

    def r2d2_loss(self, batch: dict[str, torch.Tensor]) -> R2D2Loss:
        q_net, target_net = self.q_net, self.target_net
        assert isinstance(q_net, RecurrentQNetwork) and isinstance(target_net, RecurrentQNetwork)
        obs = batch["obs"].transpose(0, 1)  # [m + 1, B, ...]
        state = batch["state"].float()
        q, _ = q_net.unroll(obs, state)
        with torch.no_grad():
            q_target, _ = target_net.unroll(obs, state)
        return r2d2_loss(
            q.float(), q_target.float(), batch["actions"].transpose(0, 1), batch["rewards"].transpose(0, 1),
            batch["burn_in"], batch["length"], batch["terminal"], self.gamma, self.n_step, self.rescale_eps,
            self.priority_max_weight, batch.get("weights"),
        )  # fmt: skip

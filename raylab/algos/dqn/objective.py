"""The DQN objective a Learner optimizes (a ReplayObjective, raylab.algos.objective): online and target networks,
loss, target updates; one optimizer step per replay batch, which the Learner copies to its device."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import numpy as np
import torch
from torch import nn

from raylab.algos.dqn.loss import DQNLoss, dqn_loss, quantile_huber_loss
from raylab.algos.objective import LossOutput
from raylab.models.factory import QNetwork
from raylab.types import Batch


class DQN:
    """Online Q network + target network: ``loss(batch)`` is the (double, n-step) DQN or QR-DQN loss of one
    replay batch, ``after_update`` moves the target network every ``target_update_every`` updates (a hard copy,
    or Polyak averaging with ``target_tau`` < 1)."""

    def __init__(
        self,
        q_net: QNetwork,
        *,
        double: bool = True,
        quantile: bool = False,
        huber_delta: float = 1.0,
        target_update_every: int = 1,
        target_tau: float = 1.0,
    ):
        self.q_net = q_net
        # eval mode: the target net never updates BatchNorm statistics of its own (it copies the online ones)
        self.target_net = copy.deepcopy(q_net).requires_grad_(False).eval()
        self.double = double
        self.quantile = quantile
        self._pairs: tuple[list[torch.Tensor], ...] | None = None
        self.huber_delta = huber_delta
        self.target_update_every = target_update_every
        self.target_tau = target_tau

    def parameters(self) -> Iterator[nn.Parameter]:
        return self.q_net.parameters()

    def state_dict(self) -> dict[str, Any]:
        return {}  # the networks are the modules; nothing else

    def load_state_dict(self, state: dict[str, Any]) -> None:
        pass

    def modules(self) -> dict[str, nn.Module]:
        """Every module whose state a checkpoint must hold."""
        return {"q_net": self.q_net, "target_net": self.target_net}

    def policy_module(self) -> nn.Module:
        """The module rollout workers run (its state dict is what gets published)."""
        return self.q_net

    def batch_arrays(self, batch: Batch) -> tuple[dict[str, np.ndarray], int | None]:
        """The replay batch's arrays the loss reads; its length counts its samples."""
        arrays = {
            "obs": batch.obs, "actions": batch.actions, "rewards": batch.rewards, "discounts": batch.discounts,
            "next_obs": batch.next_obs,
        }  # fmt: skip
        if batch.weights is not None:
            arrays["weights"] = batch.weights
        return arrays, None

    def loss(self, batch: dict[str, torch.Tensor]) -> LossOutput:
        """Its loss, the mean |TD error| and Q(s, a) as metrics, and per-sample TD errors for priorities."""
        out = self.dqn_loss(batch)
        return LossOutput(out.loss, {"td_error": out.td_error.abs().mean(), "q": out.q_taken.mean()}, out.td_error)

    def dqn_loss(self, batch: dict[str, torch.Tensor]) -> DQNLoss:
        """DQN (Huber) or QR-DQN (quantile) loss; network outputs are cast to fp32 first, so under autocast
        only the networks run in reduced precision, never the targets or the loss."""
        atoms = self.q_net.atoms(batch["obs"]).float()
        with torch.no_grad():
            next_target = self.target_net.atoms(batch["next_obs"]).float()
            next_online = self.q_net(batch["next_obs"]).float() if self.double else None
        if self.quantile:
            chooser = next_online if next_online is not None else next_target.mean(dim=2)
            return quantile_huber_loss(
                atoms, batch["actions"], batch["rewards"], batch["discounts"], next_target, chooser,
                kappa=self.huber_delta, weights=batch.get("weights"),
            )  # fmt: skip
        return dqn_loss(
            atoms.squeeze(2), batch["actions"], batch["rewards"], batch["discounts"], next_target.squeeze(2),
            next_online, huber_delta=self.huber_delta, weights=batch.get("weights"),
        )  # fmt: skip

    @torch.no_grad()
    def after_update(self, num_updates: int) -> None:
        """Move the target network every ``target_update_every`` updates (hard copy or Polyak)."""
        if num_updates % self.target_update_every:
            return
        if self.target_tau >= 1.0:
            self.target_net.load_state_dict(self.q_net.state_dict())
            return
        if self._pairs is None:  # walking the module tree costs ~100 us per update on a small MLP: do it once
            self._pairs = (
                list(self.target_net.parameters()), list(self.q_net.parameters()),
                list(self.target_net.buffers()), list(self.q_net.buffers()),
            )  # fmt: skip
        target, online, target_buffers, online_buffers = self._pairs
        torch._foreach_lerp_(target, online, self.target_tau)
        if target_buffers:  # running statistics (BatchNorm) are copied, not averaged
            torch._foreach_copy_(target_buffers, online_buffers)

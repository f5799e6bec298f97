"""One whole DQN optimizer step for a plain MLP Q network on the CPU, in NumPy (``learner.fused``).

A DQN update on a small MLP (Snake's 11 features -> 128 -> 128 -> 3, batch 32) does little arithmetic and many
operations: in torch each forward, backward, clipping, Adam and Polyak operation pays microseconds of dispatch
and autograd bookkeeping (561 µs per update through autograd on this project's 2-core CPU, 162 µs fused:
benchmarks/dqn_fused_update.json), where the arithmetic needs a fraction of that. Here the step is written out
by hand: the forward passes (the online net on s and, for double DQN, on s' in one matrix product; the target
net on s'), the Huber loss's gradient, the backward pass through the Linear and ReLU layers, torch's global-norm
clipping and torch's Adam, each a handful of NumPy operations on arrays that *are* the torch tensors: the
parameters and Adam's moments are views of one flat buffer each, so Adam and clipping are a few vector
operations, and checkpoints, published weights, the target update and everything else read the same memory as
in the torch path. tests/unit/test_dqn_fused.py holds it to torch's losses, metrics, priorities, parameters,
target networks and Adam moments, and loads checkpoints both ways.

Only the plain shape is fused (``FusedDQNStep.unsupported`` says why another is not): an ``MLPEncoder`` of
Flatten/Linear/ReLU and a ``QHead`` with one atom (the Huber loss, not QR-DQN; no dueling head), fp32 on the
CPU, no torch.compile, no gradient accumulation, Adam without weight decay or AMSGrad.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from raylab.learner.flat import FlatParams
from raylab.learner.fused.adam import FlatAdam, FusedResult, adam_unsupported, linear_backward
from raylab.models.factory import QNetwork
from raylab.models.numpy_policy import features, q_linears
from raylab.types import Batch


class FusedDQNStep:
    """``step(batch)``: the (double) DQN Huber loss, its gradient, clipping and Adam, in place on the online
    network's parameters and the optimizer's state. The target network moves as before (the objective's
    ``after_update``), on the same memory."""

    @staticmethod
    def unsupported(q_net: nn.Module, target_net: nn.Module, quantile: bool, optimizer: torch.optim.Optimizer) -> str:
        """Why this network/loss/optimizer cannot be fused ('' when it can)."""
        if quantile:
            return "algo.loss=quantile (QR-DQN) is not fused"
        if q_linears(q_net) is None or q_linears(target_net) is None:
            return "only a plain MLP Q network (model.encoder=mlp, model.dueling=false) is fused"
        return adam_unsupported(optimizer, list(q_net.parameters()))

    def __init__(
        self,
        q_net: QNetwork,
        target_net: QNetwork,
        flat: FlatParams,
        *,
        double: bool,
        huber_delta: float,
        max_grad_norm: float | None,
    ):
        reason = self.unsupported(q_net, target_net, False, flat.optimizer)
        assert not reason, reason
        self.double = double
        self.delta = float(huber_delta)
        online, target = q_linears(q_net) or [], q_linears(target_net) or []
        params = [t for layer in online for t in (layer.weight, layer.bias)]
        assert [id(p) for p in params] == [id(p) for p in flat.params], (
            "the optimizer's parameters must be the online network's, in layer order"
        )
        self.adam = FlatAdam(flat, max_grad_norm)
        # NumPy views of both networks' weights, made once: every later change to them (Adam here, the target
        # update, load_state_dict) writes into the same memory in place
        self.online = [(layer.weight.detach().numpy(), layer.bias.detach().numpy()) for layer in online]
        self.target = [(layer.weight.detach().numpy(), layer.bias.detach().numpy()) for layer in target]

    def bind_optimizer_state(self) -> None:
        """Re-attach Adam's state after ``optimizer.load_state_dict`` (raylab/learner/fused/adam.py)."""
        self.adam.bind_optimizer_state()

    # -- the step --------------------------------------------------------------------------------------------
    def step(self, batch: Batch) -> FusedResult:
        # like torch, let a diverging run produce inf/NaN quietly: the driver stops it in one line naming the fix
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            return self._step(batch)

    def _step(self, batch: Batch) -> FusedResult:
        online, target = self.online, self.target
        obs, next_obs = features(batch.obs), features(batch.next_obs)
        n = len(obs)
        rows = np.arange(n)
        actions = batch.actions.astype(np.int64, copy=False)
        # forward: the online net on s (and s' for double DQN, in the same products), the target net on s'
        x = np.concatenate((obs, next_obs)) if self.double else obs
        acts = _forward(online, x)
        q = acts[-1]
        next_target = _forward(target, next_obs)[-1]
        chooser = q[n:] if self.double else next_target
        next_value = next_target[rows, chooser.argmax(1)]
        td_target = batch.rewards.astype(np.float32, copy=False) + batch.discounts * next_value
        q_taken = q[rows, actions]
        diff = q_taken - td_target
        abs_diff = np.abs(diff)
        quadratic = np.minimum(abs_diff, self.delta)
        per_sample = quadratic * (abs_diff - 0.5 * quadratic)  # Huber: 0.5 d^2 inside delta, linear outside
        # dLoss/dQ(s, a): the clipped error, times the importance weight, over the batch
        dq_taken = np.clip(diff, -self.delta, self.delta)
        if batch.weights is not None:
            weights = batch.weights.astype(np.float32, copy=False)
            loss = float(np.mean(per_sample * weights))
            dq_taken *= weights
        else:
            loss = float(np.mean(per_sample))
        dq_taken *= np.float32(1.0 / n)
        grad_out = np.zeros((n, q.shape[1]), np.float32)
        grad_out[rows, actions] = dq_taken
        linear_backward(online, [a[:n] for a in acts[:-1]], grad_out, self.adam.grads)
        grad_norm = self.adam.clip_and_step()
        metrics = {"loss": loss, "td_error": float(abs_diff.mean()), "q": float(q_taken.mean()), "grad_norm": grad_norm}
        if batch.weights is None or batch.indices is None:
            return FusedResult(metrics)
        return FusedResult(metrics, batch.indices, abs_diff)


def _forward(layers: list[tuple[np.ndarray, np.ndarray]], x: np.ndarray) -> list[np.ndarray]:
    """Every layer's input and the output: [x, relu(h1), ..., q]."""
    acts = [x]
    for i, (w, b) in enumerate(layers):
        h = x @ w.T
        h += b
        if i < len(layers) - 1:
            np.maximum(h, 0.0, out=h)
        acts.append(h)
        x = h
    return acts

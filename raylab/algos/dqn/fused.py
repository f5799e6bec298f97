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

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from raylab.errors import ConfigError
from raylab.models.factory import QNetwork
from raylab.models.numpy_policy import features, q_linears
from raylab.types import Batch


@dataclass
class FusedResult:
    """What one fused step reports: the Learner's metrics and the per-sample |TD errors| (priorities)."""

    loss: float
    td_error: float
    """Mean |target - Q(s, a)|."""
    q: float
    """Mean Q(s, a)."""
    grad_norm: float
    """Global gradient norm before clipping."""
    abs_td: np.ndarray


def _flatten_into(tensors: Sequence[torch.Tensor], flat: torch.Tensor) -> None:
    """Copy ``tensors`` into ``flat`` and make each a view of its slice: the same objects, so every holder of
    them (the optimizer, the modules, state dicts) sees the flat memory. Only for tensors this step owns."""
    offset = 0
    for t in tensors:
        n = t.numel()
        flat[offset : offset + n].copy_(t.detach().reshape(-1))
        t.data = flat[offset : offset + n].view_as(t)
        offset += n


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
        if any(p.dtype != torch.float32 or p.device.type != "cpu" for p in q_net.parameters()):
            return "the fused update runs fp32 parameters on the CPU"
        if not isinstance(optimizer, torch.optim.Adam) or len(optimizer.param_groups) != 1:
            return "the fused update implements Adam with one parameter group"
        group = optimizer.param_groups[0]
        if group["weight_decay"] or group["amsgrad"] or group["maximize"]:
            return "the fused update implements Adam without weight decay, AMSGrad or maximize"
        if len(group["params"]) != len(list(q_net.parameters())):
            return "the optimizer must hold exactly the online network's parameters"
        return ""

    def __init__(
        self,
        q_net: QNetwork,
        target_net: QNetwork,
        optimizer: torch.optim.Adam,
        *,
        double: bool,
        huber_delta: float,
        max_grad_norm: float | None,
    ):
        reason = self.unsupported(q_net, target_net, False, optimizer)
        assert not reason, reason
        self.double = double
        self.delta = float(huber_delta)
        self.max_grad_norm = max_grad_norm
        self.optimizer = optimizer
        self.q_net = q_net
        online, target = q_linears(q_net) or [], q_linears(target_net) or []
        self.params = [t for layer in online for t in (layer.weight, layer.bias)]
        assert [id(p) for p in self.params] == [id(p) for p in optimizer.param_groups[0]["params"]], (
            "the optimizer's parameters must be the online network's, in layer order"
        )
        size = sum(p.numel() for p in self.params)
        self._flat = torch.empty(size)
        _flatten_into(self.params, self._flat)
        self.flat = self._flat.numpy()
        self.grad = np.zeros(size, np.float32)
        self._tmp = np.empty(size, np.float32)
        self._grad_views = self._views(self.grad)
        # NumPy views of both networks' weights, made once: every later change to them (Adam here, the target
        # update, load_state_dict) writes into the same memory in place
        self.online = [(layer.weight.detach().numpy(), layer.bias.detach().numpy()) for layer in online]
        self.target = [(layer.weight.detach().numpy(), layer.bias.detach().numpy()) for layer in target]
        self.bind_optimizer_state()

    def _views(self, flat: np.ndarray) -> list[np.ndarray]:
        views, offset = [], 0
        for p in self.params:
            n = p.numel()
            views.append(flat[offset : offset + n].reshape(p.shape))
            offset += n
        return views

    def bind_optimizer_state(self) -> None:
        """Put Adam's moments in two flat buffers (keeping their values) and its step counts in one array, with
        the optimizer's state tensors views of them; again after ``optimizer.load_state_dict`` replaced them."""
        size = self.flat.size
        m, v = torch.zeros(size), torch.zeros(size)
        steps = torch.zeros(len(self.params))
        states = [self.optimizer.state[p] for p in self.params]
        if any(states) and not all("exp_avg" in s for s in states):
            raise ConfigError(
                "the checkpoint holds Adam state for some parameters only, which the fused update cannot take: "
                "resume with learner.fused=false"
            )
        offset = 0
        for i, p in enumerate(self.params):
            n = p.numel()
            if states[i]:  # copied, never re-pointed: a loaded state dict's tensors may be someone else's too
                m[offset : offset + n].copy_(states[i]["exp_avg"].reshape(-1))
                v[offset : offset + n].copy_(states[i]["exp_avg_sq"].reshape(-1))
                steps[i] = float(states[i]["step"])
            self.optimizer.state[p] = {
                "step": steps[i : i + 1].view(()),
                "exp_avg": m[offset : offset + n].view_as(p),
                "exp_avg_sq": v[offset : offset + n].view_as(p),
            }
            offset += n
        self.exp_avg, self.exp_avg_sq, self.steps = m.numpy(), v.numpy(), steps.numpy()

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
        self._backward(online, [a[:n] for a in acts[:-1]], grad_out)
        grad_norm = self._clip()
        self._adam()
        return FusedResult(loss, float(abs_diff.mean()), float(q_taken.mean()), grad_norm, abs_diff)

    def _backward(self, layers: list[tuple[np.ndarray, np.ndarray]], inputs: list[np.ndarray], g: np.ndarray) -> None:
        """Gradients of every Linear into the flat gradient buffer; ``inputs[i]`` is layer i's input (the ReLU
        output of layer i - 1), ``g`` the gradient at the last layer's output."""
        views = self._grad_views
        for i in range(len(layers) - 1, -1, -1):
            h = inputs[i]
            np.matmul(g.T, h, out=views[2 * i])
            g.sum(0, out=views[2 * i + 1])
            if i:
                g = g @ layers[i][0]
                g *= h > 0  # through the ReLU that made h

    def _clip(self) -> float:
        """torch.nn.utils.clip_grad_norm_: scale by max_norm / (norm + 1e-6) when that is below 1; the norm
        before clipping."""
        norm = float(np.sqrt(np.dot(self.grad, self.grad)))
        if self.max_grad_norm is not None:
            coef = self.max_grad_norm / (norm + 1e-6)
            if not coef >= 1.0:  # below 1, or NaN (a NaN norm makes every gradient NaN, as in torch)
                self.grad *= np.float32(coef)
        return norm

    def _adam(self) -> None:
        """torch.optim.Adam (no weight decay, no AMSGrad), on the flat buffers, with the group's current
        hyper-parameters (a scheduler may change lr)."""
        group = self.optimizer.param_groups[0]
        lr, (beta1, beta2), eps = float(group["lr"]), group["betas"], float(group["eps"])
        self.steps += 1
        step = float(self.steps[0])
        g, m, v, tmp = self.grad, self.exp_avg, self.exp_avg_sq, self._tmp
        np.multiply(g, np.float32(1.0 - beta1), out=tmp)  # m = beta1 m + (1 - beta1) g
        m *= np.float32(beta1)
        m += tmp
        np.multiply(g, g, out=tmp)  # v = beta2 v + (1 - beta2) g^2
        tmp *= np.float32(1.0 - beta2)
        v *= np.float32(beta2)
        v += tmp
        bias_correction1 = 1.0 - beta1**step
        bias_correction2_sqrt = (1.0 - beta2**step) ** 0.5
        np.sqrt(v, out=tmp)  # p -= lr / bc1 * m / (sqrt(v) / sqrt(bc2) + eps)
        tmp *= np.float32(1.0 / bias_correction2_sqrt)
        tmp += np.float32(eps)
        np.divide(m, tmp, out=tmp)
        tmp *= np.float32(lr / bias_correction1)
        self.flat -= tmp


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

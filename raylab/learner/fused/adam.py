"""The parameters, gradients and Adam state of a fused update (``learner.fused``) as flat NumPy buffers.

A fused update (DQN: raylab/learner/fused/dqn.py; PPO and APPO: raylab/learner/fused/ppo.py) writes one optimizer
step out in NumPy for a small MLP on the CPU, where torch's per-operation dispatch costs more than the
arithmetic. ``FlatAdam`` is what every such step shares: it makes the network's parameters and Adam's
``exp_avg``/``exp_avg_sq``/``step`` views of one flat buffer each (the same tensor objects, so the module, the
optimizer, state dicts and published weights all read that memory), gives the step a flat gradient buffer with
a view per parameter, and applies torch's ``clip_grad_norm_`` and torch's Adam to them as a few vector
operations. The algorithm's step computes the gradients into ``grads``; ``clip_and_step()`` does the rest.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import torch

from raylab.errors import ConfigError


@dataclass
class FusedResult:
    """What one fused step reports: the Learner's metrics under the torch path's names (DQN: loss, td_error, q,
    grad_norm; PPO/APPO: loss, policy_loss, value_loss, entropy, approx_kl, clip_fraction, grad_norm) and, for
    a prioritized DQN batch, its replay keys and per-sample |TD errors| (the new priorities)."""

    metrics: dict[str, float]
    keys: np.ndarray | None = None
    abs_td: np.ndarray | None = field(default=None, repr=False)


def adam_unsupported(optimizer: torch.optim.Optimizer, params: Sequence[torch.Tensor]) -> str:
    """Why ``optimizer`` over ``params`` cannot be stepped by FlatAdam ('' when it can)."""
    if any(p.dtype != torch.float32 or p.device.type != "cpu" for p in params):
        return "the fused update runs fp32 parameters on the CPU"
    if not isinstance(optimizer, torch.optim.Adam) or len(optimizer.param_groups) != 1:
        return "the fused update implements Adam with one parameter group"
    group = optimizer.param_groups[0]
    if group["weight_decay"] or group["amsgrad"] or group["maximize"]:
        return "the fused update implements Adam without weight decay, AMSGrad or maximize"
    if [id(p) for p in group["params"]] != [id(p) for p in params]:
        return "the optimizer must hold exactly the network's trainable parameters"
    return ""


def _flatten_into(tensors: Sequence[torch.Tensor], flat: torch.Tensor) -> None:
    """Copy ``tensors`` into ``flat`` and make each a view of its slice: the same objects, so every holder of
    them (the optimizer, the modules, state dicts) sees the flat memory. Only for tensors this step owns."""
    offset = 0
    for t in tensors:
        n = t.numel()
        flat[offset : offset + n].copy_(t.detach().reshape(-1))
        t.data = flat[offset : offset + n].view_as(t)
        offset += n


class FlatAdam:
    """``params`` (the optimizer's, in its order) and Adam's state in flat buffers; ``grads`` holds a NumPy view
    per parameter for the step to write its gradients into; ``clip_and_step()`` clips and applies Adam."""

    def __init__(self, params: Sequence[torch.Tensor], optimizer: torch.optim.Adam, max_grad_norm: float | None):
        reason = adam_unsupported(optimizer, params)
        assert not reason, reason
        self.params = list(params)
        self.optimizer = optimizer
        self.max_grad_norm = max_grad_norm
        size = sum(p.numel() for p in self.params)
        self._flat = torch.empty(size)
        _flatten_into(self.params, self._flat)
        self.flat = self._flat.numpy()
        self.grad = np.zeros(size, np.float32)
        self._tmp = np.empty(size, np.float32)
        self.grads = self._views(self.grad)
        """The gradient of each parameter (a view of ``grad``), in ``params``' order."""
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

    def clip_and_step(self) -> float:
        """Clip ``grad`` as torch.nn.utils.clip_grad_norm_ does, then one Adam step; the norm before clipping."""
        norm = self._clip()
        self._adam()
        return norm

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


def linear_backward(
    layers: Sequence[tuple[np.ndarray, np.ndarray]],
    inputs: Sequence[np.ndarray],
    g: np.ndarray,
    grads: Sequence[np.ndarray],
) -> None:
    """Backward through Linear layers with a ReLU between each two: ``layers[i]`` is (weight [out, in], bias) as
    NumPy views, ``inputs[i]`` layer i's input (the ReLU output of layer i - 1), ``g`` the gradient at the last
    layer's output (pre-activation). Writes layer i's weight and bias gradients into ``grads[2i]`` and
    ``grads[2i + 1]``."""
    for i in range(len(layers) - 1, -1, -1):
        h = inputs[i]
        np.matmul(g.T, h, out=grads[2 * i])
        g.sum(0, out=grads[2 * i + 1])
        if i:
            g = g @ layers[i][0]
            g *= h > 0  # through the ReLU that made h

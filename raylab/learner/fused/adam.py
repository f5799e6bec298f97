"""The parameters, gradients and Adam state of a fused update (``learner.fused``) as flat NumPy views.

A fused update (DQN: raylab/learner/fused/dqn.py; PPO and APPO: raylab/learner/fused/ppo.py) writes one optimizer
step out in NumPy for a small MLP on the CPU, where torch's per-operation dispatch costs more than the
arithmetic. ``FlatAdam`` is what every such step shares: NumPy views of the learner's flat parameter, gradient and Adam
buffers (raylab.learner.flat: the parameters and Adam's state are views of them, so the module, the optimizer,
state dicts and published weights all read that memory), a view per parameter of the gradient, and torch's
``clip_grad_norm_`` and torch's Adam applied to them as a few vector operations. The algorithm's step computes
the gradients into ``grads``; ``clip_and_step()`` does the rest.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import torch

from raylab.learner.flat import FlatParams


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


class FlatAdam:
    """NumPy views of the learner's flat buffers (raylab.learner.flat.FlatParams): ``flat`` (the parameters, in
    the optimizer's order), ``grads`` (a view per parameter for the step to write its gradients into), Adam's
    moments and step counts; ``clip_and_step()`` clips and applies Adam."""

    def __init__(self, flat: FlatParams, max_grad_norm: float | None):
        reason = adam_unsupported(flat.optimizer, flat.params)
        assert not reason, reason
        self.source = flat
        self.params = flat.params
        self.optimizer = flat.optimizer
        self.max_grad_norm = max_grad_norm
        self.flat = flat.flat.numpy()
        self.grad = flat.grad.numpy()
        self._tmp = np.empty(flat.size, np.float32)
        self.grads = self._views(self.grad)
        """The gradient of each parameter (a view of ``grad``), in ``params``' order."""
        self._bind()

    def _views(self, flat: np.ndarray) -> list[np.ndarray]:
        views, offset = [], 0
        for p in self.params:
            n = p.numel()
            views.append(flat[offset : offset + n].reshape(p.shape))
            offset += n
        return views

    def _bind(self) -> None:
        self.exp_avg = self.source.exp_avg.numpy()
        self.exp_avg_sq = self.source.exp_avg_sq.numpy()
        self.steps = self.source.step.view(1).numpy()  # the flat step count (the per-parameter ones follow it)

    def bind_optimizer_state(self) -> None:
        """Take the flat buffers' NumPy views again, after the learner re-bound Adam's state
        (``FlatParams.bind_optimizer_state``) when ``optimizer.load_state_dict`` replaced it."""
        self._bind()

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

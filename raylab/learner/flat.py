"""The Learner's parameters, gradients and Adam state, each one flat buffer on its device.

Every trainable parameter is a view of ``flat`` (the same tensor objects, so modules, the optimizer, state dicts
and checkpoints all read that memory), every gradient a view of ``grad``, and Adam's ``exp_avg``,
``exp_avg_sq`` and ``step`` views of three more. That turns the per-parameter work of an optimizer step into a
few operations on whole buffers, whatever the network:

- ``zero_grad``: one fill (backward then accumulates into the views in place);
- ``clip_``: one norm and one scale, as ``torch.nn.utils.clip_grad_norm_`` does it;
- ``adam_step``: one fused Adam kernel on one tensor (``torch._fused_adam_``, what ``Adam(fused=True)`` runs
  per parameter), with the optimizer group's current hyper-parameters;
- publishing weights: the policy's parameters are one slice of ``flat``: one copy.

The optimizer's per-parameter state stays in torch's own format (its tensors are views), so a checkpoint
written here loads into a plain ``torch.optim.Adam`` and back; ``bind_optimizer_state`` re-attaches after
``optimizer.load_state_dict`` replaced the tensors. The fused NumPy update for small MLPs on the CPU
(raylab.learner.fused) works on NumPy views of these same buffers.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from raylab.errors import ConfigError


def flatten_into(tensors: Sequence[torch.Tensor], flat: torch.Tensor) -> None:
    """Copy ``tensors`` into ``flat`` and make each a view of its slice: the same objects, so every holder of
    them (the optimizer, the modules, state dicts) sees the flat memory. Only for tensors the learner owns."""
    offset = 0
    for t in tensors:
        n = t.numel()
        flat[offset : offset + n].copy_(t.detach().reshape(-1))
        t.data = flat[offset : offset + n].view_as(t)
        offset += n


class FlatParams:
    """``params`` (the optimizer's, in its order) and Adam's state in flat buffers on their device."""

    def __init__(self, params: Sequence[torch.nn.Parameter], optimizer: torch.optim.Adam):
        self.params = list(params)
        if not self.params:
            raise ConfigError("the learner's network has no trainable parameters: give the model some")
        devices = {p.device for p in self.params}
        if len(devices) != 1 or any(p.dtype != torch.float32 for p in self.params):
            raise ConfigError(
                "the learner trains float32 parameters on one device (learner.precision sets the compute "
                "precision): build the model in float32 on one device"
            )
        if len(optimizer.param_groups) != 1 or [id(p) for p in optimizer.param_groups[0]["params"]] != [
            id(p) for p in self.params
        ]:
            raise ValueError("the optimizer must hold exactly the learner's parameters, in one group")
        self.device = devices.pop()
        self.optimizer = optimizer
        group = optimizer.param_groups[0]
        self.lr = torch.tensor(float(group["lr"]), dtype=torch.float64, device=self.device)
        """The lr ``adam_math`` reads: a tensor, so that a compiled step takes a new lr without recompiling
        (``set_lr`` keeps it and the optimizer group's equal)."""
        beta1, beta2 = group["betas"]
        self.hyper = (float(beta1), float(beta2), float(group["eps"]), float(group["weight_decay"]))
        """Adam's betas, eps and weight decay, fixed for the optimizer's life (the Learner keeps its own through
        a checkpoint's load): ``adam_math`` reads these, not the optimizer's group, which torch.compile would
        guard on, value by value, the lr among them."""
        self.size = sum(p.numel() for p in self.params)
        self.flat = torch.empty(self.size, device=self.device)
        flatten_into(self.params, self.flat)
        self.grad = torch.zeros(self.size, device=self.device)
        offset = 0
        for p in self.params:
            p.grad = self.grad[offset : offset + p.numel()].view_as(p)
            offset += p.numel()
        self.static = False
        """Whether the buffers are marked static for CUDA graphs (``mark_static``): new moments are marked too."""
        self.bind_optimizer_state()

    def bind_optimizer_state(self) -> None:
        """Put Adam's moments in two flat buffers (keeping their values) and its step counts in one, with the
        optimizer's state tensors views of them; again after ``optimizer.load_state_dict`` replaced them."""
        m = torch.zeros(self.size, device=self.device)
        v = torch.zeros(self.size, device=self.device)
        steps = torch.zeros(len(self.params), device=self.device)
        states = [self.optimizer.state[p] for p in self.params]
        if any(states) and not all("exp_avg" in s for s in states):
            raise ConfigError(
                "the checkpoint holds Adam state for some parameters only: resume from a checkpoint of this model"
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
        if steps.numel() and bool((steps != steps[0]).any()):
            raise ConfigError("the checkpoint's Adam state counts different steps per parameter: resume from one")
        self.exp_avg, self.exp_avg_sq, self.steps = m, v, steps
        self.step = steps[0].clone()
        """Adam's step count, one tensor for the flat step (the per-parameter ``steps`` follow it: ``sync``)."""
        if self.static:
            self.mark_static()

    def mark_static(self) -> None:
        """Tell torch.compile that the buffers the step writes in place keep their addresses, so that CUDA graphs
        (compile_mode reduce-overhead) capture the clip and Adam step too: Inductor skips capturing a graph that
        mutates inputs it does not know are static ("skipping cudagraphs due to mutated inputs", seen on an
        H200). Again after ``bind_optimizer_state`` made new moments."""
        self.static = True
        for tensor in (self.flat, self.grad, self.exp_avg, self.exp_avg_sq, self.step, self.lr):
            torch._dynamo.mark_static_address(tensor)

    def sync(self, from_optimizer: bool = False) -> None:
        """Make the per-parameter step counts of the optimizer's state equal the flat step's (before a state
        dict is read), or, ``from_optimizer``, the other way round (after torch's own Adam step ran: fp16)."""
        if from_optimizer:
            self.step.copy_(self.steps[0])
        else:
            self.steps.copy_(self.step.expand_as(self.steps))

    def set_lr(self, lr: float) -> None:
        """Adam's lr from the next step on, on every path: the optimizer group's (``adam_step``, torch's own
        step, the fused NumPy update) and the tensor ``adam_math`` reads."""
        self.optimizer.param_groups[0]["lr"] = float(lr)
        self.lr.fill_(float(lr))

    def zero_grad(self) -> None:
        self.grad.zero_()

    def clip_(self, max_norm: float | None) -> torch.Tensor:
        """Scale ``grad`` by max_norm / (norm + 1e-6) where that is below 1 (``clip_grad_norm_``'s rule); the
        norm before clipping, a tensor on the device (no host sync)."""
        norm = torch.linalg.vector_norm(self.grad)
        if max_norm is not None:
            self.grad.mul_((max_norm / (norm + 1e-6)).clamp(max=1.0))
        return norm

    def adam_step(self) -> None:
        """torch's Adam on the flat buffers: one fused kernel, the group's current lr, betas and eps."""
        group = self.optimizer.param_groups[0]
        beta1, beta2 = group["betas"]
        self.step.add_(1.0)
        torch._fused_adam_(
            [self.flat], [self.grad], [self.exp_avg], [self.exp_avg_sq], [], [self.step],
            amsgrad=False, lr=float(group["lr"]), beta1=float(beta1), beta2=float(beta2),
            weight_decay=float(group["weight_decay"]), eps=float(group["eps"]), maximize=False,
        )  # fmt: skip

    def adam_math(self) -> None:
        """``adam_step`` written out as tensor arithmetic, for torch.compile to fuse (it cannot trace the fused
        kernel): the same update, ``p -= lr / bc1 * m / (sqrt(v) / sqrt(bc2) + eps)``."""
        beta1, beta2, eps, weight_decay = self.hyper
        if weight_decay:
            self.grad.add_(self.flat, alpha=weight_decay)
        self.step.add_(1.0)
        self.exp_avg.lerp_(self.grad, 1.0 - beta1)
        self.exp_avg_sq.mul_(beta2).addcmul_(self.grad, self.grad, value=1.0 - beta2)
        step = self.step.double()  # 1 - 0.999^t in float32 loses 5 digits to cancellation: as the kernel, in double
        bias1 = 1.0 - torch.pow(beta1, step)
        bias2_sqrt = (1.0 - torch.pow(beta2, step)).sqrt()
        denom = (self.exp_avg_sq.sqrt() / bias2_sqrt.float()).add_(eps)
        self.flat.sub_(self.exp_avg / denom * (self.lr / bias1).float())

    def slice_of(self, tensor: torch.Tensor) -> slice | None:
        """Where ``tensor`` lies in ``flat`` (a parameter's view), or None for a tensor outside it."""
        if (
            tensor.device != self.device
            or tensor.untyped_storage().data_ptr() != self.flat.untyped_storage().data_ptr()
        ):
            return None
        start = (tensor.data_ptr() - self.flat.data_ptr()) // self.flat.element_size()
        return slice(start, start + tensor.numel())

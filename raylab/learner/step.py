"""One optimizer step, the two ways the Learner runs it: through autograd on its device (``AutogradStep``), or
written out in NumPy for a small MLP on the CPU (``FusedBackend``, raylab.learner.fused). Both take one step's
input, train in place, and add the step's metrics to sums the Learner reads once per call.

``AutogradStep`` on the flat buffers (raylab.learner.flat): the loss under the learner's precision (the
objective's, or for a round the minibatch's gather, the objective's per-minibatch finish and the loss
together, so that ``learner.compile`` covers all three at static shapes), its gradients written into the flat
gradient with one concatenation (with micro-batches or a GradScaler: zeroed, then accumulated by backward),
one clip, one fused Adam kernel. Under compile, the clip and the Adam step are compiled too (one more graph). Metrics
are added on the device into one learner-owned vector: no host sync per step. With fp16 a GradScaler unscales,
skips non-finite steps and runs torch's own Adam step.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from raylab.algos.objective import LossOutput, Objective
from raylab.learner.device import Placement
from raylab.learner.flat import FlatParams
from raylab.learner.fused import FusedStep

CUDA_GRAPH_MODES = ("reduce-overhead", "max-autotune")
"""torch.compile modes that capture CUDA graphs (their outputs are overwritten by the next replay)."""


@dataclasses.dataclass
class Rows:
    """A round minibatch not yet gathered: ``rows`` of every tensor in ``data``."""

    data: dict[str, torch.Tensor]
    rows: torch.Tensor


class MetricSums:
    """Per-call sums of step metrics on the learner's device (float64): three operations per step whatever the
    number of metrics, read with one host sync per call. Only the metrics added since ``zero()`` are read."""

    def __init__(self, device: torch.device):
        self.device = device
        self.index: dict[str, int] = {}
        self._sums = torch.zeros(0, dtype=torch.float64, device=device)
        self._rows: dict[tuple[str, ...], torch.Tensor] = {}
        self._seen: set[tuple[str, ...]] = set()

    def zero(self) -> None:
        self._sums.zero_()
        self._seen.clear()

    def add(self, values: dict[str, torch.Tensor], weight: float = 1.0) -> None:
        key = tuple(values)
        rows = self._rows.get(key)
        if rows is None:
            rows = self._rows[key] = self._register(key)
        self._seen.add(key)
        parts = [v.detach() for v in values.values()]
        if any(p.dim() or p.dtype != torch.float32 for p in parts):
            parts = [p.reshape(()).float() for p in parts]
        self._sums.index_add_(0, rows, torch.stack(parts).double(), alpha=weight)

    def _register(self, names: tuple[str, ...]) -> torch.Tensor:
        for name in names:
            if name not in self.index:
                self.index[name] = len(self.index)
        grown = torch.zeros(len(self.index), dtype=torch.float64, device=self.device)
        grown[: len(self._sums)] = self._sums
        self._sums = grown
        return torch.tensor([self.index[n] for n in names], device=self.device)

    def read(self) -> dict[str, float]:
        """The sums of the metrics added since ``zero()`` (one host sync)."""
        names = {n for key in self._seen for n in key}
        if not names:
            return {}
        values = self._sums.tolist()
        return {n: values[i] for n, i in self.index.items() if n in names}


class AutogradStep:
    """An optimizer step through autograd on the learner's device."""

    def __init__(
        self,
        objective: Objective,
        flat: FlatParams,
        io: Placement,
        *,
        max_grad_norm: float | None,
        grad_accumulation: int,
        scaler: torch.amp.GradScaler,
        compile: bool,
        compile_mode: str,
        gather: Callable[[dict[str, torch.Tensor], torch.Tensor], dict[str, torch.Tensor]],
        finish: Callable[[dict[str, torch.Tensor]], dict[str, torch.Tensor]] | None,
    ):
        self.objective = objective
        self.flat = flat
        self.io = io
        self.max_grad_norm = max_grad_norm
        self.grad_accumulation = grad_accumulation
        self.scaler = scaler
        self.sums = MetricSums(flat.device)
        self._gather = gather
        self._finish = finish or (lambda mb: mb)
        self._loss: Callable[[Any], LossOutput] = objective.loss
        self._rows_loss: Callable[[dict[str, torch.Tensor], torch.Tensor], LossOutput] = self._gathered_loss
        self._apply: Callable[[], torch.Tensor] = self._clip_and_adam
        self.cuda_graphs = compile and compile_mode in CUDA_GRAPH_MODES and flat.device.type == "cuda"
        if compile:
            # dynamic=False: a learner's shapes are fixed, so each gets its own graph. With automatic dynamic
            # shapes, the recompile they trigger under reduce-overhead raised an internal TorchDynamo
            # IndexError on CUDA (torch 2.11, H100; tests/unit/test_learner_objectives.py, gpu marker).
            self._loss = torch.compile(objective.loss, mode=compile_mode, dynamic=False)
            self._rows_loss = torch.compile(self._plain_gathered_loss, mode=compile_mode, dynamic=False)
            if not scaler.is_enabled():  # GradScaler's step has data-dependent control flow: keep it eager
                self._apply = torch.compile(self._clip_and_adam_math, mode=compile_mode, dynamic=False)
                if self.cuda_graphs:
                    flat.mark_static()

    def _gathered_loss(self, data: dict[str, torch.Tensor], rows: torch.Tensor) -> LossOutput:
        return self.objective.loss(self._finish(self._gather(data, rows)))

    def _plain_gathered_loss(self, data: dict[str, torch.Tensor], rows: torch.Tensor) -> LossOutput:
        """What compile traces: the gather as index_select (no out= buffers), the finish, the loss."""
        return self.objective.loss(self._finish({k: v.index_select(0, rows) for k, v in data.items()}))

    def step(self, batch: Any) -> torch.Tensor | None:
        """One optimizer step over ``grad_accumulation`` micro-batches; returns the per-sample |TD errors|
        (a copy) when the objective gives them."""
        if self.grad_accumulation == 1 and not self.scaler.is_enabled():
            return self._single(batch)
        self.flat.zero_grad()
        if isinstance(batch, Rows) and self.grad_accumulation > 1:
            batch = self._finish(self._gather(batch.data, batch.rows))  # statistics of the whole minibatch
        parts = [batch] if isinstance(batch, Rows) else split_batch(batch, self.grad_accumulation)
        total = batch_size(batch) if len(parts) > 1 else 1
        tds = []
        for part in parts:
            weight = batch_size(part) / total if len(parts) > 1 else 1.0
            if self.cuda_graphs:  # the previous replay's outputs are dead (used, added up or copied below)
                torch.compiler.cudagraph_mark_step_begin()
            with self.io.autocast():
                out = self._rows_loss(part.data, part.rows) if isinstance(part, Rows) else self._loss(part)
            loss = out.loss * weight if len(parts) > 1 else out.loss
            (self.scaler.scale(loss) if self.scaler.is_enabled() else loss).backward()
            # Under CUDA graphs the compiled call's outputs are overwritten by its next replay: each is used
            # now, added into the learner-owned sums, or copied (abs() makes a new tensor).
            self.sums.add({"loss": out.loss, **out.metrics}, weight)
            if out.td_errors is not None:
                tds.append(out.td_errors.detach().abs())
        if self.scaler.is_enabled():
            self.scaler.unscale_(self.flat.optimizer)
            grad_norm = self.flat.clip_(self.max_grad_norm)
            self.scaler.step(self.flat.optimizer)
            self.scaler.update()
            self.flat.sync(from_optimizer=True)
        else:
            grad_norm = self._apply()
        self.sums.add({"grad_norm": grad_norm})
        if not tds:
            return None
        return torch.cat(tds) if len(tds) > 1 else tds[0]

    def _single(self, batch: Any) -> torch.Tensor | None:
        """``step`` for one micro-batch without a GradScaler (the common case): the gradients come back from
        autograd and are written into the flat gradient with one concatenation (no zeroing, no accumulation into
        each parameter's view)."""
        if self.cuda_graphs:
            torch.compiler.cudagraph_mark_step_begin()
        with self.io.autocast():
            out = self._rows_loss(batch.data, batch.rows) if isinstance(batch, Rows) else self._loss(batch)
        grads = torch.autograd.grad(out.loss, self.flat.params, allow_unused=True)
        if any(g is None for g in grads):  # a parameter this loss does not reach: its gradient is zero
            grads = tuple(torch.zeros_like(p) if g is None else g for p, g in zip(self.flat.params, grads, strict=True))
        torch.cat([g.reshape(-1) for g in grads], out=self.flat.grad)
        td = None if out.td_errors is None else out.td_errors.detach().abs()
        self.sums.add({"loss": out.loss, **out.metrics, "grad_norm": self._apply()})  # one add per step
        return td

    def _clip_and_adam(self) -> torch.Tensor:
        norm = self.flat.clip_(self.max_grad_norm)
        self.flat.adam_step()
        return norm

    def _clip_and_adam_math(self) -> torch.Tensor:
        """What compile traces: the clip and Adam as arithmetic it fuses into a kernel or two."""
        norm = self.flat.clip_(self.max_grad_norm)
        self.flat.adam_math()
        return norm


class FusedBackend:
    """The objective's fused NumPy step (raylab.learner.fused) with the AutogradStep's interface: metrics are
    summed on the host (they already are floats)."""

    def __init__(self, fused: FusedStep):
        self.fused = fused
        self._sums: dict[str, float] = {}

    def zero(self) -> None:
        self._sums = {}

    def step(self, batch: Any) -> tuple[np.ndarray | None, np.ndarray | None]:
        out = self.fused.step(batch)
        for name, value in out.metrics.items():
            self._sums[name] = self._sums.get(name, 0.0) + value
        return out.keys, out.abs_td

    def read(self) -> dict[str, float]:
        return dict(self._sums)


def batch_size(batch: Any) -> int:
    """Samples in a step's batch: the length of its first tensor (or NumPy array, a fused step's input)."""
    if isinstance(batch, Rows):
        return int(batch.rows.shape[0])
    values = (
        list(batch.values()) if isinstance(batch, dict) else [getattr(batch, f.name) for f in dataclasses.fields(batch)]
    )
    for value in values:
        if isinstance(value, torch.Tensor | np.ndarray):
            return int(value.shape[0])
    raise ValueError("a step's batch holds no tensor")


def split_batch(batch: dict[str, torch.Tensor], parts: int) -> list[dict[str, torch.Tensor]]:
    """``parts`` near-equal micro-batches along dim 0 (views, no copies); fewer when the batch is smaller."""
    if parts <= 1:
        return [batch]
    n = batch_size(batch)
    size = -(-n // parts)
    return [{k: v[s : s + size] for k, v in batch.items()} for s in range(0, n, size)]

"""Learner: one class for every algorithm; turns a call's input into optimizer steps and publishes versioned
inference weights.

The algorithm is an Objective (raylab.algos.objective): its modules, its loss, and its Plan for a call's
input (DQN: one step per replay batch; PPO: a round of chunks -> GAE -> epochs x minibatches steps; APPO:
drop over-lagged chunks -> V-trace -> epochs x minibatches). Every step runs through the same machinery:

- ``precision``: bf16 autocast (CPU or CUDA) or fp16 autocast with a GradScaler (CUDA); objectives compute
  the loss itself in fp32 from the networks' outputs.
- ``compile``: torch.compile of the loss (forward and, through AOTAutograd, backward) and of the optimizer
  step with gradient clipping. CUDA-graph safe (``compile_mode=reduce-overhead``): nothing a compiled call
  returns is kept past the next call; metrics are accumulated in place into learner-owned tensors and TD
  errors are copied.
- ``grad_accumulation``: a step's batch split into micro-batches whose gradients add up to one optimizer
  step (weighted by size, so the step equals one big batch).
- ``prefetch``: the input of step k + 1 is pulled and prepared while step k trains: a thread on the CPU
  (for plans whose items are worth it, ``Plan.prefetch_on_cpu``: DQN's replay draws, not PPO's in-memory
  minibatch gathers); on CUDA the same thread issues it on a side stream, host to device copies going
  through reused pinned buffers (raylab.learner.prefetch).
- On CUDA, TF32 and cudnn.benchmark (``tf32``).
- ``fused``: an objective may write a whole optimizer step out itself (``FusedStep``: DQN on a plain MLP, in
  NumPy, on the same tensors); the Learner then runs it instead of autograd, with the same metrics, versions,
  priorities, weights and checkpoints.

Versions count updates (policy lag is measured in them everywhere): an optimizer step for DQN, a call (one
policy iteration) for PPO/APPO. Weights are published as CPU numpy arrays; ``state_dict()`` holds CPU
tensors only, optimizer state included, so a CPU-only process can load a GPU learner's checkpoint.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
import torch

from raylab.algos.objective import LossOutput, Objective, Plan, StepInput
from raylab.errors import ConfigError
from raylab.learner.device import Placement, check_precision, enable_fast_cuda_math, resolve_device
from raylab.learner.fused import FusedStep, fused_step
from raylab.learner.prefetch import PREFETCH_DEPTH, Prefetcher, make_prefetcher
from raylab.metrics.timing import GapTimer
from raylab.types import LearnerStats, Priorities, Weights

__all__ = ["Learner", "Prefetcher", "resolve_device"]

CUDA_GRAPH_MODES = ("reduce-overhead", "max-autotune")
"""torch.compile modes that capture CUDA graphs (their outputs are overwritten by the next replay)."""


class Learner:
    """Owns the objective's modules and the Adam optimizer; ``update_many(data)`` runs one call."""

    def __init__(
        self,
        objective: Objective,
        *,
        lr: float,
        adam_eps: float = 1e-8,
        max_grad_norm: float | None = 10.0,
        device: str = "auto",
        publish_every: int = 1,
        precision: str = "fp32",
        compile: bool = False,
        compile_mode: str = "default",
        grad_accumulation: int = 1,
        prefetch: bool = True,
        tf32: bool = True,
        fused: str | bool = "auto",
    ):
        self.device = resolve_device(device)
        self.amp_dtype = check_precision(precision, self.device)
        self.precision = precision
        if self.device.type == "cuda" and tf32:
            enable_fast_cuda_math()
        self.objective = objective
        for module in objective.modules().values():
            module.to(self.device)
        self.params = trainable_parameters(objective)
        # fused: one kernel for the whole update (5.7x faster than foreach on a small MLP on CPU, measured)
        self.optimizer = torch.optim.Adam(self.params, lr=lr, eps=adam_eps, fused=True)
        self.scaler = torch.amp.GradScaler("cuda", enabled=precision == "fp16")
        self.max_grad_norm = max_grad_norm
        self.publish_every = publish_every
        self.grad_accumulation = int(grad_accumulation)
        self.prefetch = prefetch
        self.io = Placement(self.device, self.amp_dtype, staging_slots=PREFETCH_DEPTH + 2)
        self.version = 0
        self._gap = GapTimer()
        self._sums: dict[str, torch.Tensor] = {}
        """Learner-owned metric accumulators (float64, on the device), zeroed at the start of each call."""
        self._loss: Callable[[Any], LossOutput] = objective.loss
        self._apply: Callable[[], torch.Tensor] = self._clip_and_step
        self._cuda_graphs = compile and compile_mode in CUDA_GRAPH_MODES and self.device.type == "cuda"
        if compile:
            # dynamic=False: a learner's shapes are fixed, so each gets its own graph. With automatic dynamic
            # shapes, the recompile they trigger under reduce-overhead raised an internal TorchDynamo
            # IndexError on CUDA (torch 2.11, H100; tests/unit/test_learner_objectives.py, gpu marker).
            self._loss = torch.compile(objective.loss, mode=compile_mode, dynamic=False)
            if precision != "fp16":  # GradScaler's step has data-dependent control flow: keep it eager
                self._apply = torch.compile(self._clip_and_step, mode=compile_mode, dynamic=False)
        self._fused: FusedStep | None = None
        self.fused_reason = "learner.fused=false"
        """Why the update is not fused ('' when it is)."""
        if fused is not False:
            self._fused, self.fused_reason = self._fused_step(compile, grad_accumulation)
            if fused is True and self._fused is None:
                raise ConfigError(f"learner.fused=true, but {self.fused_reason}: set learner.fused=auto or false")

    def _fused_step(self, compile: bool, grad_accumulation: int) -> tuple[FusedStep | None, str]:
        """The objective's fused step when this learner's options allow one, else (None, why not)."""
        if self.device.type != "cpu" or self.precision != "fp32" or compile or grad_accumulation != 1:
            return None, "the fused update runs on the CPU in fp32, without learner.compile or grad_accumulation"
        made = fused_step(self.objective, self.optimizer, self.max_grad_norm)
        return (None, made) if isinstance(made, str) else (made, "")

    @property
    def fused(self) -> bool:
        """Whether optimizer steps run through the objective's fused step (learner.fused)."""
        return self._fused is not None

    # -- calls ---------------------------------------------------------------------------------------------
    def update_many(self, data: Any) -> LearnerStats:
        """One learner call on ``data`` (DQN: an iterable of replay batches, possibly lazy, e.g. draws from
        the replay; PPO/APPO: the chunks of a round / the arrived chunks); metrics are averaged over its steps
        and synced to the host once, at the end. Its timings hold ``wait_s``, the time since the previous
        call returned, and where a prefetch thread ran, ``batch_wait_s``, the time steps waited for their
        input."""
        waited = self._gap.begin()
        stats = self._call(data, self.prefetch)
        stats.timings = {"wait_s": waited, **(stats.timings or {})}
        self._gap.end()
        return stats

    def update(self, item: Any) -> dict[str, float]:
        """``update_many([item])`` without prefetching, for its metrics (DQN: one step on one batch)."""
        return self._call([item], prefetch=False).metrics

    def _call(self, data: Any, prefetch: bool) -> LearnerStats:
        if self._fused is not None:
            return self._fused_call(data, self._fused)
        start = time.perf_counter()
        before = self.version
        plan: Plan = self.objective.plan(data, self.version, self.io)
        for total in self._sums.values():
            total.zero_()
        seen: set[str] = set()
        keys: list[np.ndarray] = []
        tds: list[torch.Tensor] = []
        count = samples = 0
        prefetch = prefetch and (plan.prefetch_on_cpu or self.device.type != "cpu")
        prefetcher = make_prefetcher(plan.steps, plan.prepare, self.device) if prefetch else None
        stream: Iterable[StepInput] = (
            prefetcher if prefetcher is not None else (plan.prepare(item) for item in plan.steps)
        )
        try:
            for step in stream:
                td = self._step(step.batch, seen)
                if step.keys is not None and td is not None:
                    keys.append(step.keys)
                    tds.append(td)
                count += 1
                samples += batch_size(step.batch) if step.samples is None else step.samples
                if not plan.version_per_call:
                    self._new_version()
        finally:
            if prefetcher is not None:
                prefetcher.close()
        sums: dict[str, float] = {}
        if count:
            names = [k for k in self._sums if k in seen]
            values = torch.stack([self._sums[k] for k in names]).tolist() if names else []  # one host sync
            sums = dict(zip(names, values, strict=True))
        priorities = None
        if keys:
            priorities = Priorities(np.concatenate(keys), torch.cat(tds).float().cpu().numpy())
        stats = self._end_call(plan, start, before, count, samples, sums, priorities)
        stats.timings = {"batch_wait_s": prefetcher.wait_s} if prefetcher is not None else None
        return stats

    def _fused_call(self, data: Any, fused: FusedStep) -> LearnerStats:
        """``_call`` through the objective's fused step: the objective's plan, each step's ``fused_input``
        through ``fused.step``, with the versions, metrics and priorities of the torch path. Steps are pulled
        inline, never by a prefetch thread: against steps of a few hundred µs, the thread's start and its
        hand-offs under the GIL cost more than the draws they would hide."""
        start = time.perf_counter()
        before = self.version
        plan: Plan = self.objective.plan(data, self.version, self.io)
        take = plan.fused_input
        sums: dict[str, float] = {}
        keys: list[np.ndarray] = []
        tds: list[np.ndarray] = []
        count = samples = 0
        for item in plan.steps:
            batch = item if take is None else take(item)
            out = fused.step(batch)
            for name, value in out.metrics.items():
                sums[name] = sums.get(name, 0.0) + value
            if out.keys is not None and out.abs_td is not None:
                keys.append(out.keys)
                tds.append(out.abs_td)
            count += 1
            samples += batch_size(batch)
            if not plan.version_per_call:
                self._new_version()
        priorities = Priorities(np.concatenate(keys), np.concatenate(tds).astype(np.float32)) if keys else None
        return self._end_call(plan, start, before, count, samples, sums, priorities)

    def _end_call(
        self,
        plan: Plan,
        start: float,
        before: int,
        count: int,
        samples: int,
        sums: dict[str, float],
        priorities: Priorities | None,
    ) -> LearnerStats:
        """A call's last version (one per call: PPO/APPO) and its stats: metric ``sums`` averaged over its
        ``count`` steps, whether it published (``before``: the version it started at)."""
        if plan.version_per_call and count:
            self._new_version()
        metrics = dict(plan.metrics)
        metrics.update({k: v / count for k, v in sums.items()} if count else {})
        if plan.version_per_call:
            published = self.version > before
        else:
            published = self.version // self.publish_every > before // self.publish_every
        return LearnerStats(
            updates=count,
            samples=samples,
            version=self.version,
            metrics=metrics,
            seconds=time.perf_counter() - start,
            published=published,
            priorities=priorities,
        )

    def _new_version(self) -> None:
        self.version += 1
        self.objective.after_update(self.version)

    # -- one optimizer step --------------------------------------------------------------------------------
    def _step(self, batch: Any, seen: set[str]) -> torch.Tensor | None:
        """One optimizer step over ``grad_accumulation`` micro-batches; returns the per-sample |TD errors|
        (a copy) when the objective gives them. Metrics go into the learner's accumulators."""
        self.optimizer.zero_grad(set_to_none=True)
        parts = split_batch(batch, self.grad_accumulation)
        total = batch_size(batch)
        tds = []
        for part in parts:
            weight = batch_size(part) / total if len(parts) > 1 else 1.0
            if self._cuda_graphs:  # the previous replay's outputs are dead (used, added up or copied below)
                torch.compiler.cudagraph_mark_step_begin()
            with self.io.autocast():
                out = self._loss(part)
            loss = out.loss * weight if len(parts) > 1 else out.loss
            (self.scaler.scale(loss) if self.scaler.is_enabled() else loss).backward()
            # Under CUDA graphs the compiled call's outputs are overwritten by its next replay: each is used
            # now, added in place into a learner-owned tensor, or copied (abs() makes a new tensor).
            self._accumulate("loss", out.loss, weight, seen)
            for name, value in out.metrics.items():
                self._accumulate(name, value, weight, seen)
            if out.td_errors is not None:
                tds.append(out.td_errors.detach().abs())
        if self.scaler.is_enabled():
            self.scaler.unscale_(self.optimizer)
            grad_norm = self._clip()
            self.scaler.step(self.optimizer)
            self.scaler.update()
        else:
            grad_norm = self._apply()
        self._accumulate("grad_norm", grad_norm, 1.0, seen)
        if not tds:
            return None
        return torch.cat(tds) if len(tds) > 1 else tds[0]

    def _accumulate(self, name: str, value: torch.Tensor, weight: float, seen: set[str]) -> None:
        total = self._sums.get(name)
        if total is None:
            total = self._sums[name] = torch.zeros((), dtype=torch.float64, device=self.device)
        seen.add(name)
        total.add_(value.detach(), alpha=weight)

    def _clip(self) -> torch.Tensor:
        """Clip to max_grad_norm; returns the norm before clipping (computed without clipping when None)."""
        if self.max_grad_norm is None:
            return torch.nn.utils.get_total_norm([p.grad for p in self.params if p.grad is not None])
        return torch.nn.utils.clip_grad_norm_(self.params, self.max_grad_norm)

    def _clip_and_step(self) -> torch.Tensor:
        grad_norm = self._clip()
        self.optimizer.step()
        return grad_norm

    # -- weights and state ---------------------------------------------------------------------------------
    def get_weights(self) -> Weights:
        """Inference weights as CPU numpy arrays, tagged with the current version (put once per version)."""
        state = self.objective.policy_module().state_dict()
        return Weights(self.version, {k: v.detach().cpu().numpy().copy() for k, v in state.items()})

    def state_dict(self) -> dict[str, Any]:
        """Everything to resume training: modules, optimizer, grad scaler, version, the objective's own state
        (APPO: dropped_chunks). CPU tensors only."""
        modules = {name: m.state_dict() for name, m in self.objective.modules().items()}
        state = {
            **self.objective.state_dict(),
            "version": self.version,
            "modules": modules,
            "optimizer": self.optimizer.state_dict(),
        }
        if self.scaler.is_enabled():
            state["grad_scaler"] = self.scaler.state_dict()
        return to_cpu(state)

    def load_state_dict(self, state: dict[str, Any]) -> None:
        for name, module in self.objective.modules().items():
            module.load_state_dict(state["modules"][name])
        self.optimizer.load_state_dict(state["optimizer"])
        if self._fused is not None:  # load_state_dict replaced Adam's state tensors: back into the flat buffers
            self._fused.bind_optimizer_state()
        if "grad_scaler" in state and self.scaler.is_enabled():
            self.scaler.load_state_dict(state["grad_scaler"])
        self.objective.load_state_dict(state)
        self.version = int(state["version"])


def trainable_parameters(objective: Objective) -> list[torch.nn.Parameter]:
    """The parameters of the objective's modules that require grad, each once, in module order."""
    params: list[torch.nn.Parameter] = []
    seen: set[int] = set()
    for module in objective.modules().values():
        for p in module.parameters():
            if p.requires_grad and id(p) not in seen:
                seen.add(id(p))
                params.append(p)
    return params


def batch_size(batch: Any) -> int:
    """Samples in a step's batch: the length of its first tensor (or NumPy array, a fused step's input)."""
    for value in _values(batch):
        if isinstance(value, torch.Tensor | np.ndarray):
            return int(value.shape[0])
    raise ValueError("a step's batch holds no tensor")


def split_batch(batch: Any, parts: int) -> list[Any]:
    """``parts`` near-equal micro-batches along dim 0 (views, no copies); fewer when the batch is smaller."""
    if parts <= 1:
        return [batch]
    n = batch_size(batch)
    size = -(-n // parts)
    return [_slice(batch, slice(s, s + size)) for s in range(0, n, size)]


def _values(batch: Any) -> list[Any]:
    if isinstance(batch, dict):
        return list(batch.values())
    return [getattr(batch, f.name) for f in dataclasses.fields(batch)]


def _slice(batch: Any, index: slice) -> Any:
    if isinstance(batch, dict):
        return {k: v[index] if isinstance(v, torch.Tensor) else v for k, v in batch.items()}
    return dataclasses.replace(
        batch,
        **{
            f.name: getattr(batch, f.name)[index]
            for f in dataclasses.fields(batch)
            if isinstance(getattr(batch, f.name), torch.Tensor)
        },
    )


def to_cpu(value: Any) -> Any:
    """``value`` with every tensor (in dicts, lists, tuples) detached and on the CPU. A view into a larger buffer
    (the fused DQN step's flat parameters and Adam moments) is copied: pickled, or sent through Ray, each view
    would carry the whole buffer (a checkpoint 4.6x its size, measured on a 128x128 MLP)."""
    if isinstance(value, torch.Tensor):
        tensor = value.detach().cpu()
        return tensor.clone() if tensor.untyped_storage().nbytes() > tensor.numel() * tensor.element_size() else tensor
    if isinstance(value, dict):
        return {k: to_cpu(v) for k, v in value.items()}
    if isinstance(value, list):
        return [to_cpu(v) for v in value]
    if isinstance(value, tuple):
        return tuple(to_cpu(v) for v in value)
    return value

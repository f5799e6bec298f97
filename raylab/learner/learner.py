"""Learner: one class for every algorithm; turns a call's input into optimizer steps and publishes versioned
inference weights.

The algorithm is an objective (raylab.algos.objective), math only. The Learner owns the data path and every
step:

- **Replay batches** (DQN, R2D2: ``ReplayObjective``): one optimizer step per batch; its arrays go to the device
  (through reused pinned buffers on CUDA). ``prefetch``: a thread pulls and prepares batch k + 1 while step k
  trains, where pulling waits (draws from the replay); on CUDA it issues the copies on a side stream.
- **Rounds** (PPO, APPO: ``RoundObjective``): the call's accepted chunks are joined into a ``Round`` on the
  device (raylab.learner.rounds), the objective computes its targets there (value pass, GAE or V-trace, in the
  learner's precision, no gradients), and ``epochs x minibatches`` steps train on minibatches whose rows are
  drawn on the device and gathered there. Nothing crosses back to the host but the call's metrics.
- **One step** (raylab.learner.step): flat parameters, gradients and Adam state (raylab.learner.flat); the
  loss under ``precision`` (bf16 autocast on CPU or CUDA, fp16 with a GradScaler on CUDA); ``compile``:
  torch.compile of the gather, finish and loss (forward, and through AOTAutograd backward) and of the clip and
  Adam step; ``grad_accumulation`` micro-batches; one clip, one fused Adam kernel. On CUDA, TF32 and
  cudnn.benchmark (``tf32``).
- ``fused``: for a small MLP on the CPU in fp32 an objective's whole step written out in NumPy
  (raylab.learner.fused) replaces autograd, on the same flat buffers, with the same metrics and versions.
- **One host sync per call**, for the metrics (and a prioritized replay's TD errors).

Versions count updates (policy lag is measured in them everywhere): an optimizer step for DQN, a call (one
policy iteration) for PPO/APPO; weights are published every ``publish_every`` versions, from the flat buffer
(raylab.learner.publish). ``state_dict()`` holds CPU tensors only, optimizer state included, so a CPU-only
process can load a GPU learner's checkpoint.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from raylab.algos.objective import Objective, ReplayObjective, RoundObjective
from raylab.errors import ConfigError
from raylab.learner.device import Placement, check_precision, enable_fast_cuda_math, resolve_device
from raylab.learner.flat import FlatParams
from raylab.learner.fused import fused_step
from raylab.learner.prefetch import PREFETCH_DEPTH, Prefetcher, make_prefetcher
from raylab.learner.publish import PolicyAverage, WeightsPublisher
from raylab.learner.rounds import Gather, RoundLoader, minibatch_rows
from raylab.learner.step import AutogradStep, FusedBackend, Rows, batch_size
from raylab.metrics.timing import GapTimer
from raylab.models.precision import resolve_precision
from raylab.types import LearnerStats, Priorities, Weights

__all__ = ["Learner", "Prefetcher", "resolve_device"]


@dataclass
class StepInput:
    """What one optimizer step trains on."""

    batch: Any
    """Tensors on the learner's device (a dict, or a round's ``Rows``), or a fused step's NumPy input."""
    keys: np.ndarray | None = None
    """Replay keys of the samples, when the step's TD errors go back to a prioritized replay."""
    samples: int | None = None
    """Env steps the batch holds, when its length does not count them (sequences)."""


@dataclass
class CallPlan:
    """How one call's input becomes optimizer steps (the Learner's own; objectives never see it)."""

    items: Iterable[Any]
    """One item per optimizer step, possibly lazy; ``prepare`` turns each into a StepInput."""
    prepare: Callable[[Any], StepInput]
    metrics: dict[str, Any] = field(default_factory=dict)
    """Metrics known before the steps (floats, or tensors read with the call's one host sync)."""
    version_per_call: bool = False
    prefetch: bool = False
    """Whether a prefetch thread pulls and prepares the items ahead (it pays where pulling waits)."""


ADAM_HYPER = ("lr", "betas", "eps", "weight_decay")
"""The optimizer group's hyper-parameters a Learner keeps through a checkpoint's load."""


class Learner:
    """Owns the objective's modules, the flat parameters and Adam; ``update_many(data)`` runs one call."""

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
        compile_mode: str = "auto",
        grad_accumulation: int = 1,
        prefetch: bool = True,
        tf32: bool = True,
        fused: str | bool = "auto",
        seed: int = 0,
        average_rate: float | None = None,
    ):
        self.device = resolve_device(device)
        self.precision = resolve_precision(precision, self.device)
        """The precision trained in (``auto`` resolved: bf16 on a CPU with native bf16, else fp32)."""
        self.amp_dtype = check_precision(self.precision, self.device)
        if self.device.type == "cuda" and tf32:
            enable_fast_cuda_math()
        self.objective = objective
        for module in objective.modules().values():
            module.to(self.device)
        self.params = trainable_parameters(objective)
        self.optimizer = torch.optim.Adam(self.params, lr=lr, eps=adam_eps, fused=True)
        self.flat = FlatParams(self.params, self.optimizer)
        self.scaler = torch.amp.GradScaler("cuda", enabled=self.precision == "fp16")
        self.max_grad_norm = max_grad_norm
        self.publish_every = publish_every
        self.grad_accumulation = int(grad_accumulation)
        self.prefetch = prefetch
        self.io = Placement(self.device, self.amp_dtype, staging_slots=PREFETCH_DEPTH + 2)
        self.rounds = RoundLoader(self.device)
        self.generator = torch.Generator(device=self.device).manual_seed(int(seed))
        """Draws the minibatch rows of every round, on the device."""
        self.version = 0
        self._gap = GapTimer()
        self._gather = Gather()
        self._prefetch_thread: ThreadPoolExecutor | None = None
        """The one thread prefetch fills from, kept from call to call."""
        self._publisher = WeightsPublisher(objective.policy_module(), self.flat)
        self._average = None if average_rate is None else PolicyAverage(self._publisher, average_rate)
        """learner.average_rate's moving average of the policy, which get_eval_weights publishes."""
        self._round_based = hasattr(objective, "targets")
        finish = getattr(objective, "finish_minibatch", None) if self._round_based else None
        self._autograd = AutogradStep(
            objective, self.flat, self.io, max_grad_norm=max_grad_norm, grad_accumulation=self.grad_accumulation,
            scaler=self.scaler, compile=compile, gather=self._gather, finish=finish,
            compile_mode=("reduce-overhead" if self.device.type == "cuda" else "default")
            if compile_mode == "auto" else compile_mode,
        )  # fmt: skip
        self._fused: FusedBackend | None = None
        self.fused_reason = "learner.fused=false"
        """Why the update is not fused ('' when it is)."""
        if fused is not False:
            self._fused, self.fused_reason = self._fused_backend(compile, grad_accumulation)
            if fused is True and self._fused is None:
                raise ConfigError(f"learner.fused=true, but {self.fused_reason}: set learner.fused=auto or false")

    def _fused_backend(self, compile: bool, grad_accumulation: int) -> tuple[FusedBackend | None, str]:
        """The objective's fused step when this learner's options allow one, else (None, why not)."""
        if self.device.type != "cpu" or self.precision != "fp32" or compile or grad_accumulation != 1:
            return None, "the fused update runs on the CPU in fp32, without learner.compile or grad_accumulation"
        made = fused_step(self.objective, self.flat, self.max_grad_norm)
        return (None, made) if isinstance(made, str) else (FusedBackend(made), "")

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
        start = time.perf_counter()
        before = self.version
        plan = self._round_plan(data) if self._round_based else self._replay_plan(data)
        backend = self._fused or self._autograd.sums
        backend.zero()
        keys: list[np.ndarray] = []
        tds: list[Any] = []
        count = samples = 0
        prefetcher = None
        if prefetch and plan.prefetch:
            if self._prefetch_thread is None:
                self._prefetch_thread = ThreadPoolExecutor(1, thread_name_prefix="raylab-prefetch")
            prefetcher = make_prefetcher(plan.items, plan.prepare, self.device, executor=self._prefetch_thread)
        stream: Iterable[StepInput] = prefetcher if prefetcher is not None else map(plan.prepare, plan.items)
        try:
            for step in stream:
                td: Any = (
                    self._fused.step(step.batch)[1] if self._fused is not None else self._autograd.step(step.batch)
                )
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
        if plan.version_per_call and count:
            self._new_version()
        if self._average is not None:
            self._average.update(count)
        published = self.version // self.publish_every > before // self.publish_every
        if published:
            self._publisher.stage()  # the weights' copy to the host, queued before the metrics' sync
        sums, extra = backend.read(), self._read(plan.metrics)  # the call's one host sync (CUDA)
        priorities = None
        if keys:
            td_all = np.concatenate(tds) if self._fused is not None else torch.cat(tds).float().cpu().numpy()
            priorities = Priorities(np.concatenate(keys), td_all.astype(np.float32, copy=False))
        self.rounds.end()
        metrics = {**extra, **({k: v / count for k, v in sums.items()} if count else {})}
        stats = LearnerStats(
            updates=count, samples=samples, version=self.version, metrics=metrics,
            seconds=time.perf_counter() - start, published=published, priorities=priorities,
        )  # fmt: skip
        stats.timings = {"batch_wait_s": prefetcher.wait_s} if prefetcher is not None else None
        return stats

    @staticmethod
    def _read(metrics: dict[str, Any]) -> dict[str, float]:
        tensors = {k: v for k, v in metrics.items() if isinstance(v, torch.Tensor)}
        values = torch.stack([v.detach().float().reshape(()) for v in tensors.values()]).tolist() if tensors else []
        return {
            **{k: float(v) for k, v in metrics.items() if k not in tensors},
            **dict(zip(tensors, values, strict=True)),
        }

    def _replay_plan(self, data: Iterable[Any]) -> CallPlan:
        """One step per replay batch: its arrays on the device (a fused step takes the batch as it is)."""
        objective: ReplayObjective = self.objective  # type: ignore[assignment]
        fused = self._fused is not None

        def prepare(item: Any) -> StepInput:
            keys = item.indices if getattr(item, "weights", None) is not None else None
            arrays, samples = objective.batch_arrays(item)
            if fused:
                return StepInput(item, keys, samples)
            return StepInput(self.io.tensors(arrays), keys, samples)

        # fused: pulled inline (against steps of a few hundred us, a thread's hand-offs cost more than the draws)
        return CallPlan(data, prepare, prefetch=not fused)

    def _round_plan(self, data: Iterable[Any]) -> CallPlan:
        """A round: the accepted chunks joined on the device, their targets, ``epochs x minibatches`` steps."""
        objective: RoundObjective = self.objective  # type: ignore[assignment]
        chunks, metrics = objective.accept(list(data), self.version)
        if not chunks:
            return CallPlan((), StepInput, dict(metrics), version_per_call=True)
        self.rounds.begin()
        with torch.no_grad(), self.io.autocast():
            targets = objective.targets(self.rounds.load(chunks))
        count = len(targets.rows) if targets.rows is not None else len(next(iter(targets.data.values())))
        items: Iterator[torch.Tensor] = minibatch_rows(
            count, targets.epochs, targets.minibatches, self.generator, self.device
        )
        if targets.rows is not None:
            items = (targets.rows[rows] for rows in items)
        samples = targets.steps_per_row
        data_ = targets.data
        if self._fused is not None:  # NumPy throughout: torch's dispatch on these small arrays cost 14 % of a call
            arrays = {k: v.numpy() for k, v in data_.items()}  # views of the round's CPU tensors

            def prepare(rows: torch.Tensor) -> StepInput:
                index = rows.numpy()
                return StepInput({k: a[index] for k, a in arrays.items()})  # copies: the step normalizes in place
        else:

            def prepare(rows: torch.Tensor) -> StepInput:
                return StepInput(Rows(data_, rows), samples=len(rows) * samples if samples != 1 else None)

        return CallPlan(items, prepare, {**metrics, **targets.metrics}, version_per_call=True)

    def _new_version(self) -> None:
        self.version += 1
        self.objective.after_update(self.version)

    # -- weights and state ---------------------------------------------------------------------------------
    def get_weights(self) -> Weights:
        """Inference weights as CPU numpy arrays of their own, tagged with the current version (put once per
        version)."""
        return self._publisher.weights(self.version)

    def get_eval_weights(self) -> Weights:
        """The weights evaluations score and the run keeps as its policy: learner.average_rate's moving average
        of the policy, tagged with the current version; without it, the newest (``get_weights``)."""
        return self.get_weights() if self._average is None else self._average.weights(self.version)

    def state_dict(self) -> dict[str, Any]:
        """Everything to resume training: modules, optimizer, grad scaler, version, the objective's own state
        (APPO: dropped_chunks). CPU tensors only."""
        modules = {name: m.state_dict() for name, m in self.objective.modules().items()}
        self.flat.sync()  # the optimizer's per-parameter step counts, from the flat step
        state = {
            **self.objective.state_dict(),
            "version": self.version,
            "modules": modules,
            "optimizer": self.optimizer.state_dict(),
        }
        if self.scaler.is_enabled():
            state["grad_scaler"] = self.scaler.state_dict()
        if self._average is not None:
            state["policy_average"] = self._average.state()
        return to_cpu(state)

    @property
    def lr(self) -> float:
        """Adam's current learning rate."""
        return float(self.optimizer.param_groups[0]["lr"])

    def set_lr(self, lr: float) -> None:
        """Train with ``lr`` from the next optimizer step on (learner.lr_schedule), whichever update path runs."""
        self.flat.set_lr(lr)

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Resume from ``state``. Adam's hyper-parameters stay this learner's (its config's; the lr its
        schedule's): the optimizer's state dict carries the ones it was saved with, which would otherwise
        silently override a resumed run's learner.lr or learner.adam_eps."""
        group = self.optimizer.param_groups[0]
        own = {key: group[key] for key in ADAM_HYPER}
        for name, module in self.objective.modules().items():
            module.load_state_dict(state["modules"][name])
        self.optimizer.load_state_dict(state["optimizer"])
        self.optimizer.param_groups[0].update(own)
        self.flat.bind_optimizer_state()  # load_state_dict replaced Adam's state tensors: back into the flat buffers
        if self._fused is not None:
            self._fused.fused.bind_optimizer_state()
        if "grad_scaler" in state and self.scaler.is_enabled():
            self.scaler.load_state_dict(state["grad_scaler"])
        self.objective.load_state_dict(state)
        self.version = int(state["version"])
        if self._average is not None:
            self._average.load(state.get("policy_average"))


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

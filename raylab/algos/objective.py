"""What an algorithm gives the Learner: the Objective protocol.

An objective owns its modules and its loss, and says how one learner call's input becomes optimizer steps
(a ``Plan``): DQN takes one step per replay batch; PPO turns a round of chunks into GAE targets and
``epochs x minibatches`` steps; APPO drops over-lagged chunks, computes V-trace targets, then the same.
Everything else (device placement, precision, torch.compile, gradient accumulation, clipping, the optimizer
step, prefetching, versions, checkpoints) is the Learner's, identical for every algorithm.

This module imports torch only for types. It lives with the algorithms, which implement it; the Learner
(raylab.learner) consumes it, so algorithms never import the Learner.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol

import numpy as np
import torch
from torch import nn


class LossOutput(NamedTuple):
    """One (micro-)batch's loss and what to report about it."""

    loss: torch.Tensor
    """Scalar to minimize (the Learner reports it as ``loss``)."""
    metrics: dict[str, torch.Tensor]
    """Scalar metric tensors; the Learner averages them over micro-batches and steps (weighted by size)."""
    td_errors: torch.Tensor | None = None
    """Per-sample TD errors (DQN: the prioritized replay's new priorities), else None."""


@dataclass
class StepInput:
    """What one optimizer step trains on."""

    batch: Any
    """A dict or dataclass of tensors on the learner's device, all with the samples on dim 0 (None fields
    allowed); the Learner splits it into micro-batches along dim 0."""
    keys: np.ndarray | None = None
    """Replay keys of the samples, when the step's TD errors go back to a prioritized replay."""
    samples: int | None = None
    """Env steps the batch holds, when dim 0 does not count them (sequences of a recurrent policy)."""


@dataclass
class Plan:
    """How one learner call's input becomes optimizer steps."""

    steps: Iterable[Any]
    """One item per optimizer step, possibly lazy; ``prepare`` turns each into a ``StepInput``. With
    learner.prefetch the Learner pulls and prepares item k + 1 while step k trains."""
    prepare: Callable[[Any], StepInput]
    metrics: dict[str, float] = field(default_factory=dict)
    """Metrics of the call known before its steps (APPO: dropped_chunks, lag_mean, rho_mean)."""
    version_per_call: bool = False
    """False: every optimizer step is one version (DQN; weights published every learner.publish_every).
    True: the call is one version, published whenever it made a step (a PPO/APPO policy iteration)."""
    fused_input: Callable[[Any], Any] | None = None
    """What a fused step (learner.fused) takes for each item of ``steps`` in place of ``prepare``'s StepInput
    (PPO/APPO: the minibatch gathered as NumPy arrays); None: the item itself (DQN: the replay batch)."""
    prefetch_on_cpu: bool = True
    """Whether learner.prefetch prepares these steps ahead in a thread on a CPU learner: worth it where
    pulling an item waits on something (DQN's draws from the replay), not for minibatches gathered from
    tensors already in memory (PPO, APPO), where the hand-offs between the two threads cost more than the
    gather (benchmarks/core_micro_ppo_learner.json). On CUDA the side-stream prefetch runs either way."""


class DeviceIO(Protocol):
    """The Learner's device and precision, as an objective's ``plan`` sees them."""

    device: torch.device

    def tensor(self, array: np.ndarray) -> torch.Tensor:
        """``array`` on the device (a plain copy; on the CPU a view of it)."""
        ...

    def tensors(self, arrays: dict[str, np.ndarray]) -> dict[str, torch.Tensor]:
        """Batch arrays on the device; on CUDA through reused pinned host buffers, copied asynchronously
        on the current stream (a side stream while prefetching)."""
        ...

    def autocast(self) -> AbstractContextManager[Any]:
        """The learner's precision for forward passes outside ``loss`` (no-op in fp32)."""
        ...


class Objective(Protocol):
    """An algorithm, as the Learner trains it."""

    def modules(self) -> dict[str, nn.Module]:
        """Every module a checkpoint holds; their parameters that require grad are the ones optimized."""
        ...

    def policy_module(self) -> nn.Module:
        """The module rollout workers run (its state dict is what gets published)."""
        ...

    def plan(self, data: Any, version: int, io: DeviceIO) -> Plan:
        """Turn one call's input (DQN: an iterable of replay batches; PPO/APPO: chunks) into steps, at
        learner version ``version``."""
        ...

    def loss(self, batch: Any) -> LossOutput:
        """The loss of one (micro-)batch; run under the learner's autocast and, with learner.compile, compiled.
        Network outputs should be cast to fp32 before the loss math."""
        ...

    def after_update(self, version: int) -> None:
        """Called after each new version (DQN: target network updates)."""
        ...

    def state_dict(self) -> dict[str, Any]:
        """Objective state beyond its modules (APPO: dropped_chunks), merged into the learner's state."""
        ...

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore from a learner state (the keys ``state_dict`` wrote, possibly missing in old ones)."""
        ...

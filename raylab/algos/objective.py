"""What an algorithm gives the Learner: the objective protocols, and the data they see on the learner's device.

An algorithm here is math: its modules, its loss, and (for the on-policy ones) the targets of a round. The
Learner (raylab.learner) owns the data path: it joins a call's chunks into a ``Round`` on its device, copies
replay batches there, draws minibatches, and runs every optimizer step (precision, torch.compile, gradient
accumulation, clipping, Adam, prefetching, versions, publishing, checkpoints), identically for every algorithm.

- A ``ReplayObjective`` (DQN, R2D2) trains one optimizer step per replay batch: it names the batch's arrays
  (``batch_arrays``) and gives the loss of their tensors.
- A ``RoundObjective`` (PPO, APPO) trains ``epochs x minibatches`` steps per call: it chooses the call's chunks
  (``accept``: APPO drops over-lagged ones), computes a round's ``Targets`` on the device (one value pass,
  GAE or V-trace), and gives the loss of a minibatch of them.

This module imports torch only for types. It lives with the algorithms, which implement it; the Learner
consumes it, so algorithms never import the Learner.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol

import numpy as np
import torch
from torch import nn

from raylab.types import Chunk


class LossOutput(NamedTuple):
    """One (micro-)batch's loss and what to report about it."""

    loss: torch.Tensor
    """Scalar to minimize (the Learner reports it as ``loss``)."""
    metrics: dict[str, torch.Tensor]
    """Scalar metric tensors; the Learner averages them over micro-batches and steps (weighted by size)."""
    td_errors: torch.Tensor | None = None
    """Per-sample TD errors (DQN: the prioritized replay's new priorities), else None."""


@dataclass
class Round:
    """A call's chunks joined along the env axis on the learner's device, time-major (``T`` steps, ``E`` envs).
    Frames stay uint8: the encoder scales them."""

    obs: torch.Tensor
    """``[T + 1, E, ...]``: each step's observation and the one after the last step."""
    actions: torch.Tensor
    """``[T, E, ...]``."""
    rewards: torch.Tensor
    """``[T, E]`` float32."""
    terminated: torch.Tensor
    """``[T, E]`` bool."""
    truncated: torch.Tensor
    """``[T, E]`` bool (a crash sets it too)."""
    final_obs: torch.Tensor
    """``[F, ...]`` the last observations of the episodes truncated in the round."""
    final_index: torch.Tensor
    """``[F, 2]`` int64 ``(t, e)`` of each of them."""
    log_probs: torch.Tensor | None
    """``[T, E]`` the behaviour policy's log-probabilities of the actions (APPO), or None."""
    initial_state: torch.Tensor | None
    """``[E, S]`` a recurrent policy's state at each env's first step, or None."""
    crashed: np.ndarray | None
    """``[T, E]`` on the host: the steps an env crashed at (no real outcome); None when none did."""

    @property
    def num_steps(self) -> int:
        return int(self.actions.shape[0])

    @property
    def num_envs(self) -> int:
        return int(self.actions.shape[1])


@dataclass
class Targets:
    """What a round trains on: tensors with one row per training unit on dim 0 (a step; a recurrent model's
    sequence), and how the Learner cuts them into optimizer steps."""

    data: dict[str, torch.Tensor]
    """Every tensor a minibatch holds, all with the same number of rows, on the learner's device."""
    epochs: int
    minibatches: int
    """Each epoch is one shuffled pass over the rows, cut into this many minibatches (one step each)."""
    rows: torch.Tensor | None = None
    """The rows that train, when some do not (crashed steps); None: all of them."""
    steps_per_row: int = 1
    """Env steps a row holds (a sequence's length), for the samples a step reports."""
    metrics: dict[str, float | torch.Tensor] = field(default_factory=dict)
    """The round's own metrics (tensors stay on the device until the call's one host sync)."""


class Objective(Protocol):
    """What every algorithm the Learner trains has."""

    def modules(self) -> dict[str, nn.Module]:
        """Every module a checkpoint holds; their parameters that require grad are the ones optimized."""
        ...

    def policy_module(self) -> nn.Module:
        """The module rollout workers run (its state dict is what gets published)."""
        ...

    def loss(self, batch: dict[str, torch.Tensor]) -> LossOutput:
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


class ReplayObjective(Objective, Protocol):
    """One optimizer step per replay batch; every step is one version."""

    def batch_arrays(self, batch: Any) -> tuple[dict[str, np.ndarray], int | None]:
        """The arrays of a replay batch the loss reads (the Learner copies them to its device), and the env steps
        it trains when its length does not count them (R2D2's sequences), else None."""
        ...


class RoundObjective(Objective, Protocol):
    """``epochs x minibatches`` optimizer steps per call on a round's targets; a call is one version."""

    def accept(self, chunks: Sequence[Chunk], version: int) -> tuple[list[Chunk], dict[str, float]]:
        """The chunks of a call that train at learner version ``version``, and metrics about the choice."""
        ...

    def targets(self, round: Round) -> Targets:
        """The round seen through the current weights (no gradients), as minibatch rows."""
        ...

    def finish_minibatch(self, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """A drawn minibatch made ready for the loss (advantages normalized over it), before any split into
        micro-batches, so gradient accumulation sees the minibatch's statistics."""
        ...

"""The Learner's fused update: for small MLPs on the CPU, a whole optimizer step written out in NumPy (loss,
gradients, clipping, Adam), 1.6-3.4x faster per learner call than autograd (benchmarks/ppo_fused_update.json,
dqn_fused_update.json). It is one backend of the Learner (learner.fused), not part of any algorithm: the loss
users read is the torch one under raylab/algos; each fused step here is held equal to it, call by call and
option by option, by tests/unit/test_dqn_fused.py and test_ppo_fused.py, which are this backend's contract.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from raylab.algos.dqn.objective import DQN
from raylab.algos.dqn.r2d2 import R2D2
from raylab.algos.objective import Objective
from raylab.algos.ppo.objective import ClippedObjective
from raylab.learner.flat import FlatParams
from raylab.learner.fused.dqn import FusedDQNStep
from raylab.learner.fused.ppo import FusedActorCriticStep


class FusedResult(Protocol):
    """One fused optimizer step's metrics (the torch path's names) and, for a prioritized batch, its replay keys
    and per-sample |TD errors|."""

    metrics: dict[str, float]
    keys: np.ndarray | None
    abs_td: np.ndarray | None


class FusedStep(Protocol):
    """A whole optimizer step written out without autograd (loss, gradients, clipping, the optimizer's own
    update), for shapes where that beats autograd (a small MLP on the CPU): the Learner's fused backend
    (raylab.learner.fused), used under learner.fused and held equal to ``Objective.loss`` by its tests."""

    def step(self, batch: Any) -> FusedResult:
        """One optimizer step on one item of the plan's input (DQN: a replay Batch), in place."""
        ...

    def bind_optimizer_state(self) -> None:
        """Re-attach to the optimizer's state after ``optimizer.load_state_dict`` replaced it."""
        ...


NOT_FUSED = "this algorithm's update is not fused (DQN's, PPO's and APPO's are)"


def fused_step(objective: Objective, flat: FlatParams, max_grad_norm: float | None) -> FusedStep | str:
    """The fused step of ``objective`` (DQN, PPO, APPO) on the learner's flat parameters and Adam state, or why
    there is none (another algorithm, or a network or loss option the NumPy step does not write out)."""
    optimizer = flat.optimizer
    if isinstance(objective, R2D2):
        return "R2D2's sequence update (algo=dqn with model.recurrent) is not fused"
    if isinstance(objective, DQN):
        reason = FusedDQNStep.unsupported(objective.q_net, objective.target_net, objective.quantile, optimizer)
        if reason:
            return reason
        return FusedDQNStep(
            objective.q_net, objective.target_net, flat, double=objective.double,
            huber_delta=objective.huber_delta, max_grad_norm=max_grad_norm,
        )  # fmt: skip
    if isinstance(objective, ClippedObjective):
        reason = FusedActorCriticStep.unsupported(objective.model, optimizer)
        if reason:
            return reason
        return FusedActorCriticStep(
            objective.model, flat, clip=objective.clip, value_clip=objective.value_clip,
            value_coef=objective.value_coef, entropy_coef=objective.entropy_coef, max_grad_norm=max_grad_norm,
            normalize_advantages=objective.normalize_advantages,
        )  # fmt: skip
    return NOT_FUSED

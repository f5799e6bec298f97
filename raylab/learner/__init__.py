"""The Learner: one class for every algorithm (an Objective), update_many(data) -> stats, versioned weights;
checkpoints. Which learner options apply to which algorithm is the config's table (raylab/config/applicability.py).

Attributes load lazily: importing ``raylab.learner`` imports no torch until one is used.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from raylab.algos.objective import LossOutput, Objective, ReplayObjective, RoundObjective
    from raylab.learner.checkpoint import load_checkpoint, save_checkpoint
    from raylab.learner.device import resolve_device
    from raylab.learner.learner import Learner

_WHERE = {
    "Learner": "raylab.learner.learner",
    "LossOutput": "raylab.algos.objective",
    "Objective": "raylab.algos.objective",
    "ReplayObjective": "raylab.algos.objective",
    "RoundObjective": "raylab.algos.objective",
    "load_checkpoint": "raylab.learner.checkpoint",
    "resolve_device": "raylab.learner.device",
    "save_checkpoint": "raylab.learner.checkpoint",
}

__all__ = [
    "Learner", "LossOutput", "Objective", "ReplayObjective", "RoundObjective", "load_checkpoint",
    "resolve_device", "save_checkpoint",
]  # fmt: skip


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'raylab.learner' has no attribute {name!r}")
    return getattr(importlib.import_module(_WHERE[name]), name)

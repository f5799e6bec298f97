"""Which learner options apply to which algorithm: an option that does not apply is refused in one line
naming the fix, never ignored. Called by the config's cross-field check and by the learner builder.

No torch here: ``raylab.config`` imports this module.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from raylab.config.algorithms import ALGORITHMS
from raylab.errors import ConfigError

SPEED_OPTIONS = ("precision", "compile", "compile_mode", "grad_accumulation", "prefetch", "tf32", "fused")
"""What the Learner does with each optimizer step; meaningless where no Learner steps an optimizer."""

NO_LEARNER = {name: info.no_learner for name, info in ALGORITHMS.items() if info.no_learner is not None}
"""Algorithms without a Learner, and why (raylab.config.algorithms)."""


def check_learner_options(algo_name: str, learner: Any) -> None:
    """ConfigError when ``learner`` (a LearnerConfig) sets an option that ``algo_name`` would ignore:
    a speed option off its default for an algorithm without a Learner (a3c), or learner.compile_mode
    without learner.compile."""
    defaults = {f.name: f.default for f in dataclasses.fields(learner)}
    changed = [name for name in SPEED_OPTIONS if getattr(learner, name) != defaults[name]]
    if algo_name in NO_LEARNER and changed:
        settings = ", ".join(f"learner.{name}={_show(getattr(learner, name))}" for name in changed)
        raise ConfigError(
            f"{settings} {'does' if len(changed) == 1 else 'do'} not apply to algo={algo_name} "
            f"({NO_LEARNER[algo_name]}, not by a learner): remove {'it' if len(changed) == 1 else 'them'}"
        )
    if not learner.compile and learner.compile_mode != defaults["compile_mode"]:
        raise ConfigError(
            f"learner.compile_mode={learner.compile_mode} applies only to a compiled learner: "
            f"add learner.compile=true or remove learner.compile_mode"
        )


def _show(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)

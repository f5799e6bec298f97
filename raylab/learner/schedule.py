"""The learning rate as a function of the run's progress (``learner.lr_schedule``).

``linear`` moves Adam's lr in a straight line from ``learner.lr`` at the first env step to ``learner.lr_final``
at ``stop.env_steps``, and holds it there after: CleanRL's ``--anneal-lr`` (``lr * (1 - (i - 1) / N)`` at
update i of N, so lr/N at its last) and SB3's ``linear_schedule``, measured in env steps, the unit the run's
budget is set in, so the schedule is the same whatever the number of rollout actors, chunks per call or
learner speed. A call takes the lr of the env steps counted when it was made, its own chunks included: a
call made at ``stop.env_steps`` trains at ``learner.lr_final``.
The driver hands each learner call the run's env steps so far (a resumed run's included); the learner host
sets the lr before the call trains (raylab.hosts.LearnerHost). No torch here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class LrSchedule:
    """``at(env_steps)``: the lr for a learner call made when the run has collected ``env_steps``."""

    kind: Literal["constant", "linear"]
    lr: float
    final: float = 0.0
    """The lr at ``horizon`` and after (linear)."""
    horizon: int | None = None
    """Env steps over which a linear schedule moves (stop.env_steps)."""

    def __post_init__(self) -> None:
        if self.kind == "linear" and (self.horizon is None or self.horizon <= 0):
            raise ValueError(f"a linear lr schedule needs a horizon > 0 in env steps (got {self.horizon})")

    def at(self, env_steps: int) -> float:
        if self.kind == "constant":
            return self.lr
        assert self.horizon is not None
        done = min(max(env_steps, 0) / self.horizon, 1.0)
        return self.lr + (self.final - self.lr) * done

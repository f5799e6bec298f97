"""The best policy a run evaluated: the one that met stop.mean_return (or stop.eval_extras), else the
highest greedy evaluation.

Every evaluation runs on one fixed weights version (the refs it was handed); ``BestPolicy`` keeps the refs of
the best periodic one, so that the run can save them as ``checkpoints/best.pt`` beside ``final.pt`` (the
newest weights) and evaluate both at the end. Unless the kept one met the target, the final evaluations, the
larger sample, have the last word: ``final_choice`` keeps the newest weights when theirs scores higher. A
resumed run starts from the best.pt its run dir already holds.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from raylab.types import EvalResult, EvalTarget, Weights


@dataclass(frozen=True)
class BestRecord:
    """What best.pt says about its policy: the periodic evaluation that chose it."""

    version: int
    """The weights version evaluated (several policies: the first policy's)."""
    return_mean: float
    """That evaluation's mean return (training-time evaluation: eval.episodes, plus eval.confirm_episodes)."""
    episodes: int
    env_steps: int
    """The run's env steps when that evaluation came back."""
    met_target: bool
    """It met stop.mean_return or stop.eval_extras."""
    chosen_by: str = "periodic"
    """"periodic": a periodic evaluation while training; "final": the final evaluations at the end."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> BestRecord:
        return cls(
            int(d["version"]), float(d["return_mean"]), int(d["episodes"]), int(d["env_steps"]), bool(d["met_target"]),
            str(d.get("chosen_by", "periodic")),
        )  # fmt: skip

    def beats(self, other: BestRecord | None) -> bool:
        """Better than ``other``: a met target first, then the higher mean; a tie goes to the newer weights."""
        if other is None:
            return True
        return (self.met_target, self.return_mean) >= (other.met_target, other.return_mean)


class BestPolicy:
    def __init__(self, target: EvalTarget | None):
        self.target = target
        self.refs: list[Any] | None = None
        """Refs to the best weights, one per policy (None: nothing evaluated yet)."""
        self.record: BestRecord | None = None

    def offer(self, refs: list[Any], result: EvalResult, env_steps: int) -> bool:
        """An evaluation of ``refs`` came back: keep them when they are the best so far (returns whether)."""
        mean = result.mean
        if not math.isfinite(mean):
            return False
        met = self.target is not None and self.target.met(result)
        record = BestRecord(result.version, mean, int(result.returns.size), env_steps, met)
        if not record.beats(self.record):
            return False
        self.refs, self.record = list(refs), record
        return True

    def restore(self, refs: list[Any], record: BestRecord) -> None:
        """A resumed run: the best.pt of its earlier part."""
        self.refs, self.record = list(refs), record


@dataclass(frozen=True)
class BestOutcome:
    """The best policy at the end of a run: its weights (several policies: one per policy), the record that
    chose it, and its final evaluation (None: none ran, e.g. after Ctrl-C)."""

    policy: Weights | list[Weights]
    record: BestRecord
    final_eval: EvalResult | None


def final_choice(
    kept: tuple[list[Weights], BestRecord, EvalResult | None] | None,
    newest: list[Weights],
    newest_eval: EvalResult | None,
    env_steps: int,
) -> BestOutcome | None:
    """best.pt at the end of a run: the best periodic evaluation's weights (``kept``: them, their record and
    their final evaluation), unless they did not meet the target and the newest weights' final evaluation
    scores as high (or nothing was kept), when the newest weights are the best evaluated. None: nothing was
    evaluated at all."""
    if newest_eval is None or not math.isfinite(newest_eval.mean):
        return BestOutcome(policy_layout(kept[0]), kept[1], kept[2]) if kept is not None else None
    if kept is not None:
        weights, record, kept_eval = kept
        if record.met_target or kept_eval is None or kept_eval.mean > newest_eval.mean:
            return BestOutcome(policy_layout(weights), record, kept_eval)
    record = BestRecord(newest_eval.version, newest_eval.mean, int(newest_eval.returns.size), env_steps, False, "final")
    return BestOutcome(policy_layout(newest), record, newest_eval)


def policy_layout(policies: list[Weights]) -> Weights | list[Weights]:
    """A checkpoint's policy layout: one policy, or one per name."""
    return policies[0] if len(policies) == 1 else policies

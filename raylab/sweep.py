"""Hyperparameter sweeps: ``python -m raylab.train -m +experiment=x hydra/sweeper=optuna 'learner.lr=interval(...)'``.

Hydra runs the trials (its basic sweeper for a grid ``-m learner.lr=1e-3,3e-3``, or hydra-optuna-sweeper's
samplers), each in its own directory ``<hydra.sweep.dir>/<trial number>``. raylab adds three things:

- **the objective**: the value each trial returns to the sweeper (``sweep.objective``): the final greedy
  evaluation's mean return (``eval_return``, maximize), or the training seconds until the run reached its
  target (``time_to_target``, minimize): ``stop.mean_return`` (a confirmed greedy evaluation) or
  ``stop.train_return`` (the mean of the last 100 training episodes, RLlib's criterion), whichever stopped it
  first; a trial that never reached one scores ``UNREACHED``, worse than any that did;
- **one Ray for all trials**: the first trial starts the embedded Ray (or joins the cluster) and the next
  ones run on it instead of each paying Ray's start-up (a trial that needs more CPUs than it has restarts it);
- **a summary** (``SweepSummary``, a Hydra callback in conf/config.yaml): at the end, a table of every trial
  (its overrides, objective, env steps, seconds) and the best one, printed and written to
  ``<hydra.sweep.dir>/sweep_summary.{md,json}``.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hydra.experimental.callback import Callback

from raylab.errors import ConfigError

if TYPE_CHECKING:
    from raylab.config import RunConfig
    from raylab.driver.report import RunSummary

UNREACHED = math.inf
"""time_to_target of a trial that never reached its target (minimized: the worst possible score)."""
DIRECTION = {"eval_return": "maximize", "time_to_target": "minimize"}
OPTUNA = "hydra_plugins.hydra_optuna_sweeper.optuna_sweeper.OptunaSweeper"


def check(cfg: RunConfig, sweeper: dict[str, Any]) -> None:
    """Refuse, in one line, a sweep whose objective cannot be measured or whose direction is backwards."""
    objective = cfg.sweep.objective
    if objective == "eval_return" and not cfg.eval.final_episodes:
        raise ConfigError("sweep.objective=eval_return needs a final evaluation: set eval.final_episodes=10 or more")
    if objective == "time_to_target" and cfg.stop.mean_return is None and cfg.stop.train_return is None:
        raise ConfigError(
            "sweep.objective=time_to_target needs a target: set stop.mean_return (greedy evaluation) or "
            "stop.train_return (training return)"
        )
    if sweeper.get("_target_") == OPTUNA:
        direction = sweeper.get("direction")
        want = DIRECTION[objective]
        if isinstance(direction, str) and direction.lower() != want:
            raise ConfigError(
                f"sweep.objective={objective} is to {want}, but hydra.sweeper.direction={direction}: "
                f"set hydra.sweeper.direction={want}"
            )


def objective(cfg: RunConfig, summary: RunSummary) -> float:
    """What the trial returns to the sweeper (see the module docstring)."""
    if cfg.sweep.objective == "eval_return":
        value = summary.benchmark["eval"]["return_mean"]
        return float(value) if value is not None else -math.inf
    reached = summary.stop_reason.startswith(("eval return", "training return"))
    return float(summary.train_seconds) if reached else UNREACHED


@dataclass
class Trial:
    number: int
    overrides: list[str]
    objective: float | None
    run_dir: str
    env_steps: int | None = None
    train_seconds: float | None = None
    stop_reason: str | None = None


class SweepSummary(Callback):
    """Hydra callback: collects every trial as it ends, writes and prints the table at the sweep's end."""

    def __init__(self) -> None:
        self.trials: list[Trial] = []
        self.started = time.monotonic()

    def on_multirun_start(self, config: Any, **kwargs: Any) -> None:
        self.started = time.monotonic()

    def on_job_end(self, config: Any, job_return: Any, **kwargs: Any) -> None:
        from hydra.core.utils import JobStatus

        run_dir = str(config.hydra.runtime.output_dir)
        value = job_return._return_value if job_return.status == JobStatus.COMPLETED else None
        trial = Trial(len(self.trials), list(job_return.overrides or []), value, run_dir)
        report = Path(run_dir) / "benchmark_metrics.json"
        if report.exists():
            data = json.loads(report.read_text())
            trial.env_steps = data.get("total_timesteps")
            trial.train_seconds = data.get("duration_hours", 0.0) * 3600
            trial.stop_reason = data.get("stop_reason")
        self.trials.append(trial)

    def on_multirun_end(self, config: Any, **kwargs: Any) -> None:
        if not self.trials:
            return
        objective = str(config.get("sweep", {}).get("objective", "eval_return"))
        sweep_dir = Path(str(config.hydra.sweep.dir))
        wall = time.monotonic() - self.started
        text = summary_markdown(self.trials, objective, wall)
        sweep_dir.mkdir(parents=True, exist_ok=True)
        (sweep_dir / "sweep_summary.md").write_text(text)
        best = best_trial(self.trials, objective)
        payload = {
            "objective": objective,
            "direction": DIRECTION[objective],
            "wall_seconds": wall,
            "best": None if best is None else best.__dict__,
            "trials": [t.__dict__ for t in self.trials],
        }
        (sweep_dir / "sweep_summary.json").write_text(json.dumps(payload, indent=2, default=str) + "\n")
        print(text, flush=True)


def best_trial(trials: list[Trial], objective: str) -> Trial | None:
    scored = [t for t in trials if t.objective is not None and math.isfinite(t.objective)]
    if not scored:
        return None
    pick = max if DIRECTION[objective] == "maximize" else min
    return pick(scored, key=lambda t: t.objective if t.objective is not None else 0.0)


def summary_markdown(trials: list[Trial], objective: str, wall_seconds: float | None = None) -> str:
    """The table: each trial's own overrides (those every trial shares are listed once, above it)."""
    best = best_trial(trials, objective)
    took = f" in {wall_seconds:.0f} s" if wall_seconds is not None else ""
    shared = set.intersection(*(set(t.overrides) for t in trials)) if len(trials) > 1 else set()
    lines = [f"raylab sweep: {len(trials)} trials{took}, objective {objective} ({DIRECTION[objective]})"]
    if shared:
        lines.append(f"every trial: {' '.join(o for o in trials[0].overrides if o in shared)}")
    lines += [
        "",
        f"| trial | overrides | {objective} | env steps | train s | stopped by |",
        "|---|---|---|---|---|---|",
    ]
    for t in trials:
        mark = " **best**" if t is best else ""
        own = " ".join(o for o in t.overrides if o not in shared)
        value = "failed" if t.objective is None else f"{t.objective:.4g}"
        steps = f"{t.env_steps:,}" if t.env_steps is not None else "-"
        seconds = f"{t.train_seconds:.1f}" if t.train_seconds is not None else "-"
        lines.append(f"| {t.number}{mark} | `{own}` | {value} | {steps} | {seconds} | {t.stop_reason or '-'} |")
    lines.append("")
    if best is None:
        lines.append("best: none (no trial has a finite objective)")
    else:
        own = " ".join(o for o in best.overrides if o not in shared)
        lines.append(f"best: trial {best.number} ({objective} {best.objective:.4g}): {own}")
        lines.append(f"  its outputs and resolved config: {best.run_dir}")
    return "\n".join(lines) + "\n"

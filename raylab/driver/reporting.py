"""Reporter: what a run reports while it trains, and the decisions made from it.

The counters (raylab.driver.progress) become one metrics row per report interval, written to metrics.jsonl
and every logger; the console's progress line is refreshed in between. The reporter also keeps the
evaluation schedule, decides when the run stops, and stops it on a NaN or infinite loss.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from raylab.config import EvalConfig, StopConfig
from raylab.driver.outputs import RunOutputs
from raylab.driver.progress import Progress
from raylab.driver.resources import ResourceSampler
from raylab.driver.stop import StopCondition
from raylab.errors import NonFiniteLossError
from raylab.metrics.loggers import Logger
from raylab.types import LearnerStats

PROGRESS_EVERY_S = 0.2
"""How often the loggers' live progress (the console's bar) is refreshed."""


class Reporter:
    def __init__(
        self,
        stop: StopConfig,
        evaluation: EvalConfig,
        report_every_s: float,
        progress: Progress,
        outputs: RunOutputs,
        loggers: list[Logger],
        resources: ResourceSampler,
    ):
        """``stop``, ``evaluation``: the run's stop conditions and evaluation schedule; a row every
        ``report_every_s`` seconds (logger.report_every_seconds)."""
        self.stop_cfg, self.eval_cfg, self.report_every_s = stop, evaluation, report_every_s
        self.progress = progress
        self.outputs = outputs
        self.loggers = loggers
        self.resources = resources
        self.stop = StopCondition(stop)
        self.replay_size: int | None = None
        """Transitions in the replay (DQN), as the topology last saw them: reported as replay/size."""
        self._last_report = 0.0
        self._last_progress = 0.0
        self._last_eval_time = 0.0
        self._last_eval_steps = 0

    def start(self) -> None:
        """Report intervals and the evaluation schedule count from now; eval.every_env_steps from the run's last
        evaluation (a resumed run's, from before its resume: Progress.evals), or from its env steps so far."""
        self._last_report = self._last_eval_time = time.perf_counter()
        evals = self.progress.evals
        self._last_eval_steps = int(evals[-1]["env_steps"]) if evals else self.progress.env_steps

    # -- rows ----------------------------------------------------------------------------------------------
    def tick(self, force_report: bool = False) -> None:
        """Cheap: refresh the live progress when due, and write a row when one is due (or forced)."""
        now = time.perf_counter()
        if now - self._last_progress >= PROGRESS_EVERY_S:
            self._last_progress = now
            self._show_progress()
        if force_report or now - self._last_report >= self.report_every_s:
            self._last_report = now
            self.report()

    def report(self) -> None:
        """One metrics row (the interval since the previous one) to metrics.jsonl and every logger."""
        row = self.progress.row(self.replay_size)
        row["resources/memory_gb"] = self.resources.last_memory_gb
        row["resources/cpu_percent"] = self.resources.last_cpu_percent
        self.outputs.append_metrics(row)
        for logger in self.loggers:
            logger.log(row)

    def _show_progress(self) -> None:
        p = self.progress
        postfix: dict[str, float] = {
            "upd/s": round(p.last_rates.get("throughput/updates_per_s", 0.0)),
            "replay": self.replay_size or 0,
        }
        if p.returns:
            postfix["ret"] = round(float(np.mean(p.returns)), 1)
        if p.last_eval is not None:
            postfix["eval"] = round(p.last_eval.mean, 1)
            for key in self.stop.target.extras:  # what the run stops on (Mario: the greedy flag rate)
                if key in p.last_eval.extras:
                    postfix[f"eval:{key}"] = round(p.last_eval.extra_means()[key], 2)
        for name, track in p.policies.items():  # several policies: each one's training return
            if track.returns:
                postfix[f"ret:{name}"] = round(float(np.mean(track.returns)), 1)
        for logger in self.loggers:
            logger.progress(p.env_steps, postfix)

    # -- the learner's losses ------------------------------------------------------------------------------
    def on_learner(
        self, stats: LearnerStats, last_checkpoint: Callable[[], Path | None], policy: str | None = None
    ) -> None:
        """Count a learner call; a NaN or infinite loss stops the run (NonFiniteLossError) after one last
        metrics row, before any checkpoint could store the diverged weights. ``last_checkpoint``: the newest
        periodic checkpoint, which the error names (asked only then)."""
        self.progress.add_learner(stats, policy)
        bad = {k: v for k, v in stats.metrics.items() if k.endswith("loss") and not math.isfinite(v)}
        if not bad:
            return
        self.tick(force_report=True)
        key, value = next(iter(bad.items()))
        path = last_checkpoint()
        last = (
            f"the last good checkpoint is {path}"
            if path is not None
            else "no checkpoint was written yet (checkpoint.every_seconds keeps periodic ones)"
        )
        whose = f"policy {policy}'s " if policy is not None else ""
        raise NonFiniteLossError(
            f"{whose}learner {key} became {value} by update {self.progress.updates:,} (env step "
            f"{self.progress.env_steps:,}): the run stopped without writing final.pt; {last}; lower learner.lr "
            f"or set learner.max_grad_norm"
        )

    # -- decisions -----------------------------------------------------------------------------------------
    def eval_due(self) -> bool:
        ev = self.eval_cfg
        if ev.every_seconds is not None and time.perf_counter() - self._last_eval_time >= ev.every_seconds:
            return True
        return ev.every_env_steps is not None and self.progress.env_steps - self._last_eval_steps >= ev.every_env_steps

    def eval_started(self) -> None:
        self._last_eval_time = time.perf_counter()
        self._last_eval_steps = self.progress.env_steps

    def stop_reason(self) -> str | None:
        p = self.progress
        return self.stop.reason(p.env_steps, p.seconds, p.last_eval, p.returns)

    def close(self) -> None:
        """Close every logger (W&B run, TensorBoard writer, the console's bar); safe to call more than once."""
        for logger in self.loggers:
            logger.close()
        self.loggers = []

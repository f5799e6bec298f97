"""When a run ends: env steps, wall seconds, a greedy evaluation's return or episode values (Mario's flag
rate), or a training return, whichever comes first."""

from __future__ import annotations

from collections.abc import Sequence

from raylab.config import StopConfig
from raylab.metrics.numbers import fmt_return
from raylab.types import EvalResult, EvalTarget

INTERRUPTED = ("interrupted", "terminated")
"""Stop reasons of a run stopped from outside (Ctrl-C, SIGTERM): outputs are written, no final evaluation."""


class Terminated(KeyboardInterrupt):
    """Raised in the main thread on SIGTERM (``raylab.train`` installs the handler): a run stops as on Ctrl-C,
    writing its final checkpoint, metrics and benchmark_metrics.json, and the process exits 0."""


_terminated = False


def terminate() -> None:
    """Record that SIGTERM arrived and raise Terminated. The record matters: a blocking Ray call (ray.wait,
    ray.get) turns any exception its signal check raises into a plain KeyboardInterrupt."""
    global _terminated
    _terminated = True
    raise Terminated


def terminated() -> bool:
    return _terminated


def interrupted_reason(err: KeyboardInterrupt) -> str:
    return "terminated" if isinstance(err, Terminated) or _terminated else "interrupted"


def eval_target(cfg: StopConfig) -> EvalTarget:
    """What a periodic evaluation must reach to stop the run (stop.mean_return, stop.eval_extras)."""
    return EvalTarget(cfg.mean_return, dict(cfg.eval_extras or {}))


class StopCondition:
    def __init__(self, cfg: StopConfig):
        self.cfg = cfg
        self.target = eval_target(cfg)

    WINDOW = 100
    """Training episodes stop.train_return averages over (a full window is required)."""

    def reason(
        self,
        env_steps: int,
        seconds: float,
        last_eval: EvalResult | None,
        train_returns: Sequence[float] = (),
    ) -> str | None:
        """Why the run should stop now, or None to go on. ``last_eval``: the latest periodic evaluation;
        ``train_returns``: the latest training episodes."""
        cfg = self.cfg
        if last_eval is not None and self.target.met(last_eval):
            return self.target.describe(last_eval)
        if cfg.train_return is not None and len(train_returns) >= self.WINDOW:
            mean = sum(list(train_returns)[-self.WINDOW :]) / self.WINDOW
            if mean >= cfg.train_return:
                window = f"last {self.WINDOW} episodes"
                return f"training return {fmt_return(mean)} ({window}) >= stop.train_return={cfg.train_return:g}"
        if cfg.env_steps is not None and env_steps >= cfg.env_steps:
            return f"env steps {env_steps} >= stop.env_steps={cfg.env_steps}"
        if cfg.seconds is not None and seconds >= cfg.seconds:
            return f"{seconds:.0f} s >= stop.seconds={cfg.seconds:g}"
        return None

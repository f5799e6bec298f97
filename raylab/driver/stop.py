"""When a run ends: env steps, wall seconds or a greedy-evaluation return, whichever comes first."""

from __future__ import annotations

from raylab.config import StopConfig


class StopCondition:
    def __init__(self, cfg: StopConfig):
        self.cfg = cfg

    def reason(self, env_steps: int, seconds: float, eval_return: float | None) -> str | None:
        """Why the run should stop now, or None to go on."""
        cfg = self.cfg
        if cfg.mean_return is not None and eval_return is not None and eval_return >= cfg.mean_return:
            return f"eval return {eval_return:.1f} >= stop.mean_return={cfg.mean_return:g}"
        if cfg.env_steps is not None and env_steps >= cfg.env_steps:
            return f"env steps {env_steps} >= stop.env_steps={cfg.env_steps}"
        if cfg.seconds is not None and seconds >= cfg.seconds:
            return f"{seconds:.0f} s >= stop.seconds={cfg.seconds:g}"
        return None

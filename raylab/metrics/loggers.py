"""Loggers behind one small interface: console (progress bar or summary lines) and Weights & Biases.

metrics.jsonl is not a logger here: RunOutputs always writes it, whatever loggers are on.
"""

from __future__ import annotations

import netrc
import os
import sys
from pathlib import Path
from typing import Any, Protocol

from raylab.config import LoggerConfig, WandbConfig


class Logger(Protocol):
    def progress(self, env_steps: int, postfix: dict[str, Any]) -> None:
        """Called often (cheap): live progress."""

    def log(self, row: dict[str, Any]) -> None:
        """Called once per report interval with the full metrics row."""

    def close(self) -> None: ...


class ConsoleLogger:
    """A tqdm bar over env steps on a terminal (ETA when stop.env_steps is set); summary lines otherwise."""

    def __init__(self, total_env_steps: int | None, stream: Any = None):
        self.stream = stream or sys.stderr
        self.bar: Any = None
        if hasattr(self.stream, "isatty") and self.stream.isatty():
            from tqdm import tqdm

            self.bar = tqdm(total=total_env_steps, unit="step", unit_scale=True, file=self.stream, smoothing=0.1)

    def progress(self, env_steps: int, postfix: dict[str, Any]) -> None:
        if self.bar is not None:
            self.bar.update(env_steps - self.bar.n)
            self.bar.set_postfix(postfix, refresh=False)

    def log(self, row: dict[str, Any]) -> None:
        line = format_row(row)
        if self.bar is not None:
            self.bar.write(line, file=self.stream)
        else:
            print(line, file=sys.stdout, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


SUMMARY_FIELDS = (
    ("replay/inserted", "processed", "{:,}"),
    ("replay/size", "buffer", "{:,}"),
    ("queue/rollouts_in_flight", "queue", "{:.0f}"),
    ("queue/parked_workers", "parked", "{:.0f}"),  # hidden while 0: workers held back by the rate limiter
    ("learner/dropped_chunks", "drops", "{:.0f}"),  # hidden while 0: APPO chunks beyond max_policy_lag
    ("episode/return_mean", "return", "{:.1f}"),
    ("episode/x_pos_mean", "x_pos", "{:.0f}"),
    ("episode/snake_length_mean", "length", "{:.1f}"),
    ("rollout/env_restarts", "env restarts", "{}"),  # hidden while 0
    ("eval/return_mean", "eval", "{:.1f}"),
    ("learner/loss", "loss", "{:.4f}"),
    ("learner/td_error", "TD error", "{:.4f}"),
    ("rollout/epsilon_mean", "epsilon", "{:.3f}"),
    ("lag/mean", "lag", "{:.0f}"),
)
"""(metrics key, label, format) of the console summary line, shown when the row has the key: seed 001's
"processed, batches, drops, buffer, queue, loss, TD error, reward, x_pos, epsilon" in raylab's terms."""
HIDDEN_WHILE_ZERO = {"rollout/env_restarts", "queue/parked_workers", "learner/dropped_chunks"}


def format_row(row: dict[str, Any]) -> str:
    parts = [
        f"[{row['time_s']:7.1f}s] steps {row['env_steps']:,} ({row['throughput/env_steps_per_s']:,.0f}/s)",
        f"updates {row['updates']:,} ({row['throughput/updates_per_s']:,.0f}/s)",
    ]
    parts += [
        f"{label} {fmt.format(row[key])}"
        for key, label, fmt in SUMMARY_FIELDS
        if key in row and (row[key] or key not in HIDDEN_WHILE_ZERO)
    ]
    return " | ".join(parts)


def wandb_mode() -> str:
    """WANDB_MODE wins; otherwise online with a key (env or ~/.netrc), offline without one."""
    if os.environ.get("WANDB_MODE"):
        return os.environ["WANDB_MODE"]
    if os.environ.get("WANDB_API_KEY"):
        return "online"
    try:
        if netrc.netrc().authenticators("api.wandb.ai"):
            return "online"
    except (FileNotFoundError, netrc.NetrcParseError):
        pass
    return "offline"


class WandbLogger:
    """Logs each row to W&B with env_steps as the x-axis."""

    def __init__(self, cfg: WandbConfig, run_dir: str, config: dict[str, Any]):
        import wandb

        self.run = wandb.init(
            project=cfg.project,
            entity=cfg.entity,
            group=cfg.group,
            tags=list(cfg.tags),
            name=cfg.name or Path(run_dir).name,
            dir=run_dir,
            config=config,
            mode=wandb_mode(),  # type: ignore[arg-type]
        )
        self.run.define_metric("env_steps")
        self.run.define_metric("*", step_metric="env_steps")

    def progress(self, env_steps: int, postfix: dict[str, Any]) -> None:
        pass

    def log(self, row: dict[str, Any]) -> None:
        self.run.log(row)

    def close(self) -> None:
        self.run.finish()


def build_loggers(cfg: LoggerConfig, run_dir: str, config: dict[str, Any], total_env_steps: int | None) -> list[Logger]:
    loggers: list[Logger] = []
    if cfg.console:
        loggers.append(ConsoleLogger(total_env_steps))
    if cfg.wandb.enabled:
        loggers.append(WandbLogger(cfg.wandb, run_dir, config))
    return loggers

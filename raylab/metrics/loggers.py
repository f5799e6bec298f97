"""Loggers behind one small interface: console (progress bar or summary lines), Weights & Biases and
TensorBoard. Each gets every metrics row (flat keys like ``throughput/env_frames_per_s``, see the README's
"Metrics" table) with ``env_steps`` as its x-axis.

metrics.jsonl is not a logger here: RunOutputs always writes it, whatever loggers are on.
"""

from __future__ import annotations

import importlib.util
import json
import netrc
import os
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from raylab.config import LoggerConfig, WandbConfig
from raylab.errors import ConfigError
from raylab.metrics.numbers import fmt_return
from raylab.secrets import redact


class Logger(Protocol):
    def progress(self, env_steps: int, postfix: dict[str, Any]) -> None:
        """Called often (cheap): live progress."""

    def log(self, row: dict[str, Any]) -> None:
        """Called once per report interval with the full metrics row."""

    def close(self) -> None: ...


@runtime_checkable
class VideoLogger(Protocol):
    """A logger that also takes eval.video's recorded episodes."""

    def video(self, key: str, path: Path) -> None:
        """Send the video file ``path`` as ``key`` with the next logged row."""


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
    ("episode/return_mean", "return", fmt_return),
    ("episode/x_pos_mean", "x_pos", "{:.0f}"),
    ("episode/snake_length_mean", "length", "{:.1f}"),
    ("rollout/env_restarts", "env restarts", "{}"),  # hidden while 0
    ("eval/return_mean", "eval", fmt_return),
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
        f"{label} {fmt(row[key]) if callable(fmt) else fmt.format(row[key])}"
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


@contextmanager
def _redacted_argv() -> Any:
    """W&B records sys.argv in the run's metadata: hand it the command line with secrets redacted."""
    argv = sys.argv
    sys.argv = redact(list(argv))
    try:
        yield
    finally:
        sys.argv = argv


class WandbLogger:
    """Logs each row to W&B with env_steps as the x-axis of every panel.

    ``config`` must already be redacted (RunConfig.to_dict() is); the command line in W&B's metadata is
    redacted here.
    """

    def __init__(self, cfg: WandbConfig, run_dir: str, config: dict[str, Any]):
        import wandb

        with _redacted_argv():
            self.run = wandb.init(
                project=cfg.project,
                entity=cfg.entity,
                group=redact(cfg.group),
                tags=redact(list(cfg.tags)),
                name=redact(cfg.name or Path(run_dir).name),
                dir=run_dir,
                config=config,
                mode=wandb_mode(),  # type: ignore[arg-type]
            )
        self.run.define_metric("env_steps")
        self.run.define_metric("*", step_metric="env_steps")
        # the run table's summary columns: best return, mean throughput
        self.run.define_metric("episode/return_mean", step_metric="env_steps", summary="max,last")
        self.run.define_metric("eval/return_mean", step_metric="env_steps", summary="max,last")
        self.run.define_metric("throughput/*", step_metric="env_steps", summary="mean,last")

    def progress(self, env_steps: int, postfix: dict[str, Any]) -> None:
        pass

    def log(self, row: dict[str, Any]) -> None:
        self.run.log(row)

    def video(self, key: str, path: Path) -> None:
        import wandb

        clip = wandb.Video(str(path), format="mp4" if path.suffix == ".mp4" else "gif")  # eval.video's two formats
        self.run.log({key: clip}, commit=False)  # with the next metrics row, at its env_steps

    def close(self) -> None:
        self.run.finish()


class TensorBoardLogger:
    """Scalars to <run_dir>/tensorboard, env_steps as the global step (``tensorboard --logdir outputs``)."""

    def __init__(self, run_dir: str, config: dict[str, Any]):
        from torch.utils.tensorboard import SummaryWriter

        self.writer = SummaryWriter(log_dir=str(Path(run_dir) / "tensorboard"))
        self.writer.add_text("config", "```\n" + json.dumps(config, indent=2) + "\n```")

    def progress(self, env_steps: int, postfix: dict[str, Any]) -> None:
        pass

    def log(self, row: dict[str, Any]) -> None:
        step = int(row["env_steps"])
        for key, value in row.items():
            if key != "env_steps" and isinstance(value, int | float) and not isinstance(value, bool):
                self.writer.add_scalar(key, value, global_step=step, walltime=None)
        self.writer.flush()

    def close(self) -> None:
        self.writer.close()


TENSORBOARD_HINT = "pip install 'raylab-actor-learner[tensorboard]' (or set logger.tensorboard=false)"


def check_logger_config(cfg: LoggerConfig) -> None:
    """Before anything starts: the optional packages the chosen loggers need are installed."""
    if cfg.tensorboard and importlib.util.find_spec("tensorboard") is None:
        raise ConfigError(f"logger.tensorboard=true needs the tensorboard package: {TENSORBOARD_HINT}")


def build_loggers(cfg: LoggerConfig, run_dir: str, config: dict[str, Any], total_env_steps: int | None) -> list[Logger]:
    check_logger_config(cfg)
    loggers: list[Logger] = []
    if cfg.console:
        loggers.append(ConsoleLogger(total_env_steps))
    if cfg.wandb.enabled:
        loggers.append(WandbLogger(cfg.wandb, run_dir, config))
    if cfg.tensorboard:
        loggers.append(TensorBoardLogger(run_dir, config))
    return loggers

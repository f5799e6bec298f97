"""The files every run writes into its run dir: config.yaml, metrics.jsonl, checkpoints/, benchmark_metrics.json."""

from __future__ import annotations

import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any

import yaml

from raylab.learner.checkpoint import save_checkpoint


class RunOutputs:
    def __init__(self, run_dir: str | os.PathLike[str]):
        self.run_dir = Path(run_dir)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.config_path = self.run_dir / "config.yaml"
        self.metrics_path = self.run_dir / "metrics.jsonl"
        self.benchmark_path = self.run_dir / "benchmark_metrics.json"
        self.checkpoint_dir = self.run_dir / "checkpoints"
        self._metrics = self.metrics_path.open("a", encoding="utf-8")

    def write_config(self, config: dict[str, Any]) -> None:
        atomic_write(self.config_path, yaml.safe_dump(config, sort_keys=False))

    def append_metrics(self, row: dict[str, Any]) -> None:
        self._metrics.write(json.dumps(_finite(row)) + "\n")
        self._metrics.flush()

    def write_benchmark(self, metrics: dict[str, Any]) -> None:
        atomic_write(self.benchmark_path, json.dumps(_finite(metrics), indent=2) + "\n")

    def save_checkpoint(self, name: str, state: dict[str, Any]) -> Path:
        return save_checkpoint(self.checkpoint_dir / name, state)

    def close(self) -> None:
        self._metrics.close()


def atomic_write(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    os.fchmod(fd, 0o644)  # mkstemp creates 0600; run outputs are meant to be read by others
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def _finite(value: Any) -> Any:
    """JSON has no NaN/inf: write null instead of producing a file strict parsers reject."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value

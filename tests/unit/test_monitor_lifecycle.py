"""A run that raises leaves nothing open: RunMonitor is a context manager, and every topology runs in its with
block, so the resource sampler's thread, the loggers and metrics.jsonl are closed however the run ends."""

from __future__ import annotations

import threading
from typing import Any

import psutil
import pytest

from raylab.driver import monitor as monitor_module
from raylab.driver.monitor import RunMonitor
from raylab.envs import env_spaces
from raylab.train import run
from tests.conftest import FAKE, make_config


class ProbeLogger:
    def __init__(self) -> None:
        self.closed = False

    def progress(self, env_steps: int, postfix: dict[str, Any]) -> None:
        pass

    def log(self, row: dict[str, Any]) -> None:
        pass

    def close(self) -> None:
        self.closed = True


def sampler_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "raylab-resources" and t.is_alive()]


def metrics_files_open() -> list[str]:
    return [f.path for f in psutil.Process().open_files() if f.path.endswith("metrics.jsonl")]


def test_the_with_block_closes_the_sampler_loggers_and_files_when_the_run_raises(tmp_path):
    cfg = make_config(tmp_path, *FAKE, "topology=local")
    probe = ProbeLogger()
    with pytest.raises(RuntimeError, match="boom"), RunMonitor(cfg, env_spaces(cfg.env), loggers=[probe]) as mon:
        mon.start()
        assert sampler_threads() and metrics_files_open()
        raise RuntimeError("boom")
    assert not sampler_threads() and not metrics_files_open() and probe.closed


def test_a_topology_that_raises_leaves_nothing_open(tmp_path, monkeypatch):
    def boom(self: RunMonitor) -> str | None:
        raise RuntimeError("boom")

    monkeypatch.setattr(RunMonitor, "stop_reason", boom)  # raises inside the training loop, after start()
    with pytest.raises(RuntimeError, match="boom"):
        run(make_config(tmp_path, *FAKE, "topology=local", "stop.env_steps=500"))
    assert not sampler_threads() and not metrics_files_open()
    assert (tmp_path / "config.yaml").is_file() and not (tmp_path / "benchmark_metrics.json").exists()


def test_a_monitor_that_fails_to_start_closes_what_it_opened(tmp_path, monkeypatch):
    def no_loggers(*args: Any) -> list:
        raise RuntimeError("no W&B today")

    monkeypatch.setattr(monitor_module, "build_loggers", no_loggers)
    cfg = make_config(tmp_path, *FAKE, "topology=local")
    with pytest.raises(RuntimeError, match="no W&B today"):
        RunMonitor(cfg, env_spaces(cfg.env))
    assert not metrics_files_open()

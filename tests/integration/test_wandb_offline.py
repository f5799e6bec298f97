"""logger=wandb works with no network and no key: an offline run directory appears in the run dir."""

from pathlib import Path

from raylab.metrics.loggers import wandb_mode
from raylab.train import run
from tests.conftest import make_config


def test_wandb_offline_run_is_written(tmp_path, monkeypatch):
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    cfg = make_config(tmp_path, "debug=smoke", "env=fake", "topology=local", "logger=wandb", "logger.console=false")
    run(cfg)
    files = list(Path(tmp_path, "wandb").glob("offline-run-*/run-*.wandb"))
    assert len(files) == 1 and files[0].stat().st_size > 0


def test_wandb_mode_is_offline_without_a_key(monkeypatch, tmp_path):
    monkeypatch.delenv("WANDB_MODE", raising=False)
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.netrc
    assert wandb_mode() == "offline"
    monkeypatch.setenv("WANDB_API_KEY", "x" * 40)
    assert wandb_mode() == "online"
    monkeypatch.setenv("WANDB_MODE", "disabled")
    assert wandb_mode() == "disabled"

"""A NaN or infinite loss stops the run with one line that names the last good checkpoint; nothing overwrites it."""

import json
import math

import pytest
import torch

from raylab.driver.monitor import RunMonitor
from raylab.envs import env_spaces
from raylab.errors import NonFiniteLossError
from raylab.learner.checkpoint import load_checkpoint
from raylab.types import LearnerStats
from tests.conftest import FAKE, make_config


@pytest.mark.parametrize("value", [math.nan, math.inf])
def test_non_finite_loss_stops_and_keeps_the_last_good_checkpoint(tmp_path, value):
    cfg = make_config(tmp_path, *FAKE, "topology=local")
    monitor = RunMonitor(cfg, env_spaces(cfg.env))
    monitor.start()
    monitor.on_learner(LearnerStats(updates=4, samples=128, version=4, metrics={"loss": 0.5}, seconds=0.1))
    name = monitor.save_periodic_checkpoint({"weights": torch.ones(3)})
    good = (tmp_path / "checkpoints" / name).read_bytes()
    with pytest.raises(NonFiniteLossError) as err:
        monitor.on_learner(LearnerStats(updates=4, samples=128, version=8, metrics={"loss": value}, seconds=0.1))
    message = str(err.value)
    assert f"learner loss became {value} by update 8" in message and "\n" not in message
    assert str(tmp_path / "checkpoints" / name) in message and "lower learner.lr" in message
    monitor.close()
    assert not (tmp_path / "checkpoints" / "final.pt").exists()
    assert (tmp_path / "checkpoints" / name).read_bytes() == good
    assert load_checkpoint(tmp_path / "checkpoints" / name)["learner"]["weights"].sum() == 3
    last = json.loads((tmp_path / "metrics.jsonl").read_text().splitlines()[-1])
    assert last["updates"] == 8 and last["learner/loss"] is None  # the row before stopping, NaN as null


def test_a_finite_loss_goes_on(tmp_path):
    """A huge but finite loss, and a NaN in a metric that is not a loss, do not stop the run: no error, no last
    row forced out (the stopping path writes one), and the calls are counted."""
    cfg = make_config(tmp_path, *FAKE, "topology=local")
    monitor = RunMonitor(cfg, env_spaces(cfg.env))
    monitor.on_learner(
        LearnerStats(updates=1, samples=32, version=1, metrics={"loss": 1e30, "q": math.nan}, seconds=0.1)
    )
    assert monitor.progress.updates == 1 and monitor.progress.learner_metrics["loss"] == 1e30
    monitor.on_learner(LearnerStats(updates=2, samples=64, version=3, metrics={"loss": 0.5}, seconds=0.1))
    assert monitor.progress.updates == 3 and monitor.progress.learner_metrics == {"loss": 0.5}
    monitor.close()
    assert (tmp_path / "metrics.jsonl").read_text() == ""

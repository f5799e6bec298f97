"""Which learner state a crashed learner (or A3C's server) restarts from: the newest of this run's periodic
checkpoints and the checkpoint the run resumed from."""

from pathlib import Path

import torch

from raylab.driver.monitor import RunMonitor
from raylab.driver.resume import ResumeState
from raylab.envs import env_spaces
from tests.conftest import FAKE, make_config


def test_the_newest_of_the_periodic_and_the_resumed_checkpoint(tmp_path):
    cfg = make_config(tmp_path, *FAKE, "topology=local")
    first = RunMonitor(cfg, env_spaces(cfg.env))
    assert first.latest_learner_state() is None  # nothing yet: the learner starts fresh
    first.save_periodic_checkpoint({"w": torch.ones(2)})  # at env step 0
    assert torch.equal(first.latest_learner_state()["w"], torch.ones(2))
    first.close()

    # resumed from a final.pt at 10,000 steps, beside the older step_0 file: the resumed state wins
    resume = ResumeState(Path(tmp_path) / "checkpoints" / "final.pt", {"w": torch.full((2,), 2.0)}, 10_000, 5, 3, 1.0)
    second = RunMonitor(cfg, env_spaces(cfg.env), resume=resume)
    assert torch.equal(second.latest_learner_state()["w"], torch.full((2,), 2.0))
    second.save_periodic_checkpoint({"w": torch.full((2,), 3.0)})  # this run's own, at 10,000 steps
    assert torch.equal(second.latest_learner_state()["w"], torch.full((2,), 3.0))
    second.close()

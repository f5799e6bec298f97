"""Which learner state a crashed learner (or A3C's server) restarts from: the newest of this run's periodic
checkpoints and the checkpoint the run resumed from; what a resumed run's counters and evaluation schedule
continue from."""

from pathlib import Path

import pytest
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


HISTORY = {
    "evals": [{"time_s": 5.0, "env_steps": 9_500, "version": 4, "return_mean": 3.0}], "returns": [1.0, 2.0],
    "lengths": [5, 6], "extras": {}, "first_returns": [1.0, 2.0], "window": [1.0, 2.0], "best_window_mean": None,
    "env_restarts": 2, "policies": {},
}  # fmt: skip


@pytest.mark.parametrize("history", [HISTORY, None], ids=["history", "older_checkpoint"])
def test_a_resume_continues_the_history_and_the_evaluation_schedule(history, tmp_path):
    """A checkpoint's history comes back, and eval.every_env_steps counts from its last evaluation (9,500: due at
    10,500, not 1,000 after the resume); a checkpoint from before checkpoints kept it reports from the resume on,
    its evaluations due every 1,000 env steps from there."""
    cfg = make_config(tmp_path, *FAKE, "topology=local", "eval.every_env_steps=1000", "eval.every_seconds=null")
    path = Path(tmp_path) / "checkpoints" / "step_000000010000.pt"
    monitor = RunMonitor(cfg, env_spaces(cfg.env), resume=ResumeState(path, {}, 10_000, 5, 3, 1.0, history=history))
    monitor.start()
    p = monitor.progress
    assert p.evals == (HISTORY["evals"] if history else []) and list(p.returns) == ([1.0, 2.0] if history else [])
    assert p.env_restarts == (2 if history else 0)
    p.env_steps = 10_499
    assert not monitor.eval_due()
    p.env_steps = 10_500
    assert monitor.eval_due() == (history is not None)
    p.env_steps = 11_000
    assert monitor.eval_due()
    monitor.close()

"""Failures during training end cleanly: a checkpoint write that fails half way (a full disk) keeps every
checkpoint written before loadable and ends the run in one line; a crash that is not the user's input writes
its traceback to the run's train.log and says so in one console line."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import textwrap

import pytest

from raylab.errors import RaylabError
from raylab.learner.checkpoint import load_checkpoint
from raylab.train import run
from tests.conftest import FAKE, make_config, metrics_rows


def full_disk_after(monkeypatch: pytest.MonkeyPatch, writes: int) -> list[int]:
    """torch.save, which raylab's checkpoint writer calls: the first ``writes`` succeed, then each one writes half
    of its bytes and fails as a full disk does. Returns the writes it was asked for, as it goes."""
    import torch

    real_save = torch.save
    asked: list[int] = []

    def save(state, f):
        asked.append(len(asked))
        if len(asked) <= writes:
            return real_save(state, f)
        f.write(b"\x80\x02half a checkpoint")
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(torch, "save", save)
    return asked


def test_a_checkpoint_write_failing_half_way_keeps_the_previous_one_and_ends_in_one_line(tmp_path, monkeypatch):
    asked = full_disk_after(monkeypatch, writes=2)
    cfg = make_config(
        tmp_path, *FAKE, "topology=local", "stop.env_steps=null", "stop.seconds=60", "checkpoint.every_seconds=0.2",
        "checkpoint.keep=5", "eval.every_seconds=null", "eval.final_episodes=1", "replay.min_size=256",
        "learner.batch_size=32", "logger.report_every_seconds=0.05",
    )  # fmt: skip
    with pytest.raises(RaylabError) as err:
        run(cfg)
    message = str(err.value)
    assert "\n" not in message and message.startswith("could not write checkpoint ")
    assert "No space left on device" in message and f"resume={tmp_path}" in message
    assert len(asked) == 3  # the third write failed, and the run stopped there
    ckpt = tmp_path / "checkpoints"
    written = sorted(p.name for p in ckpt.iterdir())
    assert len(written) == 2 and all(name.startswith("step_") for name in written), written  # no temp file left
    for name in written:  # every checkpoint written before still loads
        assert load_checkpoint(ckpt / name)["learner"]
    rows = metrics_rows(tmp_path)
    assert rows and all("env_steps" in row for row in rows)  # whole rows only


EXPLODING_MODEL = """
import torch
from torch import nn

CALLS = [0]


class Exploding(nn.Module):
    '''A user's network with a bug that shows only after some training: its 20th forward with gradients
    (the learner's) raises.'''

    def __init__(self, n):
        super().__init__()
        self.lin = nn.Linear(4, n)

    def forward(self, obs):
        if torch.is_grad_enabled():
            CALLS[0] += 1
            if CALLS[0] >= 20:
                raise RuntimeError("shape bug in my layer")
        return self.lin(obs)


def make(spaces, head):
    return Exploding(spaces.num_actions)
"""


def test_a_crash_during_training_is_one_line_naming_train_log_which_holds_the_traceback(tmp_path):
    (tmp_path / "exploding_model.py").write_text(textwrap.dedent(EXPLODING_MODEL))
    run_dir = tmp_path / "run"
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    proc = subprocess.run(
        [
            sys.executable, "-m", "raylab.train", "env=fake", "topology=local", "logger.console=false",
            "model=custom", "model.factory=exploding_model:make", "stop.env_steps=100000", "replay.min_size=256",
            "learner.batch_size=32", "logger.report_every_seconds=0.05", f"hydra.run.dir={run_dir}",
        ],
        capture_output=True, text=True, env={**env, "WANDB_MODE": "disabled", "HYDRA_FULL_ERROR": "0"}, timeout=300,
    )  # fmt: skip
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 1, proc.stderr
    assert len(lines) == 1, proc.stderr
    assert lines[-1].startswith("raylab: error: RuntimeError: shape bug in my layer (the full traceback is in ")
    assert str(run_dir / "train.log") in lines[-1] and "Traceback" not in proc.stderr
    log = (run_dir / "train.log").read_text()
    assert "Traceback (most recent call last)" in log and "exploding_model.py" in log
    assert "RuntimeError: shape bug in my layer" in log
    rows = metrics_rows(run_dir)
    assert all("env_steps" in row for row in rows)

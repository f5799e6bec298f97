"""Two ways a run used to go wrong without a word: actors the cluster can never hold (the run waited for ever)
and a run dir that holds another run (it was trained over), or that a run is training in now. Each is refused up
front, in one line."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from raylab.driver.outputs import RunOutputs, check_holds_no_run, claim_run_dir, hold_dir, hold_run_dir, in_use
from raylab.driver.placement import check_placeable, unplaceable
from raylab.errors import ConfigError
from raylab.remote.host import Resources

RUN = [
    ("the evaluator", Resources(cpus=0)),
    *[(f"rollout actor {i}", Resources(cpus=1, spread=True)) for i in range(4)],
    ("the learner", Resources(cpus=1)),
    ("replay shard 0", Resources(cpus=0)),
]


def test_a_run_that_fits_is_placeable():
    assert unplaceable(RUN, [{"CPU": 5.0}]) is None
    assert unplaceable(RUN, [{"CPU": 2.0}, {"CPU": 3.0}]) is None  # spread over two nodes


def test_too_few_cpus_names_what_the_run_reserves_and_the_fix():
    why = unplaceable(RUN, [{"CPU": 2.0}])
    assert why is not None and why.startswith(
        "the run reserves 5 CPUs (4 rollout actors x 1, the learner 1) and the Ray cluster has 2: lower "
        "topology.num_workers or topology.worker_cpus"
    )


def test_a_gpu_the_cluster_lacks():
    run = [*RUN[:-2], ("the learner", Resources(cpus=1, gpus=1.0))]
    why = unplaceable(run, [{"CPU": 16.0}])
    assert why is not None and why.startswith("the learner asks for 1 GPU (learner.num_gpus) and the Ray cluster has 0")
    assert unplaceable(run, [{"CPU": 16.0, "GPU": 1.0}]) is None
    auto = [*RUN[:-2], ("the learner", Resources(cpus=1, gpu_if_any=1.0))]  # learner.device=auto: never missing
    assert unplaceable(auto, [{"CPU": 16.0}]) is None


def test_an_actor_larger_than_any_node():
    run = [("rollout actor 0", Resources(cpus=3)), ("the learner", Resources(cpus=1))]
    why = unplaceable(run, [{"CPU": 2.0}, {"CPU": 2.0}])
    assert why is not None and why.startswith("rollout actor 0 reserves 3 CPUs and the largest Ray node has 2")


def test_check_placeable_fails_at_once_without_a_wait():
    with pytest.raises(Exception, match="the run reserves 5 CPUs") as err:
        check_placeable(RUN, lambda: [{"CPU": 2.0}], 0.0)
    assert "\n" not in str(err.value)


def test_check_placeable_waits_for_the_cluster_to_grow(monkeypatch, capsys):
    """With ray.placement_wait_s an autoscaler's new node is waited for, and the wait is said."""
    from raylab.driver import placement

    sizes = iter([[{"CPU": 2.0}], [{"CPU": 2.0}], [{"CPU": 2.0}, {"CPU": 4.0}]])
    monkeypatch.setattr(placement.time, "sleep", lambda s: None)
    check_placeable(RUN, lambda: next(sizes), 600.0)
    assert "waiting up to" in capsys.readouterr().out


def test_a_dir_holding_a_run_is_refused_and_untouched(tmp_path):
    (tmp_path / "checkpoints").mkdir()
    (tmp_path / "checkpoints" / "final.pt").write_bytes(b"weights")
    (tmp_path / "metrics.jsonl").write_text("{}\n")
    with pytest.raises(ConfigError, match=r"already holds a run \(metrics.jsonl\).*resume=.*overwrite=true"):
        claim_run_dir(tmp_path, overwrite=False)
    assert (tmp_path / "checkpoints" / "final.pt").read_bytes() == b"weights"
    claim_run_dir(tmp_path, overwrite=True)  # explicit: the old run's outputs go
    assert not (tmp_path / "checkpoints").exists() and not (tmp_path / "metrics.jsonl").exists()
    assert check_holds_no_run(tmp_path) == []


def test_a_run_dir_a_run_is_training_in_is_refused_to_a_second_holder_and_freed_when_it_ends(tmp_path):
    """While a run holds its dir, a second holder (another run, resume or overwrite there) is refused in one line
    and nothing in it changes; the dir is free again once the holder ends, and a checker (in_use) never takes the
    dir from the run that holds it next."""
    (tmp_path / "metrics.jsonl").write_text("{}\n")
    with hold_run_dir(tmp_path):
        assert in_use(tmp_path)
        refused = r"is in use: a run is training in it now: wait .*hydra.run.dir \(nothing was changed\)"
        with pytest.raises(ConfigError, match=refused), hold_run_dir(tmp_path):
            pass
        with pytest.raises(ConfigError, match=r"^told$"), hold_dir(tmp_path, "told", patience_s=0.05):
            pass
        assert (tmp_path / "metrics.jsonl").read_text() == "{}\n"
    assert not in_use(tmp_path) and not in_use(tmp_path / "absent")
    with hold_run_dir(tmp_path):  # a check just before does not keep it
        assert in_use(tmp_path)
    assert os.listdir(tmp_path) == ["metrics.jsonl"]  # the lock is on the directory: no file added


def test_a_run_dir_is_freed_when_the_process_holding_it_is_killed(tmp_path):
    """kill -9 leaves no lock behind: the OS drops a process's flocks with it (no stale lock file to clean up)."""
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(tmp_path)], stdout=subprocess.PIPE, text=True
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"  # waits for the event
        assert in_use(tmp_path)
    finally:
        holder.kill()
        holder.wait()
    assert not in_use(tmp_path)


HOLDER = """
import sys, time
from pathlib import Path
from raylab.driver.outputs import hold_run_dir
with hold_run_dir(Path(sys.argv[1])):
    print("held", flush=True)
    time.sleep(600)
"""


def test_a_resumed_run_sets_aside_the_rows_after_its_checkpoint_and_loses_none(tmp_path):
    """A run stopped after its last checkpoint (killed, the machine gone) wrote rows past it: a resume does that
    training again, so those rows (past its env steps, or at them but later in training time) move to
    metrics.after-<checkpoint>.jsonl (a row the stop cut short with them), and metrics.jsonl goes on as one run. A
    resume from final.pt moves nothing."""
    timed = ((1, 0), (2, 500), (3, 1000), (3.4, 1000), (4, 1500))
    rows = [json.dumps({"time_s": t, "env_steps": s}) + "\n" for t, s in timed]
    (tmp_path / "metrics.jsonl").write_text("".join(rows) + '{"time_s": 5, "env_st')
    outputs = RunOutputs(tmp_path)
    aside = outputs.set_aside_rows_after(1000, 3.0, "step_000000001000")
    outputs.append_metrics({"time_s": 3.5, "env_steps": 1100})
    outputs.close()
    assert aside == tmp_path / "metrics.after-step_000000001000.jsonl"
    assert aside.read_text() == rows[3] + rows[4] + '{"time_s": 5, "env_st\n'
    kept = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [(r["time_s"], r["env_steps"]) for r in kept] == [(1, 0), (2, 500), (3, 1000), (3.5, 1100)]
    again = RunOutputs(tmp_path)  # stopped again before the next checkpoint: the first set-aside file stays
    path = again.set_aside_rows_after(1000, 3.0, "step_000000001000")
    assert path == tmp_path / "metrics.after-step_000000001000-2.jsonl"
    assert aside.read_text() == rows[3] + rows[4] + '{"time_s": 5, "env_st\n'
    assert again.set_aside_rows_after(1000, 3.0, "final") is None  # nothing past it: nothing moved
    again.close()


def test_a_run_dir_under_a_file_or_unwritable(tmp_path):
    (tmp_path / "f").write_text("x")
    with pytest.raises(ConfigError, match=r"is under .*/f, which is a file, not a directory"):
        claim_run_dir(tmp_path / "f" / "run", overwrite=False)


def test_an_unwritable_run_dir(tmp_path, monkeypatch):
    """(Simulated: the tests may run as root, who can write anywhere.)"""
    import tempfile

    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(tempfile, "TemporaryFile", refuse)
    with pytest.raises(ConfigError, match=r"cannot write hydra\.run\.dir .* \(Permission denied\): choose a directory"):
        claim_run_dir(tmp_path / "run", overwrite=False)


def test_a_network_too_large_for_memory_is_refused_before_allocation_for_any_model():
    """Counted on the meta device: a CNN whose dense layers would need more memory than the machine has is
    refused in one line with its size, and an ordinary one is counted exactly as built."""
    import numpy as np
    import torch

    from raylab.builders.plans import check_model_fits, count_parameters
    from raylab.config import ModelConfig
    from raylab.errors import ConfigError
    from raylab.models import build_actor_critic
    from raylab.types import EnvSpaces

    frames = EnvSpaces(obs_shape=(4, 84, 84), obs_dtype=np.dtype(np.uint8), num_actions=6, action_space="Discrete(6)")
    cnn = ModelConfig(encoder="nature_cnn")
    built = sum(p.numel() for p in build_actor_critic(cnn, frames).parameters())
    assert count_parameters(cnn, frames, q_network=False) == built
    check_model_fits(cnn, frames, q_network=True)
    huge = ModelConfig(encoder="nature_cnn", hidden_sizes=[300000, 300000])
    with pytest.raises(ConfigError) as err:
        check_model_fits(huge, frames, q_network=True)
    assert str(err.value).startswith(
        "model=nature_cnn with model.hidden_sizes=[300000, 300000] and model.conv_channels=[32, 64, 64] makes a "
        "network of 9"
    )
    assert "GiB free here: choose smaller layers" in str(err.value) and torch.get_default_device().type == "cpu"

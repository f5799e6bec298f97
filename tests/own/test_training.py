"""The example package's env (by ``module:id`` and by factory) and model (by factory) train, in one process
and on Ray, and its checkpoint evaluates from the command line as a user runs it.

raylab_corridor's corridor: walking straight to the exit earns 0.92 (length 10) or 0.90 (length 12) per
episode; a random walk rarely gets there within the 100-step limit (its mean return is about -0.7).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from raylab.errors import ConfigError
from raylab.train import run
from tests.conftest import EXAMPLE, make_config

MODEL = ("model=custom", "model.factory=raylab_corridor.models:make_model", "+model.options.hidden=32")
BY_ID = ("env.id=raylab_corridor.envs:Corridor-v0",)
BY_FACTORY = ("env=custom", "env.factory=raylab_corridor.envs:make_corridor", "+env.options.length=12")
BY_VECTOR_FACTORY = ("env=custom", "env.factory=raylab_corridor.envs:make_corridors", "+env.options.length=12")
TARGET = 0.85
QUICK = (
    "logger.console=false", f"stop.mean_return={TARGET}", "stop.seconds=240", "eval.every_seconds=1",
    "eval.final_episodes=10",
)  # fmt: skip


def learned(summary) -> None:
    assert summary.stop_reason.startswith("eval return"), summary.stop_reason
    assert summary.eval_return_mean is not None and summary.eval_return_mean >= TARGET


@pytest.mark.parametrize("env", [BY_ID, BY_FACTORY, BY_VECTOR_FACTORY], ids=["module_id", "factory", "vector_factory"])
def test_trains_in_one_process(tmp_path, env):
    learned(run(make_config(tmp_path, "+experiment=cartpole_ppo", "topology=local", *env, *MODEL, *QUICK)))


@pytest.mark.distributed
@pytest.mark.usefixtures("ray_session")
@pytest.mark.parametrize(
    ("experiment", "env"),
    [
        ("cartpole_ppo", BY_ID),
        pytest.param("cartpole_appo", BY_FACTORY, marks=pytest.mark.slow),  # 10 s each: the id form stays
        pytest.param("cartpole_ppo", BY_VECTOR_FACTORY, marks=pytest.mark.slow),
    ],
    ids=["ppo_module_id", "appo_factory", "ppo_vector_factory"],
)
def test_trains_on_ray(tmp_path, experiment, env):
    summary = run(make_config(tmp_path, f"+experiment={experiment}", *env, *MODEL, *QUICK))
    learned(summary)
    assert {"0", "1"} <= set(summary.benchmark["workers"])  # both rollout actors imported the user's package


def test_cli_run_and_evaluate_with_the_package_on_pythonpath(tmp_path):
    env = {**os.environ, "WANDB_MODE": "disabled"}  # PYTHONPATH has examples/corridor (tests/own/conftest.py)
    assert str(EXAMPLE) in env["PYTHONPATH"].split(os.pathsep)
    train = [sys.executable, "-m", "raylab.train", "+experiment=cartpole_ppo", "topology=local", *BY_FACTORY, *MODEL,
             *QUICK, f"hydra.run.dir={tmp_path}"]  # fmt: skip
    proc = subprocess.run(train, capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    proc = subprocess.run(
        [sys.executable, "-m", "raylab.evaluate", f"run_dir={tmp_path}", "episodes=4"],
        capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    result = json.loads((tmp_path / "eval" / "final.json").read_text())
    assert result["episodes"] == 4 and result["return_mean"] >= TARGET


def test_cli_without_the_package_is_one_line_and_writes_nothing(tmp_path):
    path = [p for p in os.environ["PYTHONPATH"].split(os.pathsep) if p != str(EXAMPLE)]
    env = {**os.environ, "WANDB_MODE": "disabled", "PYTHONPATH": os.pathsep.join(path)}
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "raylab.train", "+experiment=cartpole_ppo", *BY_ID, f"hydra.run.dir={out}"]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "module 'raylab_corridor.envs' is not importable in the driver" in lines[0]
    assert "ray.runtime_env" in lines[0]
    assert not (out / "metrics.jsonl").exists() and not (out / "checkpoints").exists()


@pytest.mark.distributed
@pytest.mark.usefixtures("ray_session")
def test_a_package_only_the_driver_can_import_is_one_line_from_the_actor(tmp_path, monkeypatch):
    (tmp_path / "driver_only_envs.py").write_text(
        "from raylab_corridor.envs import make_corridor\n\ndef make(**kw):\n    return make_corridor(**kw)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))  # this process only: the session's Ray started without it
    cfg = make_config(tmp_path / "run", "+experiment=cartpole_ppo", "env=custom", "env.factory=driver_only_envs:make")
    with pytest.raises(ConfigError) as info:
        run(cfg)
    message = str(info.value)
    assert "\n" not in message and "module 'driver_only_envs' is not importable in a Ray actor on" in message
    assert "ray.runtime_env" in message

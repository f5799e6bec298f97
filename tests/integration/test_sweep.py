"""Sweeps (``python -m raylab.train -m ...``): each trial's objective, one Ray for all trials, the summary."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from types import SimpleNamespace

import pytest
import yaml

from raylab import sweep
from raylab.errors import ConfigError
from tests.conftest import make_config

ENV = {**os.environ, "WANDB_MODE": "disabled", "HYDRA_FULL_ERROR": "0"}
FAKE_PPO = (
    "env=fake", "algo=ppo", "topology.num_workers=2", "topology.envs_per_worker=4", "topology.rollout_length=16",
    "logger.console=false", "stop.env_steps=2048", "stop.mean_return=null", "eval.every_seconds=null",
    "eval.final_episodes=4",
)  # fmt: skip


def train(*args: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "raylab.train", *args]
    return subprocess.run(cmd, capture_output=True, text=True, env=ENV, timeout=600)


def summary(stop_reason: str, eval_return: float | None, seconds: float = 12.5):
    return SimpleNamespace(
        stop_reason=stop_reason, train_seconds=seconds, benchmark={"eval": {"return_mean": eval_return}}
    )


# -- units ----------------------------------------------------------------------------------------------------
def test_objectives(tmp_path):
    by_return = make_config(tmp_path, "env=fake")
    assert sweep.objective(by_return, summary("3 s >= stop.seconds=3", 17.5)) == 17.5
    by_time = make_config(tmp_path, "env=fake", "sweep.objective=time_to_target", "stop.mean_return=15")
    assert sweep.objective(by_time, summary("eval return 18.0 >= stop.mean_return=15", 18.0)) == 12.5
    assert sweep.objective(by_time, summary("10 s >= stop.seconds=10", 3.0)) == math.inf  # never reached
    by_train = make_config(
        tmp_path, "env=fake", "sweep.objective=time_to_target", "stop.mean_return=null", "stop.train_return=15"
    )
    sweep.check(by_train, {})  # RLlib's criterion is a target too
    assert sweep.objective(by_train, summary("training return 15.2 >= stop.train_return=15", 9.0)) == 12.5


@pytest.mark.parametrize(
    ("overrides", "sweeper", "expected"),
    [
        (["eval.final_episodes=0"], {}, "needs a final evaluation: set eval.final_episodes"),
        (["sweep.objective=time_to_target", "stop.mean_return=null", "stop.seconds=5"], {},
         "set stop.mean_return .* or stop.train_return"),
        ([], {"_target_": sweep.OPTUNA, "direction": "minimize"}, "set hydra.sweeper.direction=maximize"),
        (["sweep.objective=time_to_target", "stop.mean_return=15"], {"_target_": sweep.OPTUNA, "direction": "maximize"},
         "set hydra.sweeper.direction=minimize"),
    ],
)  # fmt: skip
def test_a_sweep_that_cannot_be_scored_is_refused(tmp_path, overrides, sweeper, expected):
    with pytest.raises(ConfigError, match=expected):
        sweep.check(make_config(tmp_path, "env=fake", *overrides), sweeper)


def test_the_summary_ranks_by_the_objectives_direction():
    trials = [
        sweep.Trial(0, ["learner.lr=0.1"], 3.0, "d/0"),
        sweep.Trial(1, ["learner.lr=0.01"], 9.0, "d/1", env_steps=2048, train_seconds=1.5, stop_reason="x"),
        sweep.Trial(2, ["learner.lr=1"], None, "d/2"),  # failed
    ]
    assert sweep.best_trial(trials, "eval_return").number == 1
    assert sweep.best_trial(trials, "time_to_target").number == 0
    text = sweep.summary_markdown(trials, "eval_return")
    assert (
        "| 1 **best** | `learner.lr=0.01` | 9 | 2,048 | 1.5 | x |" in text and "| 2 | `learner.lr=1` | failed |" in text
    )
    assert "best: trial 1 (eval_return 9): learner.lr=0.01" in text
    assert sweep.best_trial([sweep.Trial(0, [], math.inf, "d")], "time_to_target") is None


# -- the real CLI ---------------------------------------------------------------------------------------------
def test_optuna_sweep_runs_its_trials_and_names_the_best(tmp_path):
    proc = train(
        "-m", *FAKE_PPO, "topology=local", "hydra/sweeper=optuna", "hydra.sweeper.n_trials=3",
        "hydra.sweeper.direction=maximize", "hydra.sweeper.sampler.seed=0", "learner.lr=interval(0.0003,0.01)",
        f"hydra.sweep.dir={tmp_path}",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    data = json.loads((tmp_path / "sweep_summary.json").read_text())
    assert data["objective"] == "eval_return" and data["direction"] == "maximize" and len(data["trials"]) == 3
    lrs = []
    for number, trial in enumerate(data["trials"]):
        report = json.loads((tmp_path / str(number) / "benchmark_metrics.json").read_text())  # its own subdir
        assert trial["run_dir"] == str(tmp_path / str(number))
        assert trial["objective"] == pytest.approx(report["eval"]["return_mean"])
        lrs.append(report["config"]["learner"]["lr"])
        assert 0.0003 <= lrs[-1] <= 0.01
    assert len(set(lrs)) == 3  # the sampler chose each trial's learning rate
    best = max(data["trials"], key=lambda t: t["objective"])
    assert data["best"]["number"] == best["number"]
    assert f"best: trial {best['number']}" in proc.stdout
    optuna = yaml.safe_load((tmp_path / "optimization_results.yaml").read_text())
    assert optuna["best_value"] == pytest.approx(best["objective"])


@pytest.mark.slow  # Ray's start-up and two trials' actors: 20-60 s; the default tier has the local Optuna sweep
@pytest.mark.distributed
def test_trials_on_ray_share_one_ray_instance(tmp_path):
    proc = train("-m", *FAKE_PPO, "topology=ppo", "learner.lr=0.001,0.003", f"hydra.sweep.dir={tmp_path}")
    assert proc.returncode == 0, proc.stderr[-3000:]
    nodes = []
    for number in (0, 1):
        report = json.loads((tmp_path / str(number) / "benchmark_metrics.json").read_text())
        nodes.append(set(report["placement"]["actors"].values()))
    assert len(nodes[0]) == 1 and nodes[0] == nodes[1]  # a second Ray would be a new node id
    assert "raylab sweep: 2 trials" in proc.stdout


def test_a_direction_against_the_objective_is_one_line(tmp_path):
    proc = train("-m", *FAKE_PPO, "topology=local", "hydra/sweeper=optuna", "hydra.sweeper.direction=minimize",
                 "hydra.sweeper.n_trials=1", f"hydra.sweep.dir={tmp_path}")  # fmt: skip
    assert proc.returncode == 2
    lines = [line for line in proc.stderr.strip().splitlines() if line.strip()]
    assert lines[-1].startswith("raylab: error: ") and "set hydra.sweeper.direction=maximize" in lines[-1]
    assert not list(tmp_path.glob("*/metrics.jsonl"))  # nothing trained

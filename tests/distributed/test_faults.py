"""Actors killed by PID mid-run (as a crash or an OOM kill would): apex_dqn on CartPole still reaches its
target. Rollout actors come back through Ray's max_restarts and rejoin, losing only their chunk in flight;
the learner comes back from the latest periodic checkpoint; every restart is counted in the metrics."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import psutil
import pytest

pytestmark = pytest.mark.distributed

ENV = {**os.environ, "WANDB_MODE": "disabled"}


def actor_pids(root: int, name: str) -> list[int]:
    """PIDs of this run's actor processes of one class (Ray titles them ray::<Class>[.<method>])."""
    out = []
    for proc in psutil.Process(root).children(recursive=True):
        try:
            title = " ".join(proc.cmdline())
        except psutil.Error:
            continue
        if title.startswith(f"ray::{name}"):
            out.append(proc.pid)
    return sorted(out)


def test_killed_rollout_actors_and_learner_come_back_and_the_run_reaches_its_target(tmp_path):
    run_dir = tmp_path / "run"
    cmd = [
        sys.executable, "-m", "raylab.train", "+experiment=cartpole_dqn", "stop.seconds=240",
        "checkpoint.every_seconds=2", "logger.report_every_seconds=1", "logger.console=false",
        f"hydra.run.dir={run_dir}",
    ]  # fmt: skip
    proc = subprocess.Popen(cmd, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    kills: list[str] = []
    try:
        deadline = time.monotonic() + 120
        while not (run_dir / "checkpoints").is_dir() or not list((run_dir / "checkpoints").glob("step_*.pt")):
            assert proc.poll() is None and time.monotonic() < deadline, "the run did not start"
            time.sleep(0.2)
        plan = ["RolloutHost", "RolloutHost", "LearnerHost", "RolloutHost"]
        for name in plan:  # one kill every 3 s while the run goes on
            time.sleep(3)
            if proc.poll() is not None:
                break
            pids = actor_pids(proc.pid, name)
            assert pids, f"no {name} process under the run"
            os.kill(pids[0], signal.SIGKILL)
            kills.append(name)
        out, _ = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, out.decode()[-3000:]
    assert kills.count("LearnerHost") == 1 and kills.count("RolloutHost") >= 2
    bm = json.loads((run_dir / "benchmark_metrics.json").read_text())
    assert bm["stop_reason"].startswith("eval return"), bm["stop_reason"]  # the target, not the time limit
    restarts = bm["restarts"]
    assert restarts["restarts/rollout"] == kills.count("RolloutHost")
    assert restarts["restarts/learner"] == 1
    # at most one chunk in flight per death (none when it died between calls)
    assert restarts["restarts/lost_chunks"] <= restarts["restarts/rollout"]
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert rows[-1]["restarts/rollout"] == restarts["restarts/rollout"]
    assert bm["eval"]["return_mean"] >= 475 * 0.9
    # the workers' steps all arrived, minus the chunks lost in flight
    assert sum(w["env_steps"] for w in bm["workers"].values()) == bm["total_timesteps"]


@pytest.mark.parametrize("experiment", ["cartpole_ppo", "cartpole_appo"])
def test_ppo_and_appo_actors_come_back(experiment, tmp_path):
    """A killed rollout actor is waited for and rejoins: PPO resamples its chunk with the same weights (the
    round stays whole and on-policy), APPO resubmits it. The killed learner comes back from its latest
    periodic checkpoint. The run finishes and counts each restart."""
    run_dir = tmp_path / "run"
    cmd = [
        sys.executable, "-m", "raylab.train", f"+experiment={experiment}", "stop.seconds=20", "stop.mean_return=null",
        "stop.train_return=null", "eval.every_seconds=null", "eval.final_episodes=2", "logger.report_every_seconds=1",
        "checkpoint.every_seconds=2", "logger.console=false", f"hydra.run.dir={run_dir}",
    ]  # fmt: skip
    proc = subprocess.Popen(cmd, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    kills: list[str] = []
    try:
        deadline = time.monotonic() + 120
        while not (run_dir / "metrics.jsonl").exists() or not (run_dir / "metrics.jsonl").read_text().strip():
            assert proc.poll() is None and time.monotonic() < deadline, "the run did not start"
            time.sleep(0.2)
        for name in ("RolloutHost", "PPOLearnerHost", "RolloutHost"):
            time.sleep(3)
            pids = actor_pids(proc.pid, name)
            if proc.poll() is None and pids:
                os.kill(pids[0], signal.SIGKILL)
                kills.append(name)
        out, _ = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, out.decode()[-3000:]
    bm = json.loads((run_dir / "benchmark_metrics.json").read_text())
    assert kills == ["RolloutHost", "PPOLearnerHost", "RolloutHost"]
    assert bm["restarts"]["restarts/rollout"] == 2 and bm["restarts"]["restarts/learner"] == 1
    assert bm["total_timesteps"] > 0 and bm["eval"]["episodes"] == 2

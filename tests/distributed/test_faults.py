"""Actors killed by PID mid-run (as a crash or an OOM kill would): the run goes on. Rollout actors come back
through Ray's max_restarts and rejoin, losing at most their chunk in flight; the learner comes back from the
latest periodic checkpoint, a replay shard from its newest snapshot (checkpoint.replay); every restart is
counted in the metrics. (A3C's parameter-server shards: tests/distributed/test_a3c.py.)"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

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


def run_with_kills(cmd: list[str], run_dir: Path, plan: list[str], every_s: float = 3.0) -> tuple[int, str, list[str]]:
    """Start ``cmd``; once it has written a periodic checkpoint, SIGKILL one actor of each class in ``plan``,
    ``every_s`` apart; wait for the run to end. Returns (exit status, output, the kills made)."""
    proc = subprocess.Popen(cmd, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    kills: list[str] = []
    try:
        deadline = time.monotonic() + 120
        while not list((run_dir / "checkpoints").glob("step_*.pt")):
            assert proc.poll() is None and time.monotonic() < deadline, "the run did not start"
            time.sleep(0.2)
        for name in plan:
            time.sleep(every_s)
            pids = actor_pids(proc.pid, name)
            if proc.poll() is not None or not pids:
                break
            os.kill(pids[0], signal.SIGKILL)
            kills.append(name)
        out, _ = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    return proc.returncode, out.decode(), kills


def test_killed_rollout_actors_replay_and_learner_come_back_and_the_run_reaches_its_target(tmp_path):
    run_dir = tmp_path / "run"
    cmd = [
        sys.executable, "-m", "raylab.train", "+experiment=cartpole_dqn", "stop.seconds=240",
        "checkpoint.every_seconds=2", "checkpoint.replay=true", "logger.report_every_seconds=1",
        "logger.console=false", f"hydra.run.dir={run_dir}",
    ]  # fmt: skip
    plan = ["RolloutHost", "ReplayHost", "RolloutHost", "LearnerHost", "RolloutHost"]
    returncode, out, kills = run_with_kills(cmd, run_dir, plan)
    assert returncode == 0, out[-3000:]
    assert kills.count("LearnerHost") == 1 and kills.count("ReplayHost") == 1 and kills.count("RolloutHost") >= 2
    bm = json.loads((run_dir / "benchmark_metrics.json").read_text())
    assert bm["stop_reason"].startswith("eval return"), bm["stop_reason"]  # the target, not the time limit
    restarts = bm["restarts"]
    assert restarts["restarts/rollout"] == kills.count("RolloutHost"), (restarts, kills)
    assert restarts["restarts/learner"] == 1
    # the replay shard came back with the transitions of its newest snapshot, not empty
    assert restarts["restarts/replay"] == 1 and restarts["restarts/replay_restored"] > 0
    assert "replay shard 0 restarted with" in out
    # at most one chunk in flight per death (none when it died between calls)
    assert restarts["restarts/lost_chunks"] <= restarts["restarts/rollout"]
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert rows[-1]["restarts/rollout"] == restarts["restarts/rollout"]
    assert bm["eval"]["return_mean"] >= 475 * 0.9, (bm["eval"], bm["evals"][-3:])
    # the workers' steps all arrived, minus the chunks lost in flight
    assert sum(w["env_steps"] for w in bm["workers"].values()) == bm["total_timesteps"]


@pytest.mark.slow  # make test-all: the default tier keeps the apex_dqn fault test above
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
    returncode, out, kills = run_with_kills(cmd, run_dir, ["RolloutHost", "PPOLearnerHost", "RolloutHost"])
    assert returncode == 0, out[-3000:]
    assert kills == ["RolloutHost", "PPOLearnerHost", "RolloutHost"]
    bm = json.loads((run_dir / "benchmark_metrics.json").read_text())
    assert bm["restarts"]["restarts/rollout"] == 2 and bm["restarts"]["restarts/learner"] == 1
    assert bm["total_timesteps"] > 0 and bm["eval"]["episodes"] == 2


def test_two_rival_policies_learn_on_ray_and_one_killed_learner_comes_back(tmp_path):
    """snake_arena_rivals_ppo on Ray: red and blue each have a learner actor. Once a periodic checkpoint exists,
    one learner is SIGKILLed: Ray restarts it, it resumes from that checkpoint, the run goes on to its
    confirmed target, the restart is counted once and as that policy's, and both policies eat far more than
    random snakes (about -0.8)."""
    from raylab.bench.learn import random_policy_return
    from tests.conftest import make_config

    run_dir = tmp_path / "run"
    cmd = [
        sys.executable, "-m", "raylab.train", "+experiment=snake_arena_rivals_ppo", "stop.seconds=240",
        "stop.mean_return=8", "eval.every_seconds=3", "eval.episodes=32", "eval.confirm_episodes=32",
        "eval.final_episodes=64", "checkpoint.every_seconds=2", "logger.report_every_seconds=1",
        "logger.console=false", "ray.num_cpus=4", f"hydra.run.dir={run_dir}",
    ]  # fmt: skip
    returncode, out, kills = run_with_kills(cmd, run_dir, ["PPOLearnerHost"], every_s=1.0)
    assert returncode == 0, out[-3000:]
    assert kills == ["PPOLearnerHost"]
    bm = json.loads((run_dir / "benchmark_metrics.json").read_text())
    assert bm["stop_reason"].startswith("eval return"), bm["stop_reason"]
    assert bm["restarts"]["restarts/learner"] == 1
    policies = bm["policies"]
    assert sorted(p["learner_restarts"] for p in policies.values()) == [0, 1]
    random = random_policy_return(make_config(tmp_path, "+experiment=snake_arena_ppo").env, 200)["return_mean"]
    assert random < 0.5
    for name, p in policies.items():  # 32 final episodes each: a standard error of about 1.3
        assert p["final_eval_return_mean"] >= 3 > random + 3, (name, p)
        assert p["version"] > 0 and p["env_steps"] == bm["total_timesteps"] // 2

"""``bench timed`` as users run it: a fixed training time, seed 003's outputs, and one-line errors."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys

import pytest
import torch

from tests.conftest import metrics_rows

ENV = {**os.environ, "WANDB_MODE": "disabled", "HYDRA_FULL_ERROR": "0"}
SEED_003_FIELDS = {
    "training_mode", "start_time", "end_time", "duration_hours", "total_timesteps", "total_updates",
    "average_fps", "final_fps", "performance", "resource_usage", "config",
}  # fmt: skip
PERFORMANCE = {"initial_reward", "final_reward", "best_reward", "average_reward_last_100_episodes"}
SECONDS = 6.0
TINY = (
    "env=fake", "algo=ppo", "topology=ppo", "topology.num_workers=2", "topology.envs_per_worker=4",
    "topology.rollout_length=16", "logger.console=false", "logger.report_every_seconds=0.5", "eval.final_episodes=2",
    # episodes shorter than a rollout: every round ends an episode in every env, so the one round a busy machine
    # may allow in 6 s (seen: 3 s rounds beside two busy loops) still has returns to report
    "env.options.episode_length=8",
)  # fmt: skip


def bench(*args: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "raylab.bench", *args]
    return subprocess.run(cmd, capture_output=True, text=True, env=ENV, timeout=300)


def timed(mode: str, out, *extra: str) -> subprocess.CompletedProcess:
    hours = f"{SECONDS / 3600:.6f}"
    return bench("timed", "--duration-hours", hours, "--mode", mode, "--output-dir", str(out),
                 "--checkpoint-every-minutes", "0.03", *TINY, *extra)  # fmt: skip


def check_outputs(out, mode: str) -> dict:
    bm = json.loads((out / "benchmark_metrics.json").read_text())
    assert set(bm) >= SEED_003_FIELDS and set(bm["performance"]) >= PERFORMANCE
    assert bm["training_mode"] == mode and bm["benchmark"]["mode"] == mode
    assert " s >= stop.seconds=" in bm["stop_reason"]  # time stopped it
    assert bm["duration_hours"] * 3600 >= SECONDS * 0.98  # trained for the given time
    assert bm["total_timesteps"] > 0 and bm["total_updates"] > 0 and bm["average_fps"] > 0
    assert bm["performance"]["final_reward"] is not None
    assert bm["resource_usage"]["peak_memory_gb"] > 0.05 and bm["resource_usage"]["samples"] >= 3
    topology = bm["config"]["topology"]
    assert (topology["num_workers"], topology["envs_per_worker"], topology["rollout_length"]) == (2, 4, 16)
    assert bm["config"]["stop"]["env_steps"] is None and bm["config"]["eval"]["every_seconds"] is None
    periodic = sorted((out / "checkpoints").glob("step_*.pt"))
    assert periodic and (out / "checkpoints" / "final.pt").exists() and len(periodic) <= 3
    best = ["best.pt"] if bm["best"] is not None else []  # kept whenever anything was evaluated
    assert bm["checkpoints"] == [p.name for p in periodic] + ["final.pt", *best]
    assert (out / "checkpoints" / "best.pt").exists() == bool(best)
    saved = torch.load(periodic[-1], weights_only=True)
    assert 0 < saved["counters"]["env_steps"] <= bm["total_timesteps"] and saved["learner"]["version"] > 0
    rows = metrics_rows(out)
    # a row every logger.report_every_seconds (0.5 s) while training, then the forced last one: how many fit in
    # the 6 s depends on the machine's load (a loop iteration is a whole round), the spacing does not
    assert len(rows) >= 2 and rows[-1]["env_steps"] == bm["total_timesteps"]
    assert all(b["time_s"] - a["time_s"] >= 0.5 for a, b in itertools.pairwise(rows[:-1]))
    assert rows[-1]["time_s"] == pytest.approx(bm["duration_hours"] * 3600, abs=0.5)
    # ... and stopped in the loop iteration that crossed the deadline: a row written in an earlier one is before
    # it (how far past it the crossing iteration ends depends on the machine's load: seen 0.1-3 s)
    assert rows[-2]["time_s"] < SECONDS or rows[-2]["env_steps"] == rows[-1]["env_steps"]
    assert {"learner/policy_loss", "throughput/env_frames_per_s", "resources/memory_gb"} <= set(rows[-1])
    assert (out / "config.yaml").exists()
    return bm


@pytest.mark.slow  # 12 s
def test_sequential_runs_in_one_process_with_the_same_layout(tmp_path):
    out = tmp_path / "seq"
    proc = timed("sequential", out)
    assert proc.returncode == 0, proc.stderr
    bm = check_outputs(out, "sequential")
    assert bm["config"]["topology"]["name"] == "local"
    assert bm["config"]["learner"]["num_threads"] == os.cpu_count()  # all cores, like seed 003's --num-threads

    before = (out / "metrics.jsonl").read_bytes()
    again = timed("sequential", out)
    assert again.returncode == 2 and len(again.stderr.strip().splitlines()) == 1
    assert "already holds a run: choose a new directory" in again.stderr
    assert (out / "metrics.jsonl").read_bytes() == before  # nothing lost


@pytest.mark.slow  # a 12 s run per mode on Ray: the default tier keeps the sequential run and the unit tests of compare
@pytest.mark.distributed
def test_parallel_then_compare_on_real_runs(tmp_path):
    seq, par = tmp_path / "seq", tmp_path / "par"
    assert timed("sequential", seq).returncode == 0
    proc = timed("parallel", par)
    assert proc.returncode == 0, proc.stderr
    bm = check_outputs(par, "parallel")
    assert bm["config"]["topology"]["name"] == "ppo"
    png = tmp_path / "cmp" / "comparison.png"
    proc = bench("compare", "--sequential", str(seq), "--parallel", str(par), "--output", str(png))
    assert proc.returncode == 0, proc.stderr
    assert "average FPS" in proc.stdout and "speed-up (parallel FPS / sequential FPS)" in proc.stdout
    assert png.stat().st_size > 20_000 and (tmp_path / "cmp" / "comparison_report.txt").exists()


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--mode", "parallel", "topology=local"], "--mode parallel needs a Ray topology but the config has"),
        (["--mode", "sequential", "topology.num_workers=0"], "set topology.num_workers=1 or more"),
        (["--mode", "sequential", "+experiment=nope"], "unknown experiment 'nope'"),
    ],
)
def test_bad_input_is_one_line(args, expected, tmp_path):
    proc = bench("timed", "--duration-hours", "0.01", "--output-dir", str(tmp_path / "x"), *args)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("raylab bench: error: ") and expected in lines[0]


def test_duration_must_be_positive(tmp_path):
    proc = bench("timed", "--duration-hours", "0", "--mode", "sequential", "--output-dir", str(tmp_path / "x"))
    assert proc.returncode == 2 and "--duration-hours must be > 0" in proc.stderr

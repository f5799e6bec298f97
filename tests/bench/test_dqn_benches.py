"""issue 6's benchmark commands as users run them, tiny: learner (DQN and PPO), snake_dqn_loop, e2e (no RLlib
here)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from raylab.bench.e2e import summarize

ENV = {**os.environ, "WANDB_MODE": "disabled", "HYDRA_FULL_ERROR": "0"}


def bench(*args: str) -> subprocess.CompletedProcess:
    """The bench command, to its end: no clock of its own. Beside a Mario run the snake loop alone took 144 s, and
    with a second test process it failed, most likely at the 300-s clock it had; pytest's 900 s guard a hang."""
    cmd = [sys.executable, "-m", "raylab.bench", *args]
    return subprocess.run(cmd, capture_output=True, text=True, env=ENV)


def test_learner_bench_writes_ratios_parity_and_a_plot(tmp_path):
    out = tmp_path / "learner.json"
    proc = bench("learner", "--batch-sizes", "4", "--rounds", "2", "--seconds", "0.2", "--variants", "eager_fp32",
                 "amp", "frames64", "frames64_narrow", "--output", str(out))  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    report = json.loads(out.read_text())
    r = report["batch_sizes"]["4"]
    assert r["ratio_vs_eager_fp32"]["eager_fp32"] == 1.0 and r["updates_per_s"]["amp"] > 0
    assert len(r["rounds"]["amp"]) == 2
    assert r["precision"] == {"eager_fp32": "fp32", "amp": "bf16", "frames64": "fp32", "frames64_narrow": "fp32"}
    assert r["loss_rel_diff_vs_eager_fp32"]["amp"] < 1e-2
    # 64x64 frames train on inputs of their own: timed, their loss not compared with the 84x84 network's
    assert r["updates_per_s"]["frames64"] > 0 and r["loss_rel_diff_vs_eager_fp32"]["frames64"] is None
    assert r["first_update_loss"]["frames64"] > 0
    # narrower convolutions on the same 64x64 inputs: another network, so another first loss
    assert report["variant_options"]["frames64_narrow"]["conv_channels"] == [16, 32, 32]
    assert r["updates_per_s"]["frames64_narrow"] > 0 and r["loss_rel_diff_vs_eager_fp32"]["frames64_narrow"] is None
    assert r["first_update_loss"]["frames64_narrow"] != r["first_update_loss"]["frames64"]
    assert report["machine"]["cores"] and out.with_suffix(".png").stat().st_size > 1000


@pytest.mark.slow  # 8 s
def test_learner_bench_times_the_ppo_objective_on_the_impala_cnn(tmp_path):
    out = tmp_path / "learner_ppo.json"
    proc = bench("learner", "--algo", "ppo", "--batch-sizes", "16", "--minibatches", "2", "--epochs", "1", "--rounds",
                 "2", "--seconds", "0.2", "--variants", "eager_fp32", "amp", "--output", str(out))  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    report = json.loads(out.read_text())
    assert report["algo"] == "ppo" and "IMPALA CNN" in report["network"] and "2 minibatches" in report["protocol"]
    r = report["batch_sizes"]["16"]
    assert r["ratio_vs_eager_fp32"]["eager_fp32"] == 1.0 and r["updates_per_s"]["amp"] > 0
    assert len(r["rounds"]["amp"]) == 2 and r["precision"] == {"eager_fp32": "fp32", "amp": "bf16"}
    assert r["samples_per_s"]["amp"] == 16 * r["updates_per_s"]["amp"]
    assert r["loss_rel_diff_vs_eager_fp32"]["amp"] < 1e-2
    assert out.with_suffix(".png").stat().st_size > 1000
    odd = bench("learner", "--algo", "ppo", "--batch-sizes", "10", "--output", str(tmp_path / "odd.json"))
    assert odd.returncode == 2 and "multiple of 32" in odd.stderr
    frames = bench("learner", "--algo", "ppo", "--variants", "frames64", "--output", str(tmp_path / "frames.json"))
    assert frames.returncode == 2 and "frames64: a DQN variant" in frames.stderr


@pytest.mark.slow  # 7 s
def test_snake_loop_bench_counts_real_steps_and_compares(tmp_path):
    out = tmp_path / "snake.json"
    proc = bench("snake_dqn_loop", "--rounds", "1", "--variants", "reference", "raylab_8env", "--output", str(out))
    assert proc.returncode == 0, proc.stderr[-2000:]
    report = json.loads(out.read_text())
    for variant in ("reference", "raylab_8env"):
        run = report["runs"][variant][0]
        # 100 episodes of at most 50 steps (the vector env may finish a few more episodes in its last step)
        assert 100 <= run["env_steps"] <= 100 * 50 + 8 * 50
        assert run["steps_per_s"] == run["env_steps"] / run["seconds"]
        assert run["seed_formula_steps_per_s"] >= run["steps_per_s"]  # 5000 / s counts every episode as 50
    assert report["vs_reference_same_machine"]["reference"] == 1.0
    assert report["reference_published_steps_per_s"] == 2050


def test_e2e_summary_shares_and_ratio_from_run_outputs(tmp_path):
    bm = {
        "duration_hours": 10 / 3600, "total_timesteps": 5000, "total_updates": 400,
        "config": {"env": {"frame_skip": 4}}, "workers": {"0": {}, "1": {}},
        "replay": {"sampled": 40_000, "inserted": 5000, "timings": {"add_s": 1.0, "sample_s": 2.0}},
    }  # fmt: skip
    rows = [
        {"time_s": 5.0, "env_steps": 2000, "episode/return_mean": 100.0, "timing/rollout/env_s": 6.0,
         "timing/learner/update_s": 4.0, "timing/driver/wait_s": 3.0},
        {"time_s": 10.0, "env_steps": 5000, "episode/return_mean": 480.0, "eval/return_mean": 500.0,
         "timing/rollout/env_s": 6.0, "timing/learner/update_s": 5.0, "timing/driver/wait_s": 4.0},
    ]  # fmt: skip
    s = summarize(bm, rows, target=475.0)
    approx = pytest.approx
    assert (s["env_steps_per_s"], s["env_frames_per_s"], s["updates_per_s"]) == approx((500.0, 2000.0, 40.0))
    assert s["samples_per_env_step"] == 8.0 and s["greedy_eval_target_reached_s"] == 10.0
    shares = s["busy_share"]
    assert shares["rollout/env_s (per worker)"] == approx(12.0 / (10 * 2))
    assert shares["learner/update_s"] == approx(0.9)
    assert shares["learner/untimed (Ray calls, serialization)"] == approx(0.1)
    assert shares["replay/sample_s"] == approx(0.2) and shares["driver/wait_s"] == approx(0.7)
    assert [c["return_mean"] for c in s["curve"]] == [100.0, 480.0]


@pytest.mark.slow  # a whole apex_dqn run in its own Ray (27 s)
def test_e2e_runs_apex_dqn_end_to_end(tmp_path):
    out = tmp_path / "e2e.json"
    proc = bench("e2e", "--experiment", "cartpole_dqn", "--seconds", "6", "--seeds", "0", "--eval-every", "2",
                 "--output", str(out), "--runs-dir", str(tmp_path / "runs"), "replay.min_size=200")  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    report = json.loads(out.read_text())
    run = report["runs"]["raylab"][0]
    assert run["env_steps_per_s"] > 0 and run["updates_per_s"] > 0 and run["workers"] == 2
    assert 8 <= run["samples_per_env_step"] <= 20  # cartpole_dqn's 16, within the limiter's slack
    assert {"learner/update_s", "replay/add_s", "replay/sample_s", "driver/wait_s"} <= set(run["busy_share"])
    assert "rllib" not in report["summary"] and report["raylab_overrides"] == ["replay.min_size=200"]
    assert report["sampling_efficiency"]["workers"] == 2

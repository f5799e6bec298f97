"""The serial topology end to end on the fake env: outputs, formats, and that it learns."""

import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from raylab.learner import load_checkpoint
from raylab.train import run
from tests.conftest import FAKE, FAKE_LOCAL_DQN, make_config, metrics_rows

SEED_003_KEYS = {
    "training_mode", "start_time", "end_time", "duration_hours", "total_timesteps", "total_updates",
    "average_fps", "final_fps", "performance", "resource_usage", "config",
}  # fmt: skip


@pytest.fixture(scope="module")
def fake_run(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("local")
    cfg = make_config(
        run_dir,
        *FAKE,
        *FAKE_LOCAL_DQN,
        "logger.report_every_seconds=0.01",  # rows within the run (~0.2 s here)
    )
    return cfg, run(cfg)


def test_writes_every_output(fake_run):
    _, summary = fake_run
    out = Path(summary.run_dir)
    config = yaml.safe_load((out / "config.yaml").read_text())
    assert config["topology"]["name"] == "local" and config["env"]["family"] == "fake"
    rows = metrics_rows(out)
    assert len(rows) >= 2 and rows[-1]["env_steps"] == summary.env_steps >= 6000
    assert {
        "throughput/env_steps_per_s",
        "throughput/updates_per_s",
        "replay/size",
        "episode/return_mean",
    } <= set(rows[-1])
    state = load_checkpoint(out / "checkpoints" / "final.pt")
    assert state["learner"]["version"] == summary.updates > 0
    assert state["counters"]["env_steps"] == summary.env_steps


def test_benchmark_metrics_follow_seed_003_format(fake_run):
    _, summary = fake_run
    bm = json.loads((Path(summary.run_dir) / "benchmark_metrics.json").read_text())
    assert set(bm) >= SEED_003_KEYS
    assert bm["training_mode"] == "sequential"
    assert set(bm["performance"]) == {
        "initial_reward", "final_reward", "best_reward", "average_reward_last_100_episodes",
        "reward_std_last_100_episodes",
    }  # fmt: skip
    assert bm["resource_usage"]["peak_memory_gb"] > 0 and bm["resource_usage"]["cores"] >= 1
    assert bm["timesteps_per_hour"] == pytest.approx(bm["total_timesteps"] / bm["duration_hours"])
    assert set(bm["throughput"]) == {"env_frames_per_s", "agent_steps_per_s", "learner_updates_per_s"}
    assert bm["eval"]["episodes"] == 8 and bm["total_timesteps"] == summary.env_steps
    assert set(bm["workers"]) == {"0", "1"}
    assert bm["replay"]["inserted_by_worker"].keys() == {"0", "1"}


def test_it_learns_the_fake_task(fake_run):
    _, summary = fake_run
    # 4 actions, 20 steps: random earns 5 per episode, reading the observation earns 20; the newest weights
    # (final.pt) are held to it, not only the best evaluated ones (the run's result)
    assert summary.benchmark["eval_newest"]["return_mean"] >= 18
    bm = summary.benchmark
    assert bm["performance"]["initial_reward"] < 10
    assert np.isfinite(bm["average_fps"]) and bm["average_fps"] > 0


def test_best_pt_holds_the_best_evaluated_version_and_is_the_result(fake_run):
    """best.pt is the periodic evaluation with the highest mean (the newer on a tie), unless the newest
    weights' final evaluation beats its final evaluation; the run's ``eval`` is the final evaluation of that
    very version, ``eval_newest`` that of final.pt's newest weights."""
    _, summary = fake_run
    bm, ckpt = summary.benchmark, Path(summary.run_dir) / "checkpoints"
    evals, best = bm["evals"], bm["best"]
    assert len(evals) >= 2
    top = max(e["return_mean"] for e in evals)
    chosen = [e for e in evals if e["return_mean"] == top][-1]
    final = load_checkpoint(ckpt / "final.pt")
    newest = final["policy"]["version"]
    assert bm["eval_newest"]["policy_version"] == newest == final["learner"]["version"]
    assert best["version"] == (chosen["version"] if best["chosen_by"] == "periodic" else newest)
    assert bm["eval"]["policy_version"] == best["version"] == load_checkpoint(ckpt / "best.pt")["policy"]["version"]
    assert bm["eval"]["return_mean"] >= bm["eval_newest"]["return_mean"]
    assert bm["eval_newest"]["episodes"] == 8 and bm["checkpoints"][-2:] == ["final.pt", "best.pt"]


def test_runs_the_apex_dqn_flow_on_the_one_driver_loop_in_process(fake_run):
    """topology=local is apex_dqn's flow on the in-process backend: the loop's gauges and restart counters
    land in every row, and one process has no placement to record."""
    _, summary = fake_run
    rows = metrics_rows(summary.run_dir)
    gauges = {"queue/rollouts_in_flight", "queue/learner_calls", "queue/parked_workers", "replay/inserted"}
    assert gauges | {"restarts/rollout", "restarts/learner"} <= set(rows[-1])
    # every row the loop wrote holds the driver's wait since the row before (the last row, written after the
    # loop, holds it only when the loop went round again after the previous row: load decides that)
    assert all("timing/driver/wait_s" in row for row in rows[:-1]) and len(rows) >= 2
    assert rows[-1]["replay/inserted"] > 0 and rows[-1]["restarts/rollout"] == 0
    assert summary.benchmark["placement"] is None and summary.benchmark["restarts"]["restarts/lost_chunks"] == 0


def test_learner_never_samples_transitions_still_waiting_for_their_n_steps(tmp_path):
    # 64 envs x 2 steps per chunk with n=3: the first chunk completes no transition at all; the limiter must
    # not let the learner sample the empty replay (it used to count env steps as stored transitions).
    cfg = make_config(
        tmp_path, *FAKE, "topology=local", "topology.envs_per_worker=64", "topology.rollout_length=2",
        "replay.min_size=100", "learner.batch_size=64", "stop.env_steps=2000", "eval.final_episodes=0",
    )  # fmt: skip
    summary = run(cfg)
    assert summary.updates > 0 and summary.env_steps >= 2000


def test_a_run_with_a_crashing_env_completes_and_counts_restarts(tmp_path):
    cfg = make_config(
        tmp_path, *FAKE, "topology=local", "+env.options.crash_every=50", "stop.env_steps=3000",
        "replay.min_size=200", "learner.batch_size=32", "eval.final_episodes=2",
    )  # fmt: skip
    summary = run(cfg)
    restarts = summary.benchmark["env_restarts"]
    # 16 envs each crash on every 50th step call: about env_steps / 50 restarts, less one partial cycle per env
    assert summary.env_steps >= 3000 and summary.env_steps // 50 - 16 <= restarts <= summary.env_steps // 50
    rows = metrics_rows(summary.run_dir)
    assert rows[-1]["rollout/env_restarts"] == restarts


@pytest.mark.parametrize("algo", ["dqn", "a3c", "ppo"])
def test_periodic_checkpoints_keep_the_newest(algo, tmp_path):
    cfg = make_config(
        tmp_path, *FAKE, "topology=local", f"algo={algo}", "stop.env_steps=null", "stop.seconds=2.5",
        "checkpoint.every_seconds=0.3", "checkpoint.keep=2", "eval.every_seconds=null", "eval.final_episodes=1",
        "replay.min_size=256", "learner.batch_size=32",
    )  # fmt: skip
    summary = run(cfg)
    periodic = sorted((tmp_path / "checkpoints").glob("step_*.pt"))
    assert len(periodic) == 2, periodic  # more were written (every 0.3 s of 2.5 s); the oldest were deleted
    # the one final evaluation is the only one: the newest weights are the best evaluated, in best.pt too
    assert summary.benchmark["checkpoints"] == [p.name for p in periodic] + ["final.pt", "best.pt"]
    assert sorted(p.name for p in (tmp_path / "checkpoints").glob("*.pt")) == sorted(summary.benchmark["checkpoints"])
    assert summary.benchmark["best"]["chosen_by"] == "final"
    newest = load_checkpoint(periodic[-1])
    assert 0 < newest["counters"]["env_steps"] <= summary.env_steps
    assert newest["config"]["checkpoint"]["keep"] == 2 and newest["learner"]


# Stacked uint8 frames: the fake env's 1x8x8 label image, 4 frames stacked (frame de-duplication applies).
FAKE_FRAMES = ("env.options.obs_shape=[1,8,8]", "env.frame_stack=4", "env.options.num_actions=4")


def test_prioritized_replay_with_frame_dedup_learns(tmp_path):
    cfg = make_config(
        tmp_path, *FAKE, *FAKE_FRAMES, "topology=local", "replay=prioritized", "topology.num_workers=2",
        "topology.envs_per_worker=4", "model.hidden_sizes=[64]", "stop.env_steps=8000", "stop.seconds=120",
        "replay.min_size=256", "replay.capacity=3000", "replay.beta_anneal_env_steps=6000",
        "learner.batch_size=32", "learner.updates_per_call=8", "learner.publish_every=8",
        "algo.epsilon.anneal_env_steps=1000", "algo.gamma=0.5", "eval.every_env_steps=2000", "eval.episodes=4",
        "eval.final_episodes=8", "learner.grad_accumulation=2",
    )  # fmt: skip
    summary = run(cfg)
    assert summary.benchmark["eval_newest"]["return_mean"] >= 18  # random: 5; final.pt's newest weights
    replay = summary.benchmark["replay"]
    assert replay["priority_updates"] >= 0.9 * replay["sampled"]  # every sampled item got its TD error back
    assert replay["frames"] > 0 and replay["size"] == 3000
    # 4 stacked 8x8 frames per obs: ~64 bytes of frames per transition instead of 2 x 256
    assert replay["frames_per_transition"] < 1.2  # 4 stacked frames per obs, 2 obs per transition: ~1 stored
    assert replay["bytes_per_transition"] < 2 * 4 * 64 / 3


def test_qr_dqn_learns_the_fake_task(tmp_path):
    cfg = make_config(
        tmp_path, *FAKE, "topology=local", "algo.loss=quantile", "algo.num_quantiles=32",
        "env.options.num_actions=4", "model.hidden_sizes=[32]", "stop.env_steps=6000", "stop.seconds=120",
        "replay.min_size=256", "learner.batch_size=32", "learner.updates_per_call=8", "learner.publish_every=8",
        "algo.epsilon.anneal_env_steps=1000", "algo.gamma=0.5", "eval.every_env_steps=2000", "eval.episodes=4",
        "eval.final_episodes=8",
    )  # fmt: skip
    summary = run(cfg)
    assert summary.benchmark["eval_newest"]["return_mean"] >= 18  # random: 5; final.pt's newest weights


@pytest.mark.parametrize("algo", ["appo", "dqn"])
def test_a_linear_lr_schedule_falls_with_the_runs_env_steps(algo, tmp_path):
    """learner.lr_schedule=linear: every learner call's lr (learner/lr, in each row) is the schedule's at the
    env steps the driver had when it made the call, so it never rises, stays at or above the schedule's value
    at its row's env steps, and ends near learner.lr_final at stop.env_steps."""
    lr, final, horizon = 1e-3, 1e-4, 4000
    options = ("replay.min_size=256", "learner.batch_size=32") if algo == "dqn" else ()
    cfg = make_config(
        tmp_path, *FAKE, "topology=local", f"algo={algo}", "learner.lr_schedule=linear", f"learner.lr={lr}",
        f"learner.lr_final={final}", f"stop.env_steps={horizon}", "eval.final_episodes=0",
        "logger.report_every_seconds=0.01", *options,
    )  # fmt: skip
    summary = run(cfg)
    rows = [row for row in metrics_rows(summary.run_dir) if "learner/lr" in row]
    lrs = [row["learner/lr"] for row in rows]
    assert len(rows) >= 3 and lrs == sorted(lrs, reverse=True) and lrs[0] > lrs[-1]
    for row in rows:
        done = min(row["env_steps"] / horizon, 1.0)
        assert lr >= row["learner/lr"] >= lr + (final - lr) * done - 1e-12
    assert lrs[-1] <= final + 0.25 * (lr - final)

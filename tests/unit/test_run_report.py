"""benchmark_report on synthetic counters: benchmark_metrics.json's layout, without a run."""

from __future__ import annotations

import datetime as dt
import json

import numpy as np
import pytest

from raylab.driver.progress import Progress
from raylab.driver.report import RunFacts, benchmark_report, eval_section, result_words
from raylab.driver.resources import ResourceUsage
from raylab.replay.buffer import ReplayStats
from raylab.types import Episodes, EvalResult, LearnerStats, RolloutStats
from tests.conftest import FAKE, make_config

KEYS = [
    "training_mode", "topology", "start_time", "end_time", "duration_hours", "total_timesteps", "total_updates",
    "average_fps", "final_fps", "performance", "timesteps_per_hour", "final_losses", "resource_usage",
    "throughput", "eval", "evals", "workers", "replay", "stop_reason", "resumed_from", "episodes",
    "episode_extras", "env_restarts", "placement", "checkpoints",
]  # fmt: skip
"""benchmark_metrics.json's keys in order (a topology's ``extra`` sections, then ``config``, follow)."""

USAGE = ResourceUsage(
    peak_memory_gb=1.5, average_memory_gb=1.0, cpu_percent=150.0, cpu_utilization=0.75, cores=2, samples=10
)


def progress_of(returns: list[float], steps_per_chunk: int = 100) -> Progress:
    """Counters after one chunk per episode return from worker 0, a learner call, and an evaluation."""
    p = Progress(frames_per_step=4)
    for ret in returns:
        episodes = Episodes(np.array([ret]), np.array([10]), {"x_pos": np.array([2.0 * ret])})
        p.add_rollout(RolloutStats(0, steps_per_chunk, 0, episodes, {}, env_restarts=1), learner_version=0)
    p.add_learner(LearnerStats(updates=50, samples=1600, version=5, metrics={"loss": 0.25, "q": 3.0}, seconds=0.1))
    p.add_eval(EvalResult(5, np.array([7.0, 9.0]), np.array([10, 10]), extras={"flag_get": np.array([1.0, 0.0])}))
    return p


def facts(**changes) -> RunFacts:
    base = dict(
        stop_reason="env steps 2000 >= stop.env_steps=2000",
        start_time=dt.datetime(2026, 1, 2, 3, 4, 5),
        end_time=dt.datetime(2026, 1, 2, 4, 4, 5),
        train_seconds=100.0,
        final_rates={"throughput/env_frames_per_s": 123.0},
        usage=USAGE,
        process_peaks=3 * 2**30,
        checkpoints=["step_000000001000.pt", "final.pt"],
    )
    return RunFacts(**{**base, **changes})


@pytest.fixture
def cfg(tmp_path):
    return make_config(tmp_path, *FAKE, "topology=local")


def test_the_report_of_synthetic_counters(cfg):
    returns = [float(r) for r in range(20)]
    p = progress_of(returns)
    x_pos = {"x_pos": np.array([3161.0, 1200.0])}
    final_eval = EvalResult(7, np.array([10.0, 12.0]), np.array([5, 5]), extras=x_pos)
    bm = benchmark_report(cfg, p, facts(in_process=True), final_eval, extra={"restarts": {"rollout": 0}})
    assert list(bm) == [*KEYS, "restarts", "config"]
    assert bm["training_mode"] == "sequential" and bm["topology"] == "local"
    assert (bm["start_time"], bm["end_time"]) == ("2026-01-02T03:04:05", "2026-01-02T04:04:05")
    assert bm["total_timesteps"] == 2000 and bm["total_updates"] == 50 and bm["episodes"] == 20
    assert bm["duration_hours"] == pytest.approx(100 / 3600)
    assert bm["average_fps"] == pytest.approx(2000 * 4 / 100) and bm["final_fps"] == 123.0
    assert bm["timesteps_per_hour"] == pytest.approx(2000 / 100 * 3600)
    assert bm["throughput"] == pytest.approx(
        {"env_frames_per_s": 80.0, "agent_steps_per_s": 20.0, "learner_updates_per_s": 0.5}
    )
    perf = bm["performance"]
    assert perf["initial_reward"] == pytest.approx(np.mean(returns[:10]))
    assert perf["final_reward"] == pytest.approx(np.mean(returns[-10:]))
    assert perf["best_reward"] == pytest.approx(np.mean(returns[-10:]))  # best of 10 consecutive episodes
    assert perf["average_reward_last_100_episodes"] == pytest.approx(np.mean(returns))
    assert perf["reward_std_last_100_episodes"] == pytest.approx(np.std(returns))
    assert bm["final_losses"] == {"loss": 0.25}
    assert bm["eval"] == {
        "return_mean": 11.0, "return_std": 1.0, "episodes": 2, "policy_version": 7, "returns": [10.0, 12.0],
        "lengths": [5, 5], "extras_mean": {"x_pos": 2180.5}, "extras": {"x_pos": [3161.0, 1200.0]},
    }  # fmt: skip
    assert [(e["return_mean"], e["flag_get_mean"]) for e in bm["evals"]] == [(8.0, 0.5)]
    assert p.row()["eval/flag_get_mean"] == 0.5  # metrics.jsonl and W&B: the flag rate of the latest evaluation
    assert bm["workers"]["0"]["env_steps"] == 2000 and bm["workers"]["0"]["chunks"] == 20
    assert bm["episode_extras"] == {"x_pos": pytest.approx(2.0 * np.mean(returns))}
    assert bm["env_restarts"] == 20
    assert bm["replay"] is None and bm["placement"] is None and bm["resumed_from"] is None
    assert bm["checkpoints"] == ["step_000000001000.pt", "final.pt"]
    assert bm["stop_reason"].startswith("env steps 2000")
    assert bm["config"] == cfg.to_dict()
    json.dumps(bm)  # plain JSON values


def test_resource_usage_falls_back_to_the_process_peaks_on_a_short_run(cfg):
    p = progress_of([1.0])
    sampled = benchmark_report(cfg, p, facts())["resource_usage"]
    assert sampled == {
        "peak_memory_gb": 1.5, "sum_of_process_peaks_gb": 3.0, "average_memory_gb": 1.0, "cpu_percent": 150.0,
        "cpu_utilization": 0.75, "cores": 2, "samples": 10,
    }  # fmt: skip
    short = benchmark_report(cfg, p, facts(usage=ResourceUsage(0.1, 0.1, 1.0, 0.01, 2, 2)))["resource_usage"]
    assert short["peak_memory_gb"] == 3.0  # two samples are too few: the sum of the processes' own peaks


def test_no_episodes_no_eval(cfg):
    bm = benchmark_report(cfg, Progress(), facts(final_rates={}))
    assert bm["final_fps"] == 0.0 and bm["total_timesteps"] == 0
    assert set(bm["performance"].values()) == {None}
    assert bm["eval"] == {
        "return_mean": None, "return_std": None, "episodes": 0, "policy_version": None, "returns": [], "lengths": [],
        "extras_mean": {}, "extras": {},
    }  # fmt: skip


def test_replay_placement_and_resume(cfg):
    stats = ReplayStats(
        size=900, capacity=1000, inserted=1200, sampled=4000, inserted_by_worker={1: 700, 0: 500}, nbytes=123_456,
        priority_updates=30, stale_priority_updates=2, frames=0, shards=2, timings={"add_s": 0.5},
    )  # fmt: skip
    placement = {"learner": "node-a", "replay_0": "node-a", "rollout_0": "node-b"}
    bm = benchmark_report(
        cfg, Progress(), facts(placement=placement, resumed_from="/runs/x/checkpoints/final.pt"),
        extra={"replay": stats.report()},
    )  # fmt: skip
    assert list(bm).index("replay") == list(benchmark_report(cfg, Progress(), facts())).index("replay")
    assert bm["replay"] == {
        "size": 900, "capacity": 1000, "inserted": 1200, "sampled": 4000,
        "inserted_by_worker": {"0": 500, "1": 700}, "nbytes": 123_456, "bytes_per_transition": 123.5,
        "frames": 0, "frames_per_transition": 0.0, "shards": 2, "priority_updates": 30,
        "stale_priority_updates": 2, "timings": {"add_s": 0.5},
    }  # fmt: skip
    assert list(bm["replay"]["inserted_by_worker"]) == ["0", "1"]
    assert bm["placement"] == {"nodes": 2, "actors": placement}
    assert bm["resumed_from"] == "/runs/x/checkpoints/final.pt"


def test_the_done_line_names_the_final_evaluation_and_its_episode_values():
    flags = EvalResult(9, np.array([30.0, 40.0]), np.array([5, 5]), extras={"flag_get": np.array([1.0, 0.0])})
    best = {"version": 9}
    bm = {"eval": eval_section(flags), "eval_newest": eval_section(flags), "best": best}
    assert (
        result_words(bm)
        == "eval return 35.0 ± 5.00 over 2 episodes, flag_get mean 0.5 (best.pt = final.pt, version 9), "
    )
    plain = EvalResult(9, np.array([30.0, 40.0]), np.array([5, 5]))
    assert result_words({"eval": eval_section(plain), "best": None}) == (
        "eval return 35.0 ± 5.00 over 2 episodes (final.pt, version 9), "
    )

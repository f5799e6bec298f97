"""``bench compare`` on synthetic timed runs whose every number is known: table, PNG, report, JSON."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from raylab.bench import compare
from raylab.bench.__main__ import main as bench_main
from raylab.errors import EXIT_USAGE


def write_run(path: Path, mode: str, fps: float, final_return: float, seconds: float = 100.0, workers: int = 2):
    """A run dir as ``bench timed`` writes it: env steps grow at ``fps``, the return climbs linearly from 1."""
    path.mkdir(parents=True)
    rows = []
    for i in range(1, 11):
        t = seconds * i / 10
        rows.append(
            {
                "time_s": t,
                "env_steps": int(fps * t),
                "throughput/env_frames_per_s": fps,
                "episode/return_mean": 1.0 + (final_return - 1.0) * i / 10,
                "learner/policy_loss": -0.01 * i,
                "timing/learner/update_s": 0.5 * seconds / 10,
                "timing/rollout/env_s": 0.2 * seconds / 10,
            }
        )
    (path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    metrics = {
        "training_mode": mode,
        "start_time": "2026-11-21T10:00:00",
        "end_time": "2026-11-21T10:01:40",
        "duration_hours": seconds / 3600,
        "total_timesteps": int(fps * seconds),
        "total_updates": 100,
        "average_fps": fps,
        "final_fps": fps,
        "performance": {
            "initial_reward": 1.0,
            "final_reward": final_return,
            "best_reward": final_return,
            "average_reward_last_100_episodes": final_return,
            "reward_std_last_100_episodes": 0.5,
        },
        "resource_usage": {"peak_memory_gb": 0.5 * workers, "average_memory_gb": 0.4 * workers, "cpu_utilization": 0.9},
        "eval": {"return_mean": final_return},
        "config": {
            "env": {"id": "coinrun", "family": "procgen"},
            "algo": {"name": "ppo"},
            "model": {"encoder": "nature_cnn"},
            "topology": {
                "name": "local" if mode == "sequential" else "ppo",
                "num_workers": workers,
                "envs_per_worker": 4,
            },
        },
    }
    (path / "benchmark_metrics.json").write_text(json.dumps(metrics))
    return path


@pytest.fixture
def runs(tmp_path):
    seq = [write_run(tmp_path / "seq0", "sequential", 1000, 5.0), write_run(tmp_path / "seq1", "sequential", 1100, 6.0)]
    par = [write_run(tmp_path / "par0", "parallel", 2000, 6.0), write_run(tmp_path / "par1", "parallel", 2300, 7.0)]
    return seq, par


def test_compare_writes_table_png_report_and_json(runs, tmp_path, capsys):
    seq, par = runs
    out = tmp_path / "report" / "comparison.png"
    args = ["compare", "--sequential", *map(str, seq), "--parallel", *map(str, par), "--output", str(out)]
    assert bench_main(args) == 0
    console = capsys.readouterr().out
    assert "sequential (n=2)" in console and "parallel (n=2)" in console
    assert "average FPS" in console and "1,050 ± 71" in console and "2,150 ± 212" in console

    png = out.read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 20_000  # four panels drawn, not an empty canvas

    result = json.loads(out.with_suffix(".json").read_text())
    assert result["speedup"] == pytest.approx(2150 / 1050)
    assert result["efficiency_gain_percent"] == pytest.approx(100 * (2150 / 1050 - 1))
    se = result["sample_efficiency"]
    # every run reached 100,000 env steps (seq0's total); the seq runs were there at their end, the parallel
    # ones at 50 and 43.5 % of their time (linear return: 1 + (final - 1) * fraction)
    assert se["common_env_steps"] == 100_000
    assert se["return_at_common_env_steps"]["sequential"]["values"] == pytest.approx([5.0, 1 + 5 * (100 / 110)])
    par_fracs = [100_000 / 200_000, 100_000 / 230_000]
    expected_par = [1 + 5 * par_fracs[0], 1 + 6 * par_fracs[1]]
    assert se["return_at_common_env_steps"]["parallel"]["values"] == pytest.approx(expected_par, rel=0.03)
    assert se["return_level"] == 5.0  # the lowest final return
    welch = stats.ttest_ind([2000, 2300], [1000, 1100], equal_var=False)
    assert result["ttest"]["average_fps"]["p"] == pytest.approx(welch.pvalue)
    assert result["resource_efficiency"]["parallel"]["peak_memory_gb_per_worker"] == pytest.approx(0.5)

    report = (out.parent / "comparison_report.txt").read_text()
    assert f"speed-up (parallel FPS / sequential FPS): {2150 / 1050:.2f}x" in report
    assert "efficiency gain" in report and "sample efficiency" in report and "t = " in report
    assert "learner/update" in report  # where the time went


def test_one_run_per_side_says_the_t_test_needs_more(runs, tmp_path):
    seq, par = runs
    result = compare.analyse([compare.load_run(seq[0])], [compare.load_run(par[0])])
    assert result["speedup"] == pytest.approx(2.0)
    assert result["ttest"]["average_fps"] == {"note": "needs 2 or more runs per side"}


def test_mean_curve_covers_only_the_span_every_run_has(runs, tmp_path):
    """No extrapolation: the plot's mean line starts at the latest first row and ends at the earliest last."""
    seq, _ = runs
    run = compare.load_run(seq[0])
    xs, ys = run.series("episode/return_mean")
    assert xs[0] == 10_000 and ys[-1] == 5.0
    assert run.return_at(5_000) is None and run.return_at(55_000) == pytest.approx(np.interp(55_000, xs, ys))


def test_a_dir_without_a_run_is_one_line(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    code = bench_main(["compare", "--sequential", str(tmp_path / "empty"), "--parallel", str(tmp_path / "empty")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == EXIT_USAGE and len(err) == 1
    assert "has no benchmark_metrics.json and metrics.jsonl: give a directory written by" in err[0]


def test_swapped_or_mismatched_runs_are_warned_about(runs, tmp_path):
    seq, par = runs
    other = write_run(tmp_path / "other", "parallel", 2000, 6.0, seconds=300.0)
    result = compare.analyse([compare.load_run(par[0])], [compare.load_run(seq[0]), compare.load_run(other)])
    warnings = result["warnings"]
    assert any("is a parallel run but was given as --sequential" in w for w in warnings)
    assert any("is a sequential run but was given as --parallel" in w for w in warnings)
    assert "the runs differ in duration" in warnings
    assert compare.analyse([compare.load_run(seq[0])], [compare.load_run(par[0])])["warnings"] == []

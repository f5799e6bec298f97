"""benchmarks/pong_learning.py and benchmarks/autosize_sweep.py without running them: the commands, the figures
read off fabricated run dirs (raylab's metrics.jsonl, Sample Factory's log), and the docs tables rendered from
them (the committed JSONs come from real runs)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import pytest

from docs.tables import atari as tables
from tests.bench import load_benchmark

load = load_benchmark


@pytest.fixture(scope="module")
def bench() -> Any:
    return load("pong_learning")


def fake_raylab_run(path: Path, evals: list[float], finished: bool = True) -> None:
    path.mkdir(parents=True)
    rows = []
    for i, value in enumerate(evals):
        t, steps = 180.0 * (i + 1), 150_000 * (i + 1)
        rows.append({"time_s": t - 5, "env_steps": steps - 100, "env_frames": 4 * (steps - 100),
                     "episode/return_mean": value - 2})  # fmt: skip
        rows.append({"time_s": t, "env_steps": steps, "env_frames": 4 * steps, "episode/return_mean": value - 1,
                     "eval/return_mean": value, "eval/version": i})  # fmt: skip
        rows.append(
            {
                "time_s": t + 5,
                "env_steps": steps + 50,
                "env_frames": 4 * (steps + 50),
                "episode/return_mean": value - 1,
                "eval/return_mean": value,
                "eval/version": i,
            }
        )  # repeated
    (path / "metrics.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    if finished:
        bm = {"stop_reason": "eval return", "duration_hours": rows[-1]["time_s"] / 3600,
              "total_timesteps": rows[-1]["env_steps"], "total_updates": 99,
              "eval": {"return_mean": evals[-1], "episodes": 10}}  # fmt: skip
        (path / "benchmark_metrics.json").write_text(json.dumps(bm))


TAIL = "Throughput: 0: 1.0. Samples: 10. Policy #0 lag: (min: 0.0, avg: 0.0, max: 0.0)"
SF_LOG = "".join(
    f"[2026-11-26 13:{m:02d}:05,000][01319] Fps is (10 sec: 1.0, 60 sec: 1.0, 300 sec: 1.0). Total num frames: "
    f"{frames}. {TAIL}\n[2026-11-26 13:{m:02d}:05,001][01319] Avg episode reward: [(0, '{reward}')]\n"
    for m, frames, reward in ((0, 4096, "-21.000"), (10, 2004096, "18.500"), (20, 4004096, "19.250"))
)


def test_commands_run_the_experiment_and_sfs_own_example_at_one_shape(bench, tmp_path):
    ray = bench.raylab_command(1, tmp_path / "r", 3600.0)
    assert "+experiment=pong_appo" in ray and "seed=1" in ray and "stop.seconds=3600" in ray
    sf = bench.sf_command("py-sf", 0, tmp_path / "s", 3600.0)
    assert sf[:3] == ["py-sf", "-m", "sf_examples.envpool.atari.train_envpool_atari"]
    assert {"--num_workers=2", "--env_agents=16", "--train_for_seconds=3600", "--device=cpu"} <= set(sf)
    ev = bench.sf_eval_command("py-sf", tmp_path / "s")
    assert "--eval_deterministic=True" in ev and f"--max_num_episodes={bench.SF_EVAL_GAMES}" in ev


def test_an_existing_run_dir_is_refused(bench, tmp_path):
    (tmp_path / "raylab_s0").mkdir()
    args = argparse.Namespace(runs_dir=str(tmp_path), cap_s=10.0, sf_python="py")
    with pytest.raises(SystemExit, match="exists: move it aside"):
        bench.run_one("raylab", 0, args)


def test_raylab_time_to_18_is_the_first_greedy_evaluation_at_18(bench, tmp_path):
    fake_raylab_run(tmp_path / "raylab_s0", [-21.0, 5.0, 17.9, 18.4, 20.0])
    r = bench.raylab_result(tmp_path / "raylab_s0")
    assert r["reached"] and r["seconds_to_target"] == 720.0 and r["frames_to_target"] == 4 * 600_000
    assert r["best_greedy_return"] == 20.0 and r["final_greedy_return"] == 20.0 and r["finished"]
    assert [e[2] for e in r["evals"]] == [-21.0, 5.0, 17.9, 18.4, 20.0]  # one point per evaluation
    fake_raylab_run(tmp_path / "miss", [-21.0, 17.0], finished=False)
    miss = bench.raylab_result(tmp_path / "miss")
    assert not miss["reached"] and miss["seconds_to_target"] is None and not miss["finished"]


def test_sf_curve_is_read_off_its_log(bench, tmp_path):
    (tmp_path / "out.log").write_text(SF_LOG)
    (tmp_path / "eval.log").write_text('noise\nSF_EVAL {"status": 0, "return_mean": 19.5}\n')
    r = bench.sf_result(tmp_path)
    assert [c[1] for c in r["curve"]] == [4096, 2004096, 4004096]
    assert r["curve"][0][0] == pytest.approx(5.0) and r["train_s"] == pytest.approx(1205.0)
    assert r["reached_in_training"] and r["seconds_to_training_target"] == pytest.approx(605.0)
    assert r["final_greedy_return"] == 19.5 and r["train_return_max"] == 19.25


def test_collect_and_render(bench, tmp_path):
    fake_raylab_run(tmp_path / "raylab_s0", [-21.0, 18.2])
    (tmp_path / "sf_s0").mkdir()
    (tmp_path / "sf_s0" / "out.log").write_text(SF_LOG)
    for name, framework in (("raylab_s0", "raylab"), ("sf_s0", "sf")):
        (tmp_path / f"{name}.meta.json").write_text(json.dumps({"framework": framework, "seed": 0, "cap_s": 3600}))
    results = bench.collect(argparse.Namespace(runs_dir=str(tmp_path)))
    assert [r["framework"] for r in results["runs"]] == ["raylab", "sf"]
    table = tables.pong_learning([{"results": results, "protocol": "a protocol.\n\nmore"}])
    assert (
        "6.0 min" in table and "10.1 min (training return)" in table and table.count("\n| ") == 2
    )  # the two runs under the header
    bench.plot(results, tmp_path / "p.png")
    assert (tmp_path / "p.png").stat().st_size > 0


def test_autosize_sweep_reads_rates_after_the_warmup_and_renders():
    sweep = load("autosize_sweep")
    rows = [{"time_s": 2.0, "env_steps": 100}, {"time_s": 10.0, "env_steps": 1000}, {"time_s": 20.0, "env_steps": 3000}]
    assert sweep.frames_per_s(rows, 8.0, 4) == pytest.approx(2000 * 4 / 10)
    results = {"pong_appo": {
        "probe": {"rollout_s_per_step": 5e-4, "learner_s_per_step": 2e-3, "cpus": 2, "wall_s": 30.0},
        "median_frames_per_s": {"1": 3000.0, "2": 3100.0}, "sweep_best_workers": 2, "auto_workers": 1,
        "auto_over_best": 0.968,
    }}  # fmt: skip
    table = tables.autosize_sweep([{"results": results, "protocol": "p", "command": "c"}])
    assert "97 %" in table and "rollout 0.500 ms, learner 2.000 ms, 2 cpus" in table


def test_autosize_rescore_keeps_the_first_rule_and_applies_todays(tmp_path):
    sweep = load("autosize_sweep")
    probe = {"topology": "appo", "cpus": 2, "rollout_s_per_step": 0.51e-3, "learner_s_per_step": 0.99e-3}
    results = {"pong_appo": {"probe": probe, "median_frames_per_s": {"1": 3609.3, "2": 3889.4, "3": 3889.1},
                             "sweep_best_workers": 2, "auto_workers": 1, "auto_over_best": 0.928}}  # fmt: skip
    path = tmp_path / "a.json"
    path.write_text(json.dumps({"results": results}))
    sweep.rescore(str(path))
    r = json.loads(path.read_text())["results"]["pong_appo"]
    assert r["first_rule"] == {"auto_workers": 1, "auto_over_best": 0.928}
    assert r["auto_workers"] == 2 and r["auto_over_best"] == 1.0


def test_run_logged_kills_what_outlives_the_command(bench: Any, tmp_path: Path) -> None:
    """A child left running when the command exits (Sample Factory's workers after its main process took
    SIGTERM) is killed with it, so it cannot go on using the cores under the next run."""
    import os
    import time

    pidfile = tmp_path / "child.pid"
    cmd = ["sh", "-c", f"sleep 300 & echo $! > {pidfile}; exit 0"]
    out = bench.run_logged(cmd, tmp_path / "log", 60.0, dict(os.environ))
    assert out["rc"] == 0 and out["killed"] is None
    child = int(pidfile.read_text())
    deadline = time.time() + 30
    while time.time() < deadline:  # the kill is sent before run_logged returns; wait only for the reaping
        try:
            os.kill(child, 0)
            if Path(f"/proc/{child}/stat").read_text().split()[2] == "Z":
                break  # killed, not yet reaped by its new parent
        except (ProcessLookupError, FileNotFoundError):
            break
        time.sleep(0.05)
    else:
        raise AssertionError(f"the command's child {child} is still running")

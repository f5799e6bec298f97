"""``bench learn`` on a run that stops on stop.eval_extras (mario_dqn's greedy flag rate): the target, whether the
run reached it, each evaluation's extras, and the Mario table made from them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from docs.tables.learning import mario_learning
from raylab.bench import learn
from tests.bench import load_benchmark


def mario_run(run_dir: Path, flags: list[float], final_flag: float) -> Path:
    """A finished mario_dqn-like run: one evaluation every 600 s at 10k agent steps apart, its flag rates
    ``flags``, the x-position rising; its final evaluation's flag rate ``final_flag``."""
    run_dir.mkdir(parents=True)
    evals = [
        {"time_s": 600.0 * (k + 1), "env_steps": 10_000 * (k + 1), "version": k, "return_mean": 1000.0 + k,
         "x_pos_mean": 700.0 + 600 * k, "flag_get_mean": flag}
        for k, flag in enumerate(flags)
    ]  # fmt: skip
    report = {
        "config": {"stop": {"mean_return": None, "train_return": None, "eval_extras": {"flag_get": 0.8}}},
        "evals": evals, "duration_hours": 600 * len(flags) / 3600, "stop_reason": "eval flag_get 0.8",
        "total_timesteps": 10_000 * len(flags), "total_updates": 500,
        "throughput": {"agent_steps_per_s": 16.7, "learner_updates_per_s": 1.0, "env_frames_per_s": 66.7},
        "eval": {"return_mean": 2900.0, "return_std": 10.0, "episodes": 10,
                 "extras_mean": {"flag_get": final_flag, "x_pos": 3160.0}},
    }  # fmt: skip
    (run_dir / "benchmark_metrics.json").write_text(json.dumps(report))
    return run_dir


def test_a_run_on_eval_extras_is_timed_to_its_first_evaluation_that_meets_them(tmp_path):
    run = learn.read_run("default", 0, mario_run(tmp_path / "a", [0.0, 0.2, 0.6, 0.9], 0.8), None)
    assert run["eval_extras_target"] == {"flag_get": 0.8} and run["train_target"] is None
    assert run["target_hit_seconds"] == 2400.0 and run["target_hit_env_steps"] == 40_000
    assert run["reached"] is True
    assert run["eval_extras"][1] == [1200.0, 20_000, {"x_pos": 1300.0, "flag_get": 0.2}]
    assert "reached flag_get 0.8" in learn._line(run)


def test_a_final_evaluation_under_the_extras_target_is_not_reached(tmp_path):
    run = learn.read_run("default", 0, mario_run(tmp_path / "b", [0.0, 0.9], 0.7), None)
    assert run["target_hit_seconds"] == 1200.0 and run["reached"] is False
    assert "MISSED flag_get 0.8" in learn._line(run)
    never = learn.read_run("default", 1, mario_run(tmp_path / "c", [0.0, 0.1], 0.1), None)
    assert never["target_hit_seconds"] is None and never["reached"] is False


def test_the_record_keeps_each_final_game_with_its_length_where_the_report_has_them(tmp_path):
    """A game that ran to the time limit shows in its length (BeamRider's greedy wait after a lost life)."""
    run_dir = mario_run(tmp_path / "games", [0.0], 0.5)
    report = json.loads((run_dir / "benchmark_metrics.json").read_text())
    report["eval"] |= {"returns": [2900.0, 0.0], "lengths": [812, 27_000]}
    (run_dir / "benchmark_metrics.json").write_text(json.dumps(report))
    assert learn.read_run("default", 0, run_dir, None)["final_eval_games"] == [[2900.0, 812], [0.0, 27_000]]
    older = learn.read_run("default", 0, mario_run(tmp_path / "older", [0.0], 0.5), None)
    assert older["final_eval_games"] is None  # a report from before the games were kept


def test_the_mario_table_says_when_the_flag_came_first_and_when_it_came_8_times_in_10(tmp_path):
    runs = [
        learn.read_run("default", 0, mario_run(tmp_path / "a", [0.0, 0.2, 0.6, 0.9], 0.8), None),
        learn.read_run("default", 1, mario_run(tmp_path / "b", [0.0, 0.0], 0.0), None),
    ]
    table = mario_learning([{"runs": runs}])
    seed0, seed1 = (line for line in table.splitlines() if line.startswith("| `default`"))
    assert "20 min, 20,000 steps (0.08M frames)" in seed0  # the first greedy flag: the second evaluation
    assert "40 min, 40,000 steps (0.16M frames)" in seed0  # 0.9 >= 0.8: the fourth
    assert "| 2,500 |" in seed0 and "0.8 (0.49-0.94), 3,160" in seed0  # best x; final: 8 of 10, Wilson interval
    assert seed1.count("not reached") == 2
    assert "vietnh1009/Super-mario-bros-PPO-pytorch" in table and "MadMario" in table


def test_the_mario_curves_plot_each_seeds_greedy_x_position_and_flag_rate(tmp_path):
    runs = [
        learn.read_run("default", 0, mario_run(tmp_path / "a", [0.0, 0.2, 0.6, 0.9], 0.8), None),
        learn.read_run("default", 1, mario_run(tmp_path / "b", [0.0, 0.0], 0.0), None),
    ]
    source = tmp_path / "mario_learning.json"
    source.write_text(json.dumps({"runs": runs}))
    assert load_benchmark("mario_learning_plot").main([str(source)]) == 0
    png = tmp_path / "mario_learning_curves.png"
    assert png.stat().st_size > 10_000 and png.read_bytes()[:4] == b"\x89PNG"


def test_the_flagpole_strip_shows_the_last_frames_of_a_filmed_episode(tmp_path):
    """benchmarks/mario_flagpole.py draws frames 1,500, 750 and 0 before a filmed episode's end, side by side
    (clipped at its first frame for a short episode)."""
    import imageio.v3 as iio
    import numpy as np

    flagpole = load_benchmark("mario_flagpole")
    frames = np.zeros((1600, 16, 16, 3), np.uint8)
    frames[:, :, :, 0] = (np.arange(1600) // 7 % 256)[:, None, None]  # each frame's red channel marks its index
    video = tmp_path / "episode.mp4"
    iio.imwrite(video, frames, fps=15, codec="libx264", macro_block_size=1)
    assert flagpole.strip(video, tmp_path / "strip.png") == [99, 849, 1599]
    image = iio.imread(tmp_path / "strip.png")
    assert image.shape == (16, 48, 3)
    assert [int(image[8, 8 + 16 * i, 0]) for i in range(3)] == pytest.approx([14, 121, 228], abs=8)
    short = tmp_path / "short.mp4"
    iio.imwrite(short, frames[:40], fps=15, codec="libx264", macro_block_size=1)
    assert flagpole.strip(short, tmp_path / "short.png") == [0, 0, 39]

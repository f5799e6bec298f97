"""``bench learn``'s random-policy baseline in a continuous action space, and ``--reuse`` of finished runs."""

from __future__ import annotations

import argparse
import json
import os
import re

import gymnasium as gym
import numpy as np
import pytest

from raylab.bench import learn
from raylab.bench.same_settings import settings_for
from raylab.config import EnvConfig
from raylab.envs.registry import make_vector_env
from raylab.errors import ConfigError


def test_random_actions_in_a_box_are_drawn_within_the_envs_own_bounds():
    venv = make_vector_env(EnvConfig(id="Pendulum-v1"), 2, seed=0)
    space = learn.sampling_space(venv)
    assert not np.isfinite(venv.single_action_space.high).all()  # ClipAction advertises (-inf, inf)
    assert isinstance(space, gym.spaces.Box) and space.low.tolist() == [-2.0] and space.high.tolist() == [2.0]
    venv.close()
    out = learn.random_policy_return(EnvConfig(id="Pendulum-v1"), episodes=4)
    assert out["episodes"] == 4 and -1700 < out["return_mean"] < -700  # Pendulum's random policy: about -1200


def ran_with(overrides: list[str], seed: int) -> dict:
    """The resolved config a run of ``overrides`` keeps in its benchmark_metrics.json (the part --reuse checks)."""
    return settings_for(overrides, seed).values


def test_reuse_reads_finished_runs_instead_of_running_them(tmp_path, monkeypatch):
    run_dir = tmp_path / "runs" / "ppo_seed0"
    run_dir.mkdir(parents=True)
    report = {
        "config": ran_with(["env=fake"], 0), "evals": [{"time_s": 5.0, "env_steps": 100, "return_mean": 3.0}],
        "duration_hours": 10 / 3600, "stop_reason": "10 s >= stop.seconds=10", "total_timesteps": 1000,
        "total_updates": 10, "throughput": {"agent_steps_per_s": 100.0, "learner_updates_per_s": 1.0},
        "eval": {"return_mean": 4.0, "return_std": 0.5, "episodes": 10},
    }  # fmt: skip
    (run_dir / "benchmark_metrics.json").write_text(json.dumps(report))
    monkeypatch.setattr(learn, "run_one", lambda *a, **k: (_ for _ in ()).throw(AssertionError("ran again")))
    args = argparse.Namespace(
        variant=["ppo="],
        source=[],
        seeds=[0],
        output=str(tmp_path / "out.json"),
        runs_dir=str(tmp_path / "runs"),
        random_episodes=0,
        against_random=False,
        reuse=True,
        restart_unfinished=False,
        resume_unfinished=False,
    )
    assert learn.run(args, ["env=fake"]) == 0
    (run,) = json.loads((tmp_path / "out.json").read_text())["runs"]
    assert run["reused"] and run["process_seconds"] is None and run["final_eval_return"] == 4.0
    assert run["env_steps_per_s"] == 100.0


def test_a_run_read_back_keeps_the_process_time_its_own_invocation_recorded(tmp_path, monkeypatch):
    """A long table read back game by game (make bench-atari-table): the invocation that ran a game timed it; the
    next one reads the run from its directory and keeps that time and machine stamp, only for that same run."""
    run_dir = tmp_path / "runs" / "ppo_seed0"
    run_dir.mkdir(parents=True)
    report = {
        "config": ran_with(["env=fake"], 0), "evals": [], "duration_hours": 10 / 3600, "stop_reason": "done",
        "total_timesteps": 1000, "total_updates": 10,
        "throughput": {"agent_steps_per_s": 100.0, "learner_updates_per_s": 1.0},
        "eval": {"return_mean": 4.0, "return_std": 0.5, "episodes": 10},
    }  # fmt: skip

    def train(*_args, **_kwargs):  # the run: its directory gets its benchmark_metrics.json, its command 12.5 s
        (run_dir / "benchmark_metrics.json").write_text(json.dumps(report))
        return learn.read_run("ppo", 0, run_dir, 12.5)

    monkeypatch.setattr(learn, "run_one", train)
    args = argparse.Namespace(
        variant=["ppo="], source=[], seeds=[0], output=str(tmp_path / "out.json"), runs_dir=str(tmp_path / "runs"),
        random_episodes=0, against_random=False, reuse=False, restart_unfinished=False, resume_unfinished=False,
    )  # fmt: skip
    assert learn.run(args, ["env=fake"]) == 0
    first = json.loads((tmp_path / "out.json").read_text())
    assert first["runs"][0]["process_seconds"] == 12.5
    monkeypatch.setattr(learn, "run_one", lambda *a, **k: (_ for _ in ()).throw(AssertionError("ran again")))
    args.reuse = True
    assert learn.run(args, ["env=fake"]) == 0
    (run,) = json.loads((tmp_path / "out.json").read_text())["runs"]
    assert run["reused"] and run["process_seconds"] == 12.5 and run["recorded"] == first["machine"]
    report["duration_hours"] = 20 / 3600  # another run in that directory: its time is not this one's
    (run_dir / "benchmark_metrics.json").write_text(json.dumps(report))
    assert learn.run(args, ["env=fake"]) == 0
    (run,) = json.loads((tmp_path / "out.json").read_text())["runs"]
    assert run["process_seconds"] is None and run["train_seconds"] == 20.0


def test_an_unfinished_run_is_moved_aside_and_a_finished_one_kept(tmp_path):
    """--restart-unfinished: a long table (make bench-atari-table) resumes run by run: the run that was stopped
    is kept under another name and run again; a finished one stays to be read back; without the flag both are
    refused or read as before."""
    runs = tmp_path / "runs"
    for name, files in (
        ("pong_seed0", ("config.yaml", "benchmark_metrics.json")),
        ("breakout_seed0", ("config.yaml",)),
    ):
        (runs / name).mkdir(parents=True)
        for f in files:
            (runs / name / f).write_text("{}")
    with pytest.raises(ConfigError, match="breakout_seed0 already holds a run"):
        learn.check_no_runs_over(runs, ["pong_seed0", "breakout_seed0"], reuse=True)
    (moved,) = learn.move_unfinished_aside(runs, ["pong_seed0", "breakout_seed0"])
    assert moved.name.startswith("breakout_seed0.unfinished-") and (moved / "config.yaml").exists()
    assert (runs / "pong_seed0" / "benchmark_metrics.json").exists() and not (runs / "breakout_seed0").exists()
    learn.check_no_runs_over(runs, ["pong_seed0", "breakout_seed0"], reuse=True)  # nothing left to train over


def test_a_run_to_a_training_return_counts_as_reached_when_that_stopped_it(tmp_path):
    """stop.train_return with greedy evaluations off (RLlib's criterion): no eval can confirm the target, so
    the run reached it when the training return is what stopped it."""
    report = {
        "config": {"stop": {"mean_return": None, "train_return": 475.0}}, "evals": [], "duration_hours": 2 / 3600,
        "total_timesteps": 1000, "total_updates": 10,
        "throughput": {"agent_steps_per_s": 500.0, "learner_updates_per_s": 5.0},
        "eval": {"return_mean": 500.0, "return_std": 0.0, "episodes": 50},
    }  # fmt: skip
    runs = {}
    for name, reason in (
        ("hit", "training return 476.1 (last 100 episodes) >= stop.train_return=475"),
        ("cap", "300 s >= stop.seconds=300"),
    ):
        (tmp_path / name).mkdir()
        (tmp_path / name / "benchmark_metrics.json").write_text(json.dumps({**report, "stop_reason": reason}))
        runs[name] = learn.read_run(name, 0, tmp_path / name, 1.0)
    assert runs["hit"]["reached"] and not runs["cap"]["reached"]
    assert runs["hit"]["target"] is None and runs["hit"]["train_target"] == 475.0
    assert learn.summarize(list(runs.values()))["reached"] == 1


def test_a_run_without_a_final_evaluation_gets_its_line():
    """eval.final_episodes=0 (a throughput run) has no final evaluation: its line says so (it raised)."""
    run = {
        "variant": "new", "seed": 0, "ok": True, "target": None, "train_seconds": 15.0, "process_seconds": 25.0,
        "env_steps": 200_000, "env_steps_per_s": 13_333.0, "updates_per_s": 1_600.0, "final_eval_return": None,
        "final_eval_std": None,
    }  # fmt: skip
    assert learn._line(run).endswith("(13,333/s, 1,600 updates/s); no final eval")


def test_a_benchmark_never_trains_over_the_runs_an_earlier_one_left(tmp_path, monkeypatch):
    """Without --reuse, a runs dir holding an earlier benchmark's run is refused before the first run; with
    it, a run that earlier benchmark did not finish is refused too (it would be trained over)."""
    left = tmp_path / "runs" / "ppo_seed1"
    left.mkdir(parents=True)
    (left / "metrics.jsonl").write_text("{}\n")
    monkeypatch.setattr(learn, "run_one", lambda *a, **k: (_ for _ in ()).throw(AssertionError("ran")))
    args = argparse.Namespace(
        variant=["ppo="], source=[], seeds=[0, 1], output=str(tmp_path / "out.json"),
        runs_dir=str(tmp_path / "runs"), random_episodes=0, against_random=False, reuse=False, restart_unfinished=False,
        resume_unfinished=False,
    )  # fmt: skip
    for reuse in (False, True):
        args.reuse = reuse
        with pytest.raises(ConfigError) as err:
            learn.run(args, ["env=fake"])
        message = str(err.value)
        assert message.startswith(f"{left} already holds a run (metrics.jsonl) that this benchmark would train over")
        assert ("--reuse" in message) != reuse and "nothing was changed" in message
    assert (left / "metrics.jsonl").read_text() == "{}\n" and not (tmp_path / "out.json").exists()


def test_a_benchmark_leaves_alone_a_table_another_invocation_is_running_and_a_run_training_now(tmp_path, monkeypatch):
    """A second `bench learn` of the same table (the make target run twice) is refused before anything, between
    the first one's runs too: with --resume-unfinished it would have continued a run beside the first, with
    --restart-unfinished moved one aside under it. So is one whose run dir a run is training in now."""
    from raylab.driver.outputs import hold_dir, hold_run_dir

    live = tmp_path / "runs" / "ppo_seed0"
    live.mkdir(parents=True)
    (live / "metrics.jsonl").write_text("{}\n")
    monkeypatch.setattr(learn, "run_one", lambda *a, **k: (_ for _ in ()).throw(AssertionError("ran")))
    args = argparse.Namespace(
        variant=["ppo="], source=[], seeds=[0], output=str(tmp_path / "out.json"), runs_dir=str(tmp_path / "runs"),
        random_episodes=0, against_random=False, reuse=True, restart_unfinished=False, resume_unfinished=False,
    )  # fmt: skip
    for held, refused in (
        (hold_dir(live.parent, "told"), r"^{} is in use: another bench learn is running this table's runs now: wait"),
        (hold_run_dir(live), r"^{}/ppo_seed0 is in use: a run is training in it now: wait .*then run this again"),
    ):
        with held:
            for flag in ("restart_unfinished", "resume_unfinished"):
                match = refused.format(re.escape(str(live.parent))) + ".*nothing was changed"
                with pytest.raises(ConfigError, match=match):
                    learn.run(argparse.Namespace(**{**vars(args), flag: True}), ["env=fake"])
    assert os.listdir(live.parent) == ["ppo_seed0"] and (live / "metrics.jsonl").read_text() == "{}\n"
    assert not (tmp_path / "out.json").exists()


def test_a_run_brings_its_training_curve_and_final_training_return(tmp_path):
    """The Atari table's training score and curve: metrics.jsonl's rows with a training return, frames beside
    steps, thinned evenly to the cap, a line cut short by a kill skipped; the last 100 episodes' mean return."""
    report = {
        "config": ran_with(["env=fake"], 0), "evals": [], "duration_hours": 1.0, "stop_reason": "done",
        "total_timesteps": 1000, "total_updates": 10,
        "throughput": {"agent_steps_per_s": 500.0, "learner_updates_per_s": 5.0, "env_frames_per_s": 2000.0},
        "eval": {"return_mean": 5.0, "return_std": 0.0, "episodes": 10},
        "performance": {"average_reward_last_100_episodes": 12.5},
    }  # fmt: skip
    (tmp_path / "benchmark_metrics.json").write_text(json.dumps(report))
    rows = [{"time_s": k, "env_steps": 10 * k, "env_frames": 40 * k, "episode/return_mean": float(k)} for k in range(9)]
    rows.insert(1, {"time_s": 0.5, "env_steps": 5, "env_frames": 20})  # no episode ended yet
    lines = [json.dumps(r) for r in rows] + ['{"time_s": 9, "env_st']
    (tmp_path / "metrics.jsonl").write_text("\n".join(lines) + "\n")
    run = learn.read_run("game", 0, tmp_path, 1.0)
    assert run["final_train_return"] == 12.5 and run["env_frames_per_s"] == 2000.0
    assert run["train_curve"] == [[float(k), 10 * k, 40 * k, float(k)] for k in range(9)]
    assert learn.train_curve(tmp_path / "metrics.jsonl", points=3) == [[0.0, 0, 0, 0.0], [4.0, 40, 160, 4.0],
                                                                        [8.0, 80, 320, 8.0]]  # fmt: skip
    assert learn.train_curve(tmp_path / "missing.jsonl") == []

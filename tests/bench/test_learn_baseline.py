"""``bench learn``'s random-policy baseline in a continuous action space, and ``--reuse`` of finished runs."""

from __future__ import annotations

import argparse
import json

import gymnasium as gym
import numpy as np

from raylab.bench import learn
from raylab.config import EnvConfig
from raylab.envs.registry import make_vector_env


def test_random_actions_in_a_box_are_drawn_within_the_envs_own_bounds():
    venv = make_vector_env(EnvConfig(id="Pendulum-v1"), 2, seed=0)
    space = learn.sampling_space(venv)
    assert not np.isfinite(venv.single_action_space.high).all()  # ClipAction advertises (-inf, inf)
    assert isinstance(space, gym.spaces.Box) and space.low.tolist() == [-2.0] and space.high.tolist() == [2.0]
    venv.close()
    out = learn.random_policy_return(EnvConfig(id="Pendulum-v1"), episodes=4)
    assert out["episodes"] == 4 and -1700 < out["return_mean"] < -700  # Pendulum's random policy: about -1200


def test_reuse_reads_finished_runs_instead_of_running_them(tmp_path, monkeypatch):
    run_dir = tmp_path / "runs" / "ppo_seed0"
    run_dir.mkdir(parents=True)
    report = {
        "config": {"stop": {"mean_return": None}}, "evals": [{"time_s": 5.0, "env_steps": 100, "return_mean": 3.0}],
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
    )
    assert learn.run(args, ["env=fake"]) == 0
    (run,) = json.loads((tmp_path / "out.json").read_text())["runs"]
    assert run["reused"] and run["process_seconds"] is None and run["final_eval_return"] == 4.0
    assert run["env_steps_per_s"] == 100.0

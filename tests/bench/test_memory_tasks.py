"""benchmarks/memory_tasks.py without running it: the commands each run would execute, the alternating order, the
figures read off a run, the report, and the docs tables (docs/tables/memory.py) rendered from fabricated runs of
every group (the committed JSON comes from a real run)."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from docs.tables import memory as tables
from tests.bench import load_benchmark

RENDER = {
    "stateless": tables.memory_stateless,
    "r2d2": tables.memory_r2d2,
    "popgym": tables.memory_popgym,
    "popgym_ids": tables.memory_popgym,
    "minigrid": tables.memory_minigrid,
}


@pytest.fixture(scope="module")
def bench() -> Any:
    return load_benchmark("memory_tasks")


def args(**kw: Any) -> argparse.Namespace:
    base = dict(cap_s=600.0, seeds=[0, 1], minigrid_points=6, minigrid_episodes=50, rllib_python="py-rllib",
                rllib_time_limit=500, grace_s=300.0)  # fmt: skip
    return argparse.Namespace(**{**base, **kw})


def test_variants_alternate_seed_by_seed(bench):
    _, variants = bench.GROUPS["r2d2"]
    assert [v.name for v in bench.order(variants, 0)] == [v.name for v in variants]
    assert [v.name for v in bench.order(variants, 1)] == [v.name for v in reversed(variants)]


def test_each_criterion_sets_its_stop(bench):
    tasks, variants = bench.GROUPS["stateless"]
    mlp = next(v for v in variants if v.name == "ppo_mlp")
    o = bench.run_overrides(mlp, tasks["stateless_cartpole"], 900)
    assert o[0] == "+experiment=stateless_cartpole_ppo"
    assert {"stop.train_return=350", "stop.mean_return=null", "stop.env_steps=2000000", "stop.seconds=900",
            "eval.every_seconds=null"} <= set(o)  # fmt: skip
    tasks, variants = bench.GROUPS["r2d2"]
    apex = next(v for v in variants if v.name == "apex_stack4_stateless")
    o = bench.run_overrides(apex, tasks["stateless_cartpole"], 600)
    assert {"env.frame_stack=4", "stop.mean_return=350", "stop.train_return=null", "stop.env_steps=1000000"} <= set(o)
    assert "eval.every_seconds=null" not in o  # the greedy stop needs its periodic evaluations
    tasks, variants = bench.GROUPS["minigrid"]
    o = bench.run_overrides(variants[1], tasks["memory_s7"], 600, bench.checkpoint_every("minigrid", args()))
    assert {"model.recurrent=none", "algo.bptt=null", "stop.env_steps=null", "checkpoint.every_seconds=100"} <= set(o)
    cmd = bench.raylab_command(3, Path("runs/x"), o)
    assert cmd[1:3] == ["-m", "raylab.train"] and "seed=3" in cmd and cmd[-1].startswith("hydra.run.dir=/")


def test_the_rllib_command_runs_this_script_in_rllibs_python(bench):
    tasks, variants = bench.GROUPS["stateless"]
    (peer,) = [v for v in variants if v.framework == "rllib"]
    cmd = bench.rllib_command(args(cap_s=1200.0), peer, tasks["stateless_cartpole"], 2)
    assert cmd[0] == "py-rllib" and cmd[1].endswith("memory_tasks.py")
    assert cmd[cmd.index("--rllib-run") + 1 :] == ["stateless", "2", "1200", "2000000", "350", "1"]
    # a budgeted task runs its whole cap (no target: nan; MiniGrid's target is read off the curve)
    popgym_tasks, popgym_variants = bench.GROUPS["popgym"]
    peers = {v.task: v for v in popgym_variants if v.framework == "rllib"}
    cmd = bench.rllib_command(args(cap_s=300.0), peers["count_recall"], popgym_tasks["count_recall"], 0)
    assert cmd[cmd.index("--rllib-run") + 1 :] == ["popgym_count_recall", "0", "300", "0", "nan", "0"]
    minigrid_tasks, minigrid_variants = bench.GROUPS["minigrid"]
    (peer,) = [v for v in minigrid_variants if v.framework == "rllib"]
    cmd = bench.rllib_command(args(cap_s=900.0), peer, minigrid_tasks["memory_s7"], 1)
    assert cmd[cmd.index("--rllib-run") + 1 :] == ["minigrid_memory", "1", "900", "0", "0.9", "0"]


def test_every_rllib_peer_plays_the_env_of_the_raylab_runs_beside_it(bench, tmp_path):
    """Each RLlib variant's setup builds the env that the task's raylab recurrent variant plays (its experiment's
    env.id and env.options resolved): the same spaces and, from one seed, the same observations."""
    from raylab.config import resolve
    from raylab.envs import make_env
    from raylab.train import compose

    for group, (_, variants) in bench.GROUPS.items():
        for v in variants:
            if v.framework != "rllib" or bench.RLLIB_SETUPS[v.rllib].env == "stateless":
                continue  # stateless: RLlib's own StatelessCartPole class (needs ray.rllib)
            (ours,) = [r for r in variants if r.task == v.task and r.role == "recurrent"]
            cfg = resolve(compose(list(ours.overrides)), run_dir=str(tmp_path / v.name))
            env, reference = bench.rllib_env(v.rllib, 0), make_env(cfg.env, seed=0)
            assert env.observation_space == reference.observation_space, (group, v.name)
            assert env.action_space == reference.action_space, (group, v.name)
            np.testing.assert_array_equal(env.reset(seed=3)[0], reference.reset(seed=3)[0])


def test_curves_are_read_thinned_and_crossed(bench):
    rows = [{"env_steps": 0, "time_s": 0.5}] + [
        {"env_steps": 1000 * i, "time_s": float(i), "episode/return_mean": float(i)} for i in range(1, 1001)
    ]
    curve = bench.training_curve(rows)
    assert curve[0] == [1000, 1.0, 1.0] and len(curve) == 1000
    thin = bench.thin(curve, 300)
    assert len(thin) == 300 and thin[0] == curve[0] and thin[-1] == curve[-1]
    assert bench.first_at(curve, 350) == (350.0, 350_000)
    assert bench.first_at(curve, 5000) == (None, None) and bench.first_at(curve, None) == (None, None)


def test_checkpoints_get_their_env_steps_and_seconds(bench):
    rows = [{"env_steps": 0, "time_s": 0.0}, {"env_steps": 1000, "time_s": 10.0}]
    evals = [
        {"checkpoint": "step_000000000500.pt", "success_rate": 0.5, "return_mean": 0.45, "episodes": 50},
        {"checkpoint": "final.pt", "success_rate": 1.0, "return_mean": 0.93, "episodes": 50},
    ]
    assert bench.checkpoint_curve(evals, rows, 1000) == [[500, 5.0, 0.5, 0.45, 50], [1000, 10.0, 1.0, 0.93, 50]]


def fake_run(bench: Any, group: str, v: Any, seed: int, k: int) -> dict[str, Any]:
    """A run's record as run_one makes it, with made-up figures (``k`` spreads them)."""
    tasks, _ = bench.GROUPS[group]
    task = tasks[v.task]
    curve = [[1000 * i, float(i), 0.1 * i + k] for i in range(1, 40)]
    run: dict[str, Any] = {
        "variant": v.name,
        "task": v.task,
        "seed": seed,
        "run_dir": "x",
        "ok": True,
        "loadavg_before": [0.5 + k, 0.4, 0.3],
        "loadavg_after": [1.5, 0.9, 0.4],
        "process_s": 50.0,
        "rc": 0,
        "killed": None,
        "train_s": 40.0,
        "env_steps": 39_000,
        "env_steps_per_s": 975.0,
        "stop_reason": "whatever",
        "final_eval_return": None if v.framework == "rllib" else 480.0,
        "train_return_final": curve[-1][2],
        "train_return_max": curve[-1][2],
        "curve": curve,
    }
    reached = k % 2 == 0
    if task.criterion != "budget" or task.target is not None:
        run.update(reached=reached, seconds_to_target=30.0 if reached else None,
                   env_steps_to_target=30_000 if reached else None)  # fmt: skip
    if group == "minigrid":
        run.update(checkpoint_evals=[[10_000, 10.0, 0.5, 0.4, 50], [39_000, 40.0, 0.9, 0.85, 50]],
                   final_success_rate=0.9, final_eval_return=0.85, final_eval_episodes=50)  # fmt: skip
    return run


def fake_variant(v: Any) -> dict[str, Any]:
    if v.framework == "rllib":
        return {
            "framework": "rllib",
            "role": v.role,
            "task": v.task,
            "topology": "PPO",
            "workers": 2,
            "envs_per_worker": 8,
            "model": "LSTM 256",
            "config": "c",
            "shape_note": "2 x 8",
            "env": "RLlib's",
        }
    return {
        "framework": "raylab",
        "role": v.role,
        "task": v.task,
        "overrides": list(v.overrides),
        "algo": "ppo",
        "topology": "ppo",
        "workers": 2,
        "envs_per_worker": 8,
        "rollout_length": 64,
        "model": "mlp [64]",
        "frame_stack": 4 if "env.frame_stack=4" in v.overrides else 1,
    }


def fake_report(bench: Any, group: str, tmp_path: Path) -> dict[str, Any]:
    _, variants = bench.GROUPS[group]
    runs = [fake_run(bench, group, v, seed, k) for k, seed in enumerate([0, 1]) for v in bench.order(variants, k)]
    runs[0] = {**runs[0], "ok": False, "error": ["boom"]}  # one failed run
    machine = {"date": "2026-01-01T00:00:00", "cpu": "CPU", "cores": 2, "python": "3.11", "git_commit": "abc1234"}
    described = {v.name: fake_variant(v) for v in variants}
    return bench.build_report(group, args(), described, runs, machine, True, "2.60.0")


@pytest.mark.parametrize("group", ["stateless", "r2d2", "popgym", "popgym_ids", "minigrid"])
def test_every_group_renders_a_full_table(bench, group, tmp_path):
    report = json.loads(json.dumps(fake_report(bench, group, tmp_path)))  # as read back from the file
    assert report["benchmark"] == f"memory_tasks_{group}"
    assert report["summary"][report["runs"][0]["variant"]]["failed"] == 1
    text = RENDER[group]([report])
    blocks = re.findall(r"(?m)(?:^\|.*\n)+", text)
    assert len(blocks) == 1
    header, rule, *body = blocks[0].splitlines()
    columns = len(header.split("|")) - 2
    assert rule == "|" + "---|" * columns and len(body) == len(report["variants"])
    for row in body:
        cells = row.split("|")[1:-1]
        assert len(cells) == columns and all(cell.strip() for cell in cells), row
    assert not re.search(r"\b(None|nan|inf)\b", text), text
    assert "failed" in text and "load average" in text


@pytest.mark.parametrize("group", ["stateless", "minigrid"])  # one panel; two kinds of panel
def test_the_plot_draws_every_panel(bench, group, tmp_path):
    report = fake_report(bench, group, tmp_path)
    bench.plot(report, tmp_path / "m.png")
    assert (tmp_path / "m.png").stat().st_size > 10_000


def test_a_dry_run_prints_the_commands_and_runs_nothing(bench, tmp_path, capsys):
    """The popgym group: every config resolved, one command per run, nothing written."""
    out = tmp_path / "memory"
    assert bench.main(["--groups", "popgym", "--seeds", "0", "1", "--dry-run", "--output", str(out)]) == 0
    lines = capsys.readouterr().out.splitlines()
    commands = [line for line in lines if "raylab.train" in line]
    assert len(commands) == 8 and "model.recurrent=none" in commands[1] and "seed=1" in commands[-1]
    assert not list(tmp_path.iterdir())

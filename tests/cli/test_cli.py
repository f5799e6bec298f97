"""The CLI as users run it: a real run, and every bad input ends in one line that names the fix, exit 2."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

ENV = {**os.environ, "WANDB_MODE": "disabled", "HYDRA_FULL_ERROR": "0"}


def train(*args, tmp_path):
    return subprocess.run(
        [sys.executable, "-m", "raylab.train", *args, f"hydra.run.dir={tmp_path}/run"],
        capture_output=True, text=True, env=ENV, timeout=300,
    )  # fmt: skip


def test_smoke_run_in_serial_mode(tmp_path):
    proc = train("debug=smoke", "topology=local", "env=fake", tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "raylab: done" in proc.stdout
    bm = json.loads((tmp_path / "run" / "benchmark_metrics.json").read_text())
    assert bm["total_timesteps"] >= 2000


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["+experiment=nope"], "unknown experiment 'nope': choose one of cartpole_dqn"),
        (["experiment=nope"], "unknown experiment 'nope': choose one of cartpole_dqn"),
        (["topology=ring"], "unknown topology 'ring': choose one of apex_dqn, local"),
        (["env.id=CartPol-v1"], "did you mean CartPole-v1"),
        (["topology.num_workers=0"], "set topology.num_workers=1 or more"),
        (["topology.num_workers=-3"], "set topology.num_workers=1 or more"),
        (["+experiment=cartpole_dqn", "stop.mean_return=1000"], "can never trigger"),
        (["stop.env_steps=null", "stop.seconds=null"], "no stop condition"),
        (["env.id=Pendulum-v1"], "needs discrete actions"),
        (["env.id=FrozenLake-v1"], "take array (Box) observations"),
        (["env=mario", "env.id=SuperMarioBros-9-1-v0"], "valid ids are SuperMarioBros-v0..v3"),
        (["env=procgen", "env.id=coinrn"], "unknown Procgen game 'coinrn': choose one of bigfish"),
        (["env=snake", "+env.options.size=12"], "unknown env.options.size for env=snake: valid options are dim"),
        (["env=snake", "env.resize=[84,84]"], "set env.grayscale=false and env.resize=null"),
        (["replay.capacity=100000000000"], "lower replay.capacity"),
        (["learner.lrr=0.1"], "unknown config key 'learner.lrr': did you mean 'learner.lr'?"),
    ],
)
def test_bad_input_is_one_line_that_names_the_fix(args, expected, tmp_path):
    proc = train(*args, tmp_path=tmp_path)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("raylab: error: ") and expected in lines[0]


@pytest.mark.parametrize("topology", ["local", "apex_dqn"])
def test_ctrl_c_stops_cleanly_with_outputs(topology, tmp_path):
    """SIGINT to the whole process group, as a terminal's Ctrl-C sends it: exit 130, every output written."""
    run_dir = tmp_path / "run"
    cmd = [
        sys.executable, "-m", "raylab.train", "env=fake", f"topology={topology}", "stop.seconds=300",
        "stop.env_steps=null", "logger.report_every_seconds=0.5", f"hydra.run.dir={run_dir}",
    ]  # fmt: skip
    proc = subprocess.Popen(cmd, start_new_session=True, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 120
    while not (run_dir / "metrics.jsonl").exists() or not (run_dir / "metrics.jsonl").read_text().strip():
        assert proc.poll() is None and time.monotonic() < deadline, "the run did not start"
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGINT)
    start = time.monotonic()
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 130, out
    assert time.monotonic() - start < 30
    bm = json.loads((run_dir / "benchmark_metrics.json").read_text())
    assert bm["stop_reason"] == "interrupted" and bm["total_timesteps"] > 0
    assert (run_dir / "checkpoints" / "final.pt").exists()


def test_bad_gymnasium_options_are_one_line(tmp_path):
    proc = train("+env.options.foo=1", "topology=local", tmp_path=tmp_path)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1
    assert "fix env.options" in proc.stderr


def test_bench_envs_writes_json_and_png(tmp_path):
    out = tmp_path / "envs.json"
    proc = subprocess.run(
        [sys.executable, "-m", "raylab.bench", "envs", "--families", "cartpole", "snake", "--seconds", "0.2",
         "--rounds", "2", "--output", str(out)],
        capture_output=True, text=True, env=ENV, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    report = json.loads(out.read_text())
    assert report["machine"]["cores"] and set(report["families"]) == {"cartpole", "snake"}
    for family in report["families"].values():
        assert set(family["stages"]) == {"raw", "wrapped", "vector", "worker"}
        assert all(len(s["rounds"]) == 2 and s["agent_steps_per_s"] > 0 for s in family["stages"].values())
    assert out.with_suffix(".png").stat().st_size > 0

"""The CLI as users run it: a real run, and every bad input ends in one line that names the fix, exit 2."""

import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest

from tests.cli.inprocess import ReachedWork, run_cli

ENV = {**os.environ, "WANDB_MODE": "disabled", "HYDRA_FULL_ERROR": "0"}


def train(*args, tmp_path, run_dir=None):
    return subprocess.run(
        [sys.executable, "-m", "raylab.train", *args, f"hydra.run.dir={run_dir or tmp_path / 'run'}"],
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
        (["+experiment=nope"], "unknown experiment 'nope': choose one of atari_appo, blackjack_dqn, blackjack_ppo, "),
        (["experiment=nope"], "unknown experiment 'nope': choose one of atari_appo, blackjack_dqn, blackjack_ppo, "),
        (["topology=ring"], "unknown topology 'ring': choose one of a3c, apex_dqn, "),
        (["topology=a3c"], "topology=a3c runs a3c, not algo=dqn: add algo=a3c"),
        (["+experiment=cartpole_a3c", "params.num_shards=10000000"], "set params.num_shards between 1 and"),
        (["+experiment=cartpole_a3c", "params.worker_nice=40"], "params.worker_nice must be in 0..19"),
        (["env.id=CartPol-v1"], "did you mean CartPole-v1"),
        (["topology.num_workers=0"], "set topology.num_workers=1 or more"),
        (["topology.num_workers=-3"], "set topology.num_workers=1 or more"),
        (["env.backend=envpool", "env.id=Pendulum-v1", "algo=ppo", "topology=ppo"], "moves differently from gymnasium"),
        (["env.backend=envpool", "env.id=LunarLander-v3"], "has no port of LunarLander-v3: use one of CartPole-v0"),
        (["topology.chunks_in_flight=2"], "chunks_in_flight=2 applies to topology=appo (its actors queue sample"),
        (["+experiment=cartpole_appo", "topology.chunks_in_flight=0"], "topology.chunks_in_flight must be >= 1"),
        (["+experiment=cartpole_dqn", "stop.mean_return=1000"], "can never trigger"),
        (["stop.env_steps=null", "stop.seconds=null"], "no stop condition"),
        (["env.id=Pendulum-v1"], "needs discrete actions"),
        (["env.id=tests.cli.odd_envs:TextObservation-v0"], "raylab encodes Box, Discrete, MultiDiscrete, MultiBinary"),
        (["env=mario", "env.id=SuperMarioBros-9-1-v0"], "valid ids are SuperMarioBros-v0..v3"),
        (["env=procgen", "env.id=coinrn"], "unknown Procgen game 'coinrn': choose one of bigfish"),
        (["env=snake", "+env.options.size=12"], "unknown env.options.size for env=snake: valid options are dim"),
        (["env=snake", "env.resize=[84,84]"], "set env.grayscale=false and env.resize=null"),
        (["env=pettingzoo", "env.id=mpe2.simple_adversary_v3"], "set env.pad_observations=true"),
        (["env=pettingzoo", "env.id=json"], "raylab takes PettingZoo's Parallel API"),
        (["env=snake_arena", "env.options.num_snakes=40"], "raise dim to at least"),
        (["+experiment=snake_arena_ppo", "env.frame_stack=4"], "is multi-agent and takes no frame preprocessing"),
        (["replay.capacity=100000000000"], "lower replay.capacity"),
        (["learner.lrr=0.1"], "unknown config key 'learner.lrr': did you mean 'learner.lr'?"),
        (["eval.greedy=false"], "not algo=dqn: remove it, or set algo.epsilon.eval instead"),
        (["topology=local", "learner.precision=fp16"], "needs CUDA (GradScaler): use learner.precision=bf16 on CPU"),
        (["learner.grad_accumulation=3"], "must be >= 1 and divide learner.batch_size=64: pick a divisor"),
        (["+experiment=cartpole_a3c", "learner.precision=bf16"], "learner.precision=bf16 applies to algo=dqn/ppo/appo"),
        (["topology=local", "replay.frame_dedup=true"], "set replay.frame_dedup=auto"),
        (["replay.num_shards=3"], "set replay.num_shards <= 2"),
        (["+experiment=cartpole_ppo", "checkpoint.replay=true"], "checkpoint.replay=true applies to algo=dqn"),
        (["topology=local", "model.norm=batch"], "model.norm=batch applies to model=nature_cnn"),
        (["env=fake", "ray.address=127.0.0.1:1", "ray.connect_timeout_s=2"],
         "cannot reach Ray at '127.0.0.1:1' within 2 s (Connection refused): start the cluster (ray start --head)"),
        (["env=fake", "ray.address=nohost"], "ray.address 'nohost' is not host:port, ray://host:port or auto"),
        (["+experiment=cartpole_dqn", "topology=local", "learner.lr=1e38", "stop.mean_return=null"],
         "became nan by update"),
        (["seed=-1"], "seed must be between 0 and 4294967295 (got -1): pick a seed in that range"),
        (["seed=99999999999999999999999"], "seed must be between 0 and 4294967295 (got 99999999999999999999999)"),
        (["cartpole_dqn"], "'cartpole_dqn' is an experiment: write +experiment=cartpole_dqn"),
        (["nature_cnn"], "'nature_cnn' is a model: write model=nature_cnn"),
        (["lr=0.001"], "unknown config key 'lr': did you mean learner.lr?"),
        (["+experiment=cartpole_dqn,cartpole_ppo"], "lists several values, which only a sweep runs: add -m"),
        (["env.id=ALE/Pong-v5"], "ALE envs come from ale-py: pip install ale-py"),
        (["learner.batch_size=128", "replay.min_size=64", "replay.capacity=100"],
         "is below learner.batch_size=128: lower learner.batch_size (replay.capacity=100 holds fewer)"),
        (["model.hidden_sizes=[100000,100000]"], "makes a network of 10.00 G parameters, whose weights, gradients"),
        (["env=fake", "topology.num_workers=4", "ray.num_cpus=2"],
         "the run reserves 5 CPUs (4 rollout actors x 1, the learner 1) and the Ray cluster has 2: lower"),
        (["env=fake", "learner.num_gpus=1"], "the learner asks for 1 GPU (learner.num_gpus) and the Ray cluster has 0"),
        (["resume=README.md"], "resume=README.md is a file: resume takes the run dir"),
    ],
)  # fmt: skip
def test_bad_input_is_one_line_that_names_the_fix(args, expected, tmp_path):
    """Through the CLI's entry function in this process (tests/cli/inprocess.py: a fraction of a second, against
    about 3 s to start an interpreter and import torch) when the input is refused before any work; in a real
    process when the refusal needs work first (Ray's cluster: its CPUs and GPUs; training: a NaN loss).
    tests/cli/test_catalogue.py's test_real_cli_says_the_same holds the two paths to the same line."""
    try:
        code, stderr = run_cli("train", [*args, f"hydra.run.dir={tmp_path / 'run'}"])
    except ReachedWork:
        proc = train(*args, tmp_path=tmp_path, run_dir=tmp_path / "real")
        code, stderr = proc.returncode, proc.stderr
    assert code == 2, stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith("raylab: error: ") and expected in lines[0]


def test_a_key_that_does_not_apply_is_refused_not_ignored(tmp_path):
    """PPO has no Q head: model.dueling=true is refused (raylab/config/applicability.py), not trained without."""
    proc = train("+experiment=cartpole_ppo", "model.dueling=true", tmp_path=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip() == (
        "raylab: error: model.dueling=true applies to algo=dqn (its Q head), not algo=ppo: remove it"
    )


def wait_for_first_metrics(proc: subprocess.Popen, run_dir, timeout: float = 120) -> None:
    """Until the run has written its first metrics row (it is training); fails if it exits first."""
    deadline = time.monotonic() + timeout
    while not (run_dir / "metrics.jsonl").exists() or not (run_dir / "metrics.jsonl").read_text().strip():
        assert proc.poll() is None and time.monotonic() < deadline, "the run did not start"
        time.sleep(0.2)


SLOW = pytest.mark.slow  # the same path as apex_dqn's; kept out of the 15-minute default tier


@pytest.mark.parametrize(
    "topology",
    [
        "local",
        pytest.param("apex_dqn", marks=SLOW),  # a Ray topology's stop stays in the default tier with SIGTERM below
        pytest.param("a3c", marks=SLOW),
        pytest.param("ppo", marks=SLOW),
        pytest.param("appo", marks=SLOW),
    ],
)
def test_ctrl_c_stops_cleanly_with_outputs(topology, tmp_path):
    """SIGINT to the whole process group, as a terminal's Ctrl-C sends it: exit 130, every output written."""
    run_dir = tmp_path / "run"
    algo = [f"algo={topology}"] if topology in ("a3c", "ppo", "appo") else []
    cmd = [
        sys.executable, "-m", "raylab.train", "env=fake", f"topology={topology}", *algo, "stop.seconds=300",
        "stop.env_steps=null", "logger.report_every_seconds=0.5", f"hydra.run.dir={run_dir}",
    ]  # fmt: skip
    proc = subprocess.Popen(
        cmd, start_new_session=True, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        # a shell's background jobs inherit SIGINT ignored, and Python then never raises KeyboardInterrupt:
        # give the run the terminal's default disposition however pytest itself was started
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )  # fmt: skip
    wait_for_first_metrics(proc, run_dir)
    os.killpg(proc.pid, signal.SIGINT)
    start = time.monotonic()
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 130, out
    assert time.monotonic() - start < 30
    bm = json.loads((run_dir / "benchmark_metrics.json").read_text())
    assert bm["stop_reason"] == "interrupted" and bm["total_timesteps"] > 0
    assert (run_dir / "checkpoints" / "final.pt").exists()


@pytest.mark.parametrize("topology", ["local", pytest.param("apex_dqn", marks=pytest.mark.slow)])  # apex_dqn: 21 s
def test_sigterm_stops_cleanly_with_exit_0(topology, tmp_path):
    """SIGTERM (ray job stop, a scheduler's preemption, docker stop): outputs written, exit 0, promptly."""
    run_dir = tmp_path / "run"
    cmd = [
        sys.executable, "-m", "raylab.train", "env=fake", f"topology={topology}", "stop.seconds=300",
        "stop.env_steps=null", "logger.report_every_seconds=0.5", f"hydra.run.dir={run_dir}",
    ]  # fmt: skip
    proc = subprocess.Popen(cmd, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    wait_for_first_metrics(proc, run_dir)
    proc.send_signal(signal.SIGTERM)
    start = time.monotonic()
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0, out
    assert time.monotonic() - start < 30
    assert b"SIGTERM: stopping" in out
    # a healthy run prints raylab's lines and nothing else: no Python or Ray warnings, no actors' log lines;
    # the one warning that matters here (no GPU for the learner) once
    text = out.decode()
    warnings = [line for line in text.splitlines() if "warn" in line.lower() or "deprecat" in line.lower()]
    expected = ["no GPU in the Ray cluster: the learner runs on CPU"] if topology == "apex_dqn" else []
    assert [w for w in warnings if not any(e in w for e in expected)] == [], text[-3000:]
    assert sum(any(e in w for e in expected) for w in warnings) == len(expected), text[-3000:]
    assert not re.search(r"^\(\w+ pid=\d+", text, re.MULTILINE), text[-3000:]  # "(RolloutHost pid=...)" lines
    bm = json.loads((run_dir / "benchmark_metrics.json").read_text())
    assert bm["stop_reason"] == "terminated" and bm["total_timesteps"] > 0
    assert (run_dir / "checkpoints" / "final.pt").exists()
    rows = (run_dir / "metrics.jsonl").read_text().splitlines()
    assert json.loads(rows[-1])["env_steps"] == bm["total_timesteps"]  # the last row was flushed


def test_bad_gymnasium_options_are_one_line(tmp_path):
    proc = train("+env.options.foo=1", "topology=local", tmp_path=tmp_path)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1
    assert "fix env.options" in proc.stderr


@pytest.mark.slow  # 7 s
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


def bench(*args, timeout=300):
    return subprocess.run(
        [sys.executable, "-m", "raylab.bench", *args], capture_output=True, text=True, env=ENV, timeout=timeout
    )


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--workers", "0"], "--workers must be >= 1"),
        (["--segments", "4", "--workers", "8"], "--segments=4 is fewer than --workers=8"),
        (["--in-flight", "-1"], "--in-flight >= 0"),
    ],
)
def test_bench_scaling_bad_arguments_are_one_line(args, expected):
    proc = bench("scaling", "+experiment=snake_a3c", *args)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert proc.stderr.startswith("raylab bench: error: ") and expected in proc.stderr


def test_bench_scaling_needs_the_a3c_topology():
    proc = bench("scaling", "+experiment=cartpole_dqn")
    assert proc.returncode == 2 and "add +experiment=snake_a3c" in proc.stderr


@pytest.mark.slow  # 8 rows on its own Ray (30 s); the default tier checks its arguments (above)
def test_bench_scaling_writes_rows_json_and_png(tmp_path):
    """Seed 000's protocol, tiny: both push modes, both models, every row's fields."""
    out = tmp_path / "scaling.json"
    proc = bench(
        "scaling", "+experiment=snake_a3c", "--workers", "1", "2", "--segments", "40", "--repeats", "1",
        "--train-seconds", "2", "--output", str(out), "model.hidden_sizes=[16]", "--runs-dir", str(tmp_path / "runs"),
        timeout=400,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(out.read_text())
    assert report["cores_available"] >= 1 and len(report["rows"]) == 2 * 2 * 2
    for row in report["rows"]:
        assert row["segments"] == row["pushes_applied"] == 40
        assert 0 <= row["wait_s"] <= row["total_s"] and row["env_steps"] >= 40
    for mode in ("pushes_in_flight=1", "pushes_in_flight=0"):
        assert report["summary"][mode]["1"]["initial_speedup"] == 1.0
    assert "plateau (pushes_in_flight=1)" in proc.stdout and out.with_suffix(".png").stat().st_size > 0


def test_a_finished_run_is_never_trained_over(tmp_path):
    """hydra.run.dir pointing at a run (here a finished one) is refused before anything is written; resume= or
    overwrite=true are the ways in, and a run dir under a plain file is one line too."""
    run = tmp_path / "run"
    first = train("env=fake", "topology=local", "stop.env_steps=500", tmp_path=tmp_path)
    assert first.returncode == 0, first.stderr
    before = {p: p.read_bytes() for p in run.rglob("*") if p.is_file()}
    again = train("env=fake", "topology=local", "stop.env_steps=500", tmp_path=tmp_path)
    assert again.returncode == 2 and again.stderr.count("\n") == 1, again.stderr
    assert f"{run} already holds a run (config.yaml)" in again.stderr and "resume=" in again.stderr
    assert {p: p.read_bytes() for p in run.rglob("*") if p.is_file()} == before  # nothing touched
    replaced = train("env=fake", "topology=local", "stop.env_steps=500", "overwrite=true", tmp_path=tmp_path)
    assert replaced.returncode == 0, replaced.stderr
    rows = (run / "metrics.jsonl").read_text().splitlines()
    assert json.loads(rows[0])["env_steps"] <= json.loads(rows[-1])["env_steps"] <= 1000  # one run, not two
    blocker = tmp_path / "a_file"
    blocker.write_text("x")
    under = train("env=fake", tmp_path=tmp_path, run_dir=blocker / "run")
    assert under.returncode == 2 and f"is under {blocker}, which is a file" in under.stderr, under.stderr


def test_sigterm_stops_cleanly_when_whoever_read_its_output_is_gone(tmp_path):
    """A run whose stdout and stderr went to a parent that died (a benchmark harness killed first): SIGTERM still
    writes its outputs (its notice to stderr cannot be printed; that is all it loses)."""
    run_dir = tmp_path / "run"
    cmd = [
        sys.executable, "-m", "raylab.train", "env=fake", "topology=local", "stop.seconds=300", "stop.env_steps=null",
        "logger.console=false", "logger.report_every_seconds=0.5", f"hydra.run.dir={run_dir}",
    ]  # fmt: skip
    proc = subprocess.Popen(cmd, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    wait_for_first_metrics(proc, run_dir)
    proc.stdout.close()  # the reader is gone: a write to either pipe now fails with EPIPE
    proc.stderr.close()
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=60)
    bm = json.loads((run_dir / "benchmark_metrics.json").read_text())
    assert bm["stop_reason"] == "terminated" and bm["total_timesteps"] > 0
    assert (run_dir / "checkpoints" / "final.pt").exists()

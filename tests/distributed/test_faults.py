"""Actors killed by PID mid-run (as a crash or an OOM kill would): the run goes on. Rollout actors come back
through Ray's max_restarts and rejoin, losing at most their chunk in flight; the learner comes back from the
latest periodic checkpoint, a replay shard from its newest snapshot (checkpoint.replay); every restart is
counted in the metrics. (A3C's parameter-server shards: tests/distributed/test_a3c.py.)

Every step waits for the event it needs, never for a fixed time: a kill is made once the previous one has been
counted in metrics.jsonl (reported every second), and a run that must outlive its kills has no stop target and
is ended by SIGTERM once it has shown what the test checks. (A run that stops at its target can reach it
before a kill lands, or during its final evaluation, when no actor is called and a death goes unseen.)"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest

pytestmark = pytest.mark.distributed

ENV = {**os.environ, "WANDB_MODE": "disabled"}
KIND = {"RolloutHost": "rollout", "ReplayHost": "replay", "LearnerHost": "learner", "InferenceHost": "inference"}
"""The restarts/<kind> counter each actor class's death adds to."""


def actor_pids(root: int, name: str) -> list[int]:
    """PIDs of this run's actor processes of one class (Ray titles them ray::<Class>[.<method>])."""
    out = []
    for proc in psutil.Process(root).children(recursive=True):
        try:
            title = " ".join(proc.cmdline())
        except psutil.Error:
            continue
        if title.startswith(f"ray::{name}"):
            out.append(proc.pid)
    return sorted(out)


def rows(run_dir: Path) -> list[dict]:
    """metrics.jsonl's complete rows so far."""
    path = run_dir / "metrics.jsonl"
    if not path.exists():
        return []
    text = path.read_text()
    return [json.loads(line) for line in text[: text.rfind("\n") + 1].splitlines()]


def wait_for_row(proc: subprocess.Popen, run_dir: Path, what: str, pred: Callable[[dict], bool],
                 after: int = 0, timeout: float = 180) -> tuple[int, dict]:  # fmt: skip
    """Wait for the first metrics row (from index ``after`` on) that satisfies ``pred``; fails if the run
    ends first or ``timeout`` passes (a generous bound for a busy machine, not the expected time)."""
    deadline = time.monotonic() + timeout
    while True:
        for i, row in enumerate(rows(run_dir)[after:], start=after):
            if pred(row):
                return i, row
        assert proc.poll() is None, f"the run ended before {what}"
        assert time.monotonic() < deadline, f"no {what} within {timeout:.0f} s"
        time.sleep(0.2)


def run_with_kills(cmd: list[str], run_dir: Path, plan: list[str],
                   then: Callable[[subprocess.Popen, int], None] | None = None) -> tuple[int, str]:  # fmt: skip
    """Start ``cmd``; once it has written a periodic checkpoint, SIGKILL one actor of each class in ``plan`` in
    turn, each once the previous death has been counted in the metrics. Then ``then(proc, row)`` (``row``: the
    index of the metrics row that counted the last death) runs and the run is ended by SIGTERM, or, with no
    ``then``, the run ends by itself. Returns (exit status, output)."""
    log_path = run_dir.parent / f"{run_dir.name}.out"
    with open(log_path, "wb") as log:  # a file, not a pipe nobody reads while the run goes on
        proc = subprocess.Popen(cmd, env=ENV, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 180
        while not list((run_dir / "checkpoints").glob("step_*.pt")):
            assert proc.poll() is None, "the run ended before its first periodic checkpoint"
            assert time.monotonic() < deadline, "no periodic checkpoint within 180 s"
            time.sleep(0.2)
        killed: Counter[str] = Counter()
        row = 0
        for name in plan:
            pids = actor_pids(proc.pid, name)
            assert pids, f"no ray::{name} process to kill"
            os.kill(pids[0], signal.SIGKILL)
            kind = KIND[name]
            killed[kind] += 1
            want = killed[kind]
            row, _ = wait_for_row(proc, run_dir, f"the kill of {name} #{want} was counted",
                                  lambda r, key=f"restarts/{kind}", n=want: r[key] >= n, after=row)  # fmt: skip
        if then is not None:
            then(proc, row)
            proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.returncode, log_path.read_text(errors="replace")


@pytest.mark.slow  # 48 s; the default tier keeps A3C's killed-worker restart
def test_killed_rollout_actors_replay_and_learner_come_back_and_the_run_learns_on_to_its_target(tmp_path):
    """cartpole_dqn (Ape-X topology) with two rollout actors killed, then the replay shard, a rollout actor
    again, the learner and a rollout actor: each death is counted exactly once, and after the last one the
    run's greedy evaluations still reach CartPole's target."""
    run_dir = tmp_path / "run"
    cmd = [
        sys.executable, "-m", "raylab.train", "+experiment=cartpole_dqn", "stop.seconds=400", "stop.env_steps=null",
        "stop.mean_return=null", "checkpoint.every_seconds=2", "checkpoint.replay=true",
        "logger.report_every_seconds=1", "logger.console=false", f"hydra.run.dir={run_dir}",
    ]  # fmt: skip
    plan = ["RolloutHost", "ReplayHost", "RolloutHost", "LearnerHost", "RolloutHost"]
    target = 475 * 0.9

    def learns_on(proc: subprocess.Popen, row: int) -> None:  # an evaluation of weights trained after the last death
        seen = rows(run_dir)[row].get("eval/version", -1)

        def reached(r: dict) -> bool:
            return r.get("eval/version", -1) != seen and r.get("eval/return_mean", -1.0) >= target

        wait_for_row(proc, run_dir, f"an evaluation >= {target} after the last kill", reached, after=row)

    returncode, out = run_with_kills(cmd, run_dir, plan, then=learns_on)
    assert returncode == 0, out[-3000:]
    bm = json.loads((run_dir / "benchmark_metrics.json").read_text())
    assert bm["stop_reason"] == "terminated", bm["stop_reason"]
    restarts = bm["restarts"]
    assert restarts["restarts/rollout"] == 3 and restarts["restarts/learner"] == 1, restarts  # none counted twice
    # the replay shard came back with the transitions of its newest snapshot, not empty
    assert restarts["restarts/replay"] == 1 and restarts["restarts/replay_restored"] > 0, restarts
    assert "replay shard 0 restarted with" in out
    # at most one chunk in flight per death (none when it died between calls)
    assert restarts["restarts/lost_chunks"] <= restarts["restarts/rollout"]
    assert rows(run_dir)[-1]["restarts/rollout"] == restarts["restarts/rollout"]
    assert max(e["return_mean"] for e in bm["evals"]) >= target, bm["evals"][-3:]
    # the workers' steps all arrived, minus the chunks lost in flight
    assert sum(w["env_steps"] for w in bm["workers"].values()) == bm["total_timesteps"]


@pytest.mark.slow  # make test-all, as the apex_dqn fault test above (the default tier: A3C's worker restart)
@pytest.mark.parametrize("experiment", ["cartpole_ppo", "cartpole_appo"])
def test_ppo_and_appo_actors_come_back(experiment, tmp_path):
    """A killed rollout actor is waited for and rejoins: PPO resamples its chunk with the same weights (the
    round stays whole and on-policy), APPO resubmits it. The killed learner comes back from its latest
    periodic checkpoint and trains on. Each restart is counted once."""
    run_dir = tmp_path / "run"
    cmd = [
        sys.executable, "-m", "raylab.train", f"+experiment={experiment}", "stop.seconds=400", "stop.env_steps=null",
        "stop.mean_return=null", "stop.train_return=null", "eval.every_seconds=null", "logger.report_every_seconds=1",
        "checkpoint.every_seconds=2", "logger.console=false", f"hydra.run.dir={run_dir}",
    ]  # fmt: skip

    def trains_on(proc: subprocess.Popen, row: int) -> None:
        last = rows(run_dir)[row]

        def trained(r: dict) -> bool:
            return r["updates"] > last["updates"] and r["env_steps"] > last["env_steps"]

        wait_for_row(proc, run_dir, "an update after the last kill", trained, after=row)

    returncode, out = run_with_kills(cmd, run_dir, ["RolloutHost", "LearnerHost", "RolloutHost"], then=trains_on)
    assert returncode == 0, out[-3000:]
    bm = json.loads((run_dir / "benchmark_metrics.json").read_text())
    assert bm["stop_reason"] == "terminated", bm["stop_reason"]
    assert bm["restarts"]["restarts/rollout"] == 2 and bm["restarts"]["restarts/learner"] == 1, bm["restarts"]
    assert sum(w["env_steps"] for w in bm["workers"].values()) == bm["total_timesteps"] > 0


@pytest.mark.slow  # 34 s
def test_two_rival_policies_learn_on_ray_and_one_killed_learner_comes_back(tmp_path):
    """snake_arena_rivals_ppo on Ray: red and blue each have a learner actor. Once a periodic checkpoint exists,
    one learner is SIGKILLed: Ray restarts it, it resumes from that checkpoint, the run goes on to its
    confirmed target, the restart is counted once and as that policy's, and both policies eat far more than
    random snakes (about -0.8)."""
    from raylab.bench.learn import random_policy_return
    from tests.conftest import make_config

    run_dir = tmp_path / "run"
    cmd = [
        sys.executable, "-m", "raylab.train", "+experiment=snake_arena_rivals_ppo", "stop.seconds=240",
        "stop.mean_return=8", "eval.every_seconds=3", "eval.episodes=32", "eval.confirm_episodes=32",
        "eval.final_episodes=64", "checkpoint.every_seconds=2", "logger.report_every_seconds=1",
        "logger.console=false", "ray.num_cpus=4", f"hydra.run.dir={run_dir}",
    ]  # fmt: skip
    returncode, out = run_with_kills(cmd, run_dir, ["LearnerHost"])
    assert returncode == 0, out[-3000:]
    bm = json.loads((run_dir / "benchmark_metrics.json").read_text())
    assert bm["stop_reason"].startswith("eval return"), bm["stop_reason"]
    assert bm["restarts"]["restarts/learner"] == 1
    policies = bm["policies"]
    assert sorted(p["learner_restarts"] for p in policies.values()) == [0, 1]
    random = random_policy_return(make_config(tmp_path, "+experiment=snake_arena_ppo").env, 200)["return_mean"]
    assert random < 0.5
    for name, p in policies.items():  # 32 final episodes each: a standard error of about 1.3
        assert p["final_eval_return_mean"] >= 3 > random + 3, (name, p)
        assert p["version"] > 0 and p["env_steps"] == bm["total_timesteps"] // 2


KILL_INFERENCE = ["InferenceHost"]
KILL_ALL = ["InferenceHost", "LearnerHost", "InferenceHost"]


@pytest.mark.parametrize(
    ("experiment", "plan"),
    [
        ("cartpole_appo", KILL_INFERENCE),
        pytest.param("cartpole_appo", KILL_ALL, marks=pytest.mark.slow),
        pytest.param("cartpole_dqn", KILL_ALL, marks=pytest.mark.slow),
    ],
    ids=["cartpole_appo-inference", "cartpole_appo-three-kills", "cartpole_dqn-three-kills"],
)  # fmt: skip
def test_a_killed_inference_actor_comes_back_and_its_workers_carry_on(experiment, plan, tmp_path):
    """topology.inference=central: the inference actor SIGKILLed mid-run (the default tier); in the slow tier then
    the learner it takes its weights from, then the inference actor again. Ray restarts it; it loads the learner's
    newest weights before it answers; the rollout actors wait for it and send their observations again, so no
    chunk is lost to its deaths. Each death is counted once, whichever workers saw it, and the run trains on."""
    run_dir = tmp_path / "run"
    cmd = [
        sys.executable, "-m", "raylab.train", f"+experiment={experiment}", "topology.inference=central",
        "stop.seconds=400", "stop.env_steps=null", "stop.mean_return=null", "stop.train_return=null",
        "eval.every_seconds=null", "logger.report_every_seconds=1", "checkpoint.every_seconds=2",
        "logger.console=false", f"hydra.run.dir={run_dir}",
    ]  # fmt: skip

    def trains_on(proc: subprocess.Popen, row: int) -> None:
        last = rows(run_dir)[row]

        def trained(r: dict) -> bool:
            return r["updates"] > last["updates"] and r["env_steps"] > last["env_steps"] + 5000

        wait_for_row(proc, run_dir, "an update and 5000 steps after the last kill", trained, after=row)

    returncode, out = run_with_kills(cmd, run_dir, plan, then=trains_on)
    assert returncode == 0, out[-3000:]
    bm = json.loads((run_dir / "benchmark_metrics.json").read_text())
    assert bm["stop_reason"] == "terminated", bm["stop_reason"]
    restarts = bm["restarts"]
    expected = (plan.count("InferenceHost"), plan.count("LearnerHost"))
    assert (restarts["restarts/inference"], restarts["restarts/learner"]) == expected, restarts
    # none lost to the inference actor's deaths: only the batch the learner was training on (APPO: 2 chunks)
    lost_to_learner = 2 if experiment == "cartpole_appo" and "LearnerHost" in plan else 0
    assert restarts["restarts/rollout"] == 0 and restarts["restarts/lost_chunks"] <= lost_to_learner, restarts
    assert sum(w["env_steps"] for w in bm["workers"].values()) == bm["total_timesteps"] > 0

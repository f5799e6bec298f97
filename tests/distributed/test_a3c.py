"""a3c on a local Ray with the fake env: learning, per-worker wait accounting, sharding, worker restarts."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from pathlib import Path

import pytest
import ray

from raylab.train import run
from tests.conftest import FAKE, make_config, metrics_rows

pytestmark = [pytest.mark.distributed, pytest.mark.usefixtures("ray_session")]

A3C_FAKE = (
    *FAKE, "algo=a3c", "topology=a3c", "topology.num_workers=2", "topology.envs_per_worker=4",
    "topology.rollout_length=5", "topology.worker_cpus=1", "env.options.num_actions=4", "model.hidden_sizes=[32]",
    "algo.lr=0.003", "algo.gamma=0.5", "algo.cut_at_episode_end=false", "params.num_shards=2",
    "eval.every_seconds=1", "eval.episodes=8", "eval.final_episodes=16", "logger.report_every_seconds=0.5",
)  # fmt: skip


@pytest.fixture(scope="module")
def a3c_run(tmp_path_factory):
    cfg = make_config(
        tmp_path_factory.mktemp("a3c"), *A3C_FAKE, "stop.env_steps=1000000", "stop.seconds=240", "stop.mean_return=18"
    )
    return cfg, run(cfg)


def test_a3c_learns_the_fake_task(a3c_run):
    _, summary = a3c_run
    assert summary.stop_reason.startswith("eval return"), summary.stop_reason  # random play: 5 of 20
    assert summary.eval_return_mean is not None and summary.eval_return_mean >= 15


def test_every_push_is_applied_once_on_every_shard(a3c_run):
    _, summary = a3c_run
    server = summary.benchmark["a3c"]["server"]
    assert server["shards"] == 2 and server["pushes"] == [summary.updates] * 2 and server["version"] == summary.updates
    assert len(server["apply_s"]) == 2 and all(s > 0 for s in server["apply_s"])


def test_each_worker_reports_where_its_time_went(a3c_run):
    _, summary = a3c_run
    a3c = summary.benchmark["a3c"]
    assert set(a3c["workers"]) == {"0", "1"}
    for row in a3c["workers"].values():
        assert row["segments"] > 0 and row["seconds"] > 0
        for stage in ("env_s", "inference_s", "learn_s", "push_s", "wait_s"):
            assert 0 <= row[stage] <= row["seconds"] * 1.05, (stage, row)
    assert 0 <= a3c["wait_share"] < 1 and a3c["worker_restarts"] == 0
    for worker in summary.benchmark["workers"].values():
        assert worker["policy_version_last"] > worker["policy_version_first"] >= 0


def run_and_kill(cfg, kill_when, kill, what: str):
    """Run ``cfg`` in a thread; once ``kill_when()`` holds, ``kill()`` once. Returns the run's summary."""
    result: dict = {}

    def target():
        try:
            result["summary"] = run(cfg)
        except BaseException as err:
            result["error"] = err

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    killed = False
    deadline = time.monotonic() + 120
    while not killed and time.monotonic() < deadline and thread.is_alive():
        if kill_when():
            kill()
            killed = True
        time.sleep(0.05)
    thread.join(timeout=180)
    assert not thread.is_alive(), f"the run did not finish after {what} was killed"
    assert killed, f"{what} was never killed: the run ended or never got going"
    assert "error" not in result, result.get("error")
    return result["summary"]


def named_actor(suffix: str):
    (name,) = [n for n in ray.util.list_named_actors() if n.startswith("raylab-a3c-") and n.endswith(suffix)]
    return ray.get_actor(name)


@pytest.mark.slow  # 17 s; the default tier kills rollout actors (apex_dqn) and an inference actor (test_faults.py)
def test_a_killed_worker_is_restarted_and_the_run_completes(tmp_path):
    """A worker's process SIGKILLed mid-run comes back under the one restart policy (Ray restarts it with fresh
    seeds), pulls the server's weights and pushes on. Stops on time, not steps, so the kill always lands
    mid-run however fast the machine."""
    cfg = make_config(tmp_path, *A3C_FAKE, "stop.env_steps=null", "stop.seconds=8", "eval.every_seconds=null")
    metrics = Path(cfg.run_dir) / "metrics.jsonl"

    def pushing() -> bool:  # mid-run: the workers have been pushing for a while
        rows = [json.loads(line) for line in metrics.read_text().splitlines()] if metrics.exists() else []
        return bool(rows) and rows[-1]["env_steps"] > 0

    def kill_worker_1() -> None:
        os.kill(ray.get(named_actor("worker-1").pid.remote()), signal.SIGKILL)

    summary = run_and_kill(cfg, pushing, kill_worker_1, "worker 1")
    assert summary.benchmark["a3c"]["worker_restarts"] == 1
    assert summary.benchmark["restarts"]["restarts/rollout"] == 1
    assert summary.stop_reason.startswith("8 s >= stop.seconds")
    assert summary.benchmark["workers"]["1"]["env_steps"] > 0


@pytest.mark.slow  # 13 s
def test_a_crashed_parameter_server_shard_is_restored_from_the_checkpoint(tmp_path):
    """A shard's process SIGKILLed mid-run: Ray restarts it with its initial weights, the driver rolls the
    server back to the latest periodic checkpoint with versions moving on, and the run still learns the task."""
    cfg = make_config(
        tmp_path, *A3C_FAKE, "stop.env_steps=null", "stop.seconds=120", "stop.mean_return=18",
        "checkpoint.every_seconds=0.5",
    )  # fmt: skip
    checkpoints = Path(cfg.run_dir) / "checkpoints"

    def kill_shard_1() -> None:
        os.kill(ray.get(named_actor("shard-1").pid.remote()), signal.SIGKILL)

    summary = run_and_kill(cfg, lambda: any(checkpoints.glob("step_*.pt")), kill_shard_1, "shard 1")
    assert summary.benchmark["restarts"]["restarts/server"] == 1
    assert summary.benchmark["restarts"]["restarts/lost_chunks"] >= 1  # the windows that pushed to it
    assert summary.stop_reason.startswith("eval return"), summary.stop_reason  # it learned after the restore
    server = summary.benchmark["a3c"]["server"]
    assert server["version"] > 0 and server["shards"] == 2
    rows = metrics_rows(cfg.run_dir)
    assert rows[-1]["restarts/server"] == 1

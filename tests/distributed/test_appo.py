"""appo on a local Ray with the fake env: it learns while workers and learner run unsynchronized."""

from __future__ import annotations

import pytest

from raylab.train import run
from tests.conftest import FAKE, make_config, metrics_rows

pytestmark = [pytest.mark.distributed, pytest.mark.usefixtures("ray_session")]


FAKE_APPO = (
    *FAKE, "algo=appo", "topology=appo", "topology.num_workers=2", "topology.envs_per_worker=4",
    "topology.rollout_length=32", "env.options.num_actions=4", "model.hidden_sizes=[32]", "algo.gamma=0.5",
    "algo.entropy_coef=0.0", "algo.max_policy_lag=8", "learner.lr=0.003", "learner.max_grad_norm=0.5",
    "stop.env_steps=1000000", "stop.seconds=240", "stop.mean_return=18", "eval.every_seconds=1",
    "eval.episodes=8", "eval.final_episodes=16", "logger.report_every_seconds=0.5",
)  # fmt: skip


def test_appo_learns_the_fake_task_and_reports_drops(tmp_path):
    summary = run(make_config(tmp_path, *FAKE_APPO))
    rows = metrics_rows(summary.run_dir)
    assert all(row["queue/rollouts_in_flight"] + row["queue/parked_workers"] == 2 for row in rows)  # one each
    assert summary.stop_reason.startswith("eval return"), summary.stop_reason  # random play: 5 of 20
    assert summary.eval_return_mean is not None and summary.eval_return_mean >= 15
    reported = [row["learner/dropped_chunks"] for row in rows if "learner/dropped_chunks" in row]
    assert reported and reported == sorted(reported), "the drop counter only grows, row after row"
    # the report's count is the learner's own, and no more chunks were dropped than the workers made
    chunks = sum(worker["chunks"] for worker in summary.benchmark["workers"].values())
    assert summary.benchmark["appo"]["dropped_chunks"] == reported[-1] <= chunks
    lags = [row["learner/lag_mean"] for row in rows if "learner/lag_mean" in row]
    assert lags, "no metrics row reports learner/lag_mean"
    assert all(lag >= 0 for lag in lags), lags
    for worker in summary.benchmark["workers"].values():
        assert worker["chunks"] > 0 and worker["policy_version_last"] > 0


@pytest.mark.slow  # 10 s; topology.chunks_in_flight=2 is an option, off by default
def test_two_chunks_in_flight_per_worker_stay_queued_and_the_run_learns(tmp_path):
    """topology.chunks_in_flight=2: the driver keeps two sample calls on each of the 2 workers, so an actor
    starts its next chunk without waiting for the driver; V-trace absorbs the extra lag. Every row: each of
    the 4 call slots is in flight or parked (backpressure), none lost, none extra."""
    summary = run(make_config(tmp_path, *FAKE_APPO, "topology.chunks_in_flight=2"))
    assert summary.stop_reason.startswith("eval return"), summary.stop_reason
    rows = metrics_rows(summary.run_dir)
    slots = [(row["queue/rollouts_in_flight"], row["queue/parked_workers"]) for row in rows]
    assert rows and all(calls + parked == 4 for calls, parked in slots), slots
    for worker in summary.benchmark["workers"].values():
        assert worker["chunks"] > 0 and worker["policy_version_last"] > 0


@pytest.mark.slow  # 20-50 s; the choice itself is a unit test (tests/unit/test_central_inference.py)
def test_appo_learns_with_two_inference_actors_each_worker_on_one_of_its_machine(tmp_path):
    """topology.inference_actors=2: every worker is handed both inference actors, its own first, and sends to
    the first on its machine (here both are: its own); the fake task is learned as with one."""
    cfg = make_config(tmp_path, *FAKE_APPO, "topology.inference=central", "topology.inference_actors=2",
                      "topology.inference_cpus=0.5")  # fmt: skip
    summary = run(cfg)
    assert summary.stop_reason.startswith("eval return"), summary.stop_reason
    assert summary.eval_return_mean is not None and summary.eval_return_mean >= 15
    assert summary.benchmark["restarts"]["restarts/inference"] == 0

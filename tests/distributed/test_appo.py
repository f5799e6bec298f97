"""appo on a local Ray with the fake env: it learns while workers and learner run unsynchronized."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from raylab.train import run
from tests.conftest import FAKE, make_config

pytestmark = [pytest.mark.distributed, pytest.mark.usefixtures("ray_session")]


def test_appo_learns_the_fake_task_and_reports_drops(tmp_path):
    cfg = make_config(
        tmp_path, *FAKE, "algo=appo", "topology=appo", "topology.num_workers=2", "topology.envs_per_worker=4",
        "topology.rollout_length=32", "env.options.num_actions=4", "model.hidden_sizes=[32]", "algo.gamma=0.5",
        "algo.entropy_coef=0.0", "algo.max_policy_lag=8", "learner.lr=0.003", "learner.max_grad_norm=0.5",
        "stop.env_steps=1000000", "stop.seconds=240", "stop.mean_return=18", "eval.every_seconds=1",
        "eval.episodes=8", "eval.final_episodes=16", "logger.report_every_seconds=0.5",
    )  # fmt: skip
    summary = run(cfg)
    assert summary.stop_reason.startswith("eval return"), summary.stop_reason  # random play: 5 of 20
    assert summary.eval_return_mean is not None and summary.eval_return_mean >= 15
    rows = [json.loads(line) for line in (Path(summary.run_dir) / "metrics.jsonl").read_text().splitlines()]
    reported = [row["learner/dropped_chunks"] for row in rows if "learner/dropped_chunks" in row]
    assert reported and reported == sorted(reported), "the drop counter only grows, row after row"
    # the report's count is the learner's own, and no more chunks were dropped than the workers made
    chunks = sum(worker["chunks"] for worker in summary.benchmark["workers"].values())
    assert summary.benchmark["appo"]["dropped_chunks"] == reported[-1] <= chunks
    assert all(row["learner/lag_mean"] >= 0 for row in rows if "learner/lag_mean" in row)
    for worker in summary.benchmark["workers"].values():
        assert worker["chunks"] > 0 and worker["policy_version_last"] > 0

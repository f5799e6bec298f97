"""ppo on a local Ray with the fake env: it learns, every worker's chunk reaches the learner each round."""

from __future__ import annotations

import pytest

from raylab.train import run
from tests.conftest import FAKE, make_config

pytestmark = [pytest.mark.distributed, pytest.mark.usefixtures("ray_session")]


@pytest.fixture(scope="module")
def ppo_run(tmp_path_factory):
    cfg = make_config(
        tmp_path_factory.mktemp("ppo"), *FAKE, "algo=ppo", "topology=ppo", "topology.num_workers=2",
        "topology.envs_per_worker=4", "topology.rollout_length=32", "env.options.num_actions=4",
        "model.hidden_sizes=[32]", "algo.gamma=0.5", "algo.entropy_coef=0.0", "learner.lr=0.003",
        "learner.max_grad_norm=0.5", "stop.env_steps=300000", "stop.seconds=240", "stop.mean_return=18",
        "eval.every_seconds=1", "eval.episodes=8", "eval.final_episodes=16", "logger.report_every_seconds=0.5",
    )  # fmt: skip
    return cfg, run(cfg)


def test_ppo_learns_the_fake_task(ppo_run):
    _, summary = ppo_run
    assert summary.stop_reason.startswith("eval return"), summary.stop_reason  # random play: 5 of 20
    assert summary.eval_return_mean is not None and summary.eval_return_mean >= 15


def test_every_round_uses_every_worker_and_the_newest_weights(ppo_run):
    cfg, summary = ppo_run
    rounds = summary.benchmark["total_updates"] // (cfg.algo.epochs * cfg.algo.minibatches)
    workers = summary.benchmark["workers"]
    assert set(workers) == {"0", "1"}
    for worker in workers.values():
        assert worker["chunks"] == rounds  # synchronous: one chunk per worker per round
        assert worker["policy_version_last"] == rounds - 1  # the last round acted with the previous update
    assert summary.env_steps == rounds * 2 * 4 * 32

"""Gaussian policies learn: PPO in one process and APPO on Ray (the default tier), A3C on Ray (slow), on the fake
env's continuous task (the observation shows a target in [-1, 1]; reward 1 - |action - target| / 2 per step, 20
steps: an N(0, 1) policy earns about 12, reading the target close to 20). Pendulum and HalfCheetah: the slow tier and
benchmarks/."""

from __future__ import annotations

import pytest

from raylab.train import run
from tests.conftest import FAKE, make_config

TASK = (
    *FAKE, "+env.options.continuous=true", "env.options.num_actions=9", "model.hidden_sizes=[32]",
    "stop.mean_return=18.5", "stop.seconds=240", "eval.every_seconds=1", "eval.episodes=8", "eval.final_episodes=16",
)  # fmt: skip


def learned(summary) -> None:
    assert summary.stop_reason.startswith("eval return"), summary.stop_reason
    assert summary.eval_return_mean is not None and summary.eval_return_mean >= 18


def test_ppo_learns_a_continuous_action_in_one_process(tmp_path):
    cfg = make_config(
        tmp_path, *TASK, "algo=ppo", "topology=local", "topology.num_workers=1", "topology.envs_per_worker=8",
        "topology.rollout_length=32", "algo.entropy_coef=0.0", "algo.gamma=0.5", "learner.lr=0.003",
        "model.normalize_obs=true",
    )  # fmt: skip
    learned(run(cfg))


@pytest.mark.distributed
@pytest.mark.usefixtures("ray_session")
@pytest.mark.parametrize("algo", ["appo", pytest.param("a3c", marks=pytest.mark.slow)])  # 11-12 s each
def test_appo_and_a3c_learn_a_continuous_action_on_ray(tmp_path, algo):
    extra = ["algo.gamma=0.5", "learner.lr=0.003"] if algo == "appo" else ["algo.gamma=0.5", "algo.lr=0.003"]
    cfg = make_config(
        tmp_path, *TASK, f"algo={algo}", f"topology={algo}", "topology.num_workers=2", "topology.envs_per_worker=4",
        "topology.rollout_length=16", "algo.entropy_coef=0.0", *extra,
    )  # fmt: skip
    learned(run(cfg))

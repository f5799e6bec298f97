"""The multi-snake arena on Ray (apex_dqn): rollout actors step boards of snakes, the replay, its rate limiter
and the learner count agent slots, and the shared policy learns to eat."""

from __future__ import annotations

import pytest

from raylab.train import run
from tests.conftest import make_config

pytestmark = [pytest.mark.distributed, pytest.mark.usefixtures("ray_session")]


@pytest.mark.slow  # 14 s
def test_apex_dqn_snakes_learn_to_eat_on_ray(tmp_path):
    cfg = make_config(
        tmp_path, "+experiment=snake_arena_dqn", "logger.console=false", "topology.num_workers=2",
        "topology.envs_per_worker=2", "stop.seconds=300", "stop.mean_return=5", "eval.every_seconds=3",
        "eval.episodes=32", "eval.confirm_episodes=32", "eval.final_episodes=64",
    )  # fmt: skip
    summary = run(cfg)
    assert summary.stop_reason.startswith("eval return"), summary.stop_reason  # random snakes: about -0.8
    assert summary.eval_return_mean is not None and summary.eval_return_mean >= 2.5
    bm = summary.benchmark
    assert set(bm["workers"]) == {"0", "1"}
    assert bm["replay"]["inserted_by_worker"].keys() == {"0", "1"}
    assert bm["total_timesteps"] % (2 * 2 * 4) == 0  # workers x boards x snakes per step

"""R2D2 on the apex_dqn topology (a local Ray): every worker's sequences reach the replay, priorities come back
per sequence, the limiter counts trained steps, and it learns the fake task."""

import pytest

from raylab.train import run
from tests.conftest import FAKE, make_config

pytestmark = [pytest.mark.distributed, pytest.mark.usefixtures("ray_session")]


@pytest.mark.slow  # 11 s; R2D2 learns the fake image task in one process in the default tier (integration/)
def test_r2d2_on_apex_dqn(tmp_path):
    """Stopped on its target or an env-step budget, never on seconds: the limiter ties updates to env steps, so a
    busy machine slows the run down without changing what it learns by its end."""
    cfg = make_config(
        tmp_path, *FAKE, "topology=apex_dqn", "algo=dqn", "model.recurrent=lstm", "model.recurrent_size=32",
        "model.hidden_sizes=[32]", "replay=prioritized", "algo.sequence.burn_in=2", "algo.sequence.trace=6",
        "algo.sequence.period=4", "algo.gamma=0.5", "algo.epsilon.anneal_env_steps=1000",
        "algo.target_update_every=50", "algo.target_tau=1.0", "env.options.num_actions=4",
        "topology.num_workers=2", "topology.envs_per_worker=4", "topology.rollout_length=16",
        "replay.capacity=8000", "replay.min_size=256", "replay.samples_per_insert=4", "learner.batch_size=16",
        "learner.updates_per_call=4", "learner.publish_every=4", "eval.every_seconds=1", "eval.episodes=4",
        "eval.final_episodes=8", "stop.env_steps=40000", "stop.seconds=null", "stop.mean_return=17",
    )  # fmt: skip
    summary = run(cfg)
    replay = summary.benchmark["replay"]
    assert set(replay["inserted_by_worker"]) == {"0", "1"}
    assert replay["priority_updates"] >= 0.8 * replay["sampled"]
    assert summary.benchmark["eval_newest"]["return_mean"] >= 14  # random: 5 of 20
    # samples are trained steps (batch x trace): the learner stays near samples_per_insert x env steps
    assert summary.updates * 16 * 6 <= 4 * summary.env_steps + 2 * 4 * 16 * 6 * 4 + 4 * 8 * 16 * 2

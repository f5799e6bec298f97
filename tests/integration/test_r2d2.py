"""R2D2 end to end in one process: the fake image task with frame de-duplication learns, every sampled sequence
gets its priority back, and a run resumes with its sequence replay from the checkpoint's snapshot."""

from raylab.train import run
from tests.conftest import FAKE, make_config

R2D2 = (
    *FAKE, "env.options.obs_shape=[1,8,8]", "env.frame_stack=4", "env.options.num_actions=4", "topology=local",
    "algo=dqn", "model.recurrent=lstm", "model.recurrent_size=32", "model.hidden_sizes=[32]", "replay=prioritized",
    "algo.sequence.burn_in=2", "algo.sequence.trace=6", "algo.sequence.period=4", "algo.gamma=0.5",
    "algo.epsilon.anneal_env_steps=1000", "algo.target_update_every=50", "algo.target_tau=1.0",
    "topology.num_workers=2", "topology.envs_per_worker=4", "topology.rollout_length=8", "replay.capacity=4000",
    "replay.min_size=256", "replay.samples_per_insert=4", "learner.batch_size=16", "learner.updates_per_call=4",
    "learner.publish_every=4", "eval.every_env_steps=2000", "eval.episodes=4", "eval.final_episodes=8",
    "stop.seconds=60",
)  # fmt: skip


def test_r2d2_learns_the_fake_image_task_with_dedup_and_prioritized_sequences(tmp_path):
    summary = run(make_config(tmp_path, *R2D2, "stop.env_steps=8000"))
    assert summary.benchmark["eval_newest"]["return_mean"] >= 15  # random: 5 of 20
    replay = summary.benchmark["replay"]
    assert replay["priority_updates"] >= 0.9 * replay["sampled"]  # every sampled sequence got its priority
    assert 0 < replay["size"] <= 1000  # sequences: capacity 4000 env steps / period 4
    assert replay["frames"] > 0
    # with the limiter counting trained steps (batch x trace) against env steps: about samples_per_insert
    assert summary.updates * 16 * 6 <= 4 * summary.env_steps + 4 * 16 * 6 * 4


def test_r2d2_resumes_with_its_sequence_replay(tmp_path):
    first = run(make_config(tmp_path, *R2D2, "stop.env_steps=2000", "checkpoint.replay=true"))
    second = run(
        make_config(
            tmp_path / "ignored", *R2D2, "stop.env_steps=3000", "checkpoint.replay=true", f"resume={tmp_path}",
            "eval.final_episodes=0",
        )
    )  # fmt: skip
    assert second.env_steps >= 3000 and second.updates > first.updates
    assert second.benchmark["replay"]["size"] >= first.benchmark["replay"]["size"]

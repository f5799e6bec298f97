"""eval.video: each periodic evaluation and the final one record one more greedy episode, encoded where it was
played, into <run_dir>/videos/eval_<env steps>.mp4 and eval_final.mp4, each a playable file of one episode."""

from __future__ import annotations

import pytest

from raylab.train import run
from tests.conftest import FAKE, make_config

IMAGES = (
    *FAKE, "env.options.obs_shape=[1,8,8]", "env.frame_stack=4", "env.options.num_actions=4", "algo=dqn",
    "model.hidden_sizes=[32]", "replay.min_size=256", "learner.batch_size=16", "topology.num_workers=1",
    "topology.envs_per_worker=4", "topology.rollout_length=8", "eval.every_env_steps=1000", "eval.episodes=2",
    "eval.final_episodes=2", "stop.env_steps=3000", "stop.seconds=120", "stop.mean_return=null", "eval.video=true",
)  # fmt: skip
"""The fake image task (episodes of 20 steps); its observations are the frames (it cannot render)."""


def check_videos(run_dir, summary, evaluations: int) -> None:
    import imageio.v2 as imageio

    evals = summary.benchmark["evals"]
    periodic = sorted((run_dir / "videos").glob("eval_[0-9]*.mp4"))
    assert len(evals) >= evaluations and len(periodic) == len(evals)  # one per evaluation, named by its steps
    assert {p.name for p in periodic} == {f"eval_{e['env_steps']}.mp4" for e in evals}
    for path in [*periodic, run_dir / "videos" / "eval_final.mp4"]:
        reader = imageio.get_reader(path)  # decodes: the file plays
        assert reader.count_frames() == 21  # reset + 20 steps: one whole episode
        assert reader.get_data(0).shape == (8, 8, 3)


def test_a_local_run_records_each_evaluation_and_overwrite_replaces_them(tmp_path):
    summary = run(make_config(tmp_path, *IMAGES, "topology=local"))
    check_videos(tmp_path, summary, evaluations=2)
    again = run(make_config(tmp_path, *IMAGES, "topology=local", "overwrite=true", "stop.env_steps=2000"))
    check_videos(tmp_path, again, evaluations=1)  # the replaced run's films went with it: no eval_final-2.mp4


def test_a_film_that_fails_costs_the_video_not_the_run(tmp_path, monkeypatch, capfd):
    from raylab.rollout import video

    def broken(*args, **kwargs):
        raise RuntimeError("the encoder crashed")

    monkeypatch.setattr(video, "film_episode", broken)
    summary = run(make_config(tmp_path, *IMAGES, "topology=local", "stop.env_steps=1500"))
    assert summary.benchmark["evals"] and summary.benchmark["eval"]["episodes"] == 2  # scored all the same
    assert not (tmp_path / "videos").exists() or not any((tmp_path / "videos").iterdir())
    assert "eval.video could not film this evaluation (the encoder crashed)" in capfd.readouterr().err


def test_a_continuous_action_is_filmed_as_the_array_it_is(tmp_path):
    """Pendulum's one-value Box action: the recorder hands the env the array (an int() would play 0 or -1)."""
    import imageio.v2 as imageio

    summary = run(make_config(
        tmp_path, "+experiment=pendulum_ppo", "topology=local", "logger.console=false", "stop.env_steps=2000",
        "stop.mean_return=null", "eval.every_seconds=null", "eval.final_episodes=1", "eval.video=true",
    ))  # fmt: skip
    assert summary.env_steps >= 2000
    reader = imageio.get_reader(tmp_path / "videos" / "eval_final.mp4")
    assert reader.count_frames() == 201  # reset + Pendulum's 200 steps


@pytest.mark.distributed
@pytest.mark.usefixtures("ray_session")
def test_on_ray_the_evaluation_actor_sends_the_encoded_file(tmp_path):
    # the actors can outrun any step budget before the first evaluation: the run stops on that evaluation instead
    stop = ("stop.env_steps=null", "stop.mean_return=1", "eval.confirm_episodes=0")  # random: 5 of 20
    summary = run(make_config(tmp_path, *IMAGES, "topology=apex_dqn", *stop))
    assert summary.stop_reason.startswith("eval return"), summary.stop_reason
    check_videos(tmp_path, summary, evaluations=1)

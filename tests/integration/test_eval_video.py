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


def test_a_continuous_action_is_filmed_as_the_array_it_is(tmp_path, monkeypatch):
    """Pendulum's one-value Box action: the film hands the env the policy's array; an int() would play 0.7 as 0."""
    import numpy as np

    import raylab.envs.registry
    from raylab.config import EnvConfig
    from raylab.envs.registry import env_spaces
    from raylab.rollout.video import film_episode

    class Torque:  # the policy: always 0.7
        def set_weights(self, weights):
            pass

        def act(self, obs):
            return np.full((len(obs), 1), 0.7, np.float32)

    played = []
    make = raylab.envs.registry.make_render_env

    def recording_env(*args, **kwargs):
        env = make(*args, **kwargs)
        step = env.step
        env.step = lambda action: (played.append(action), step(action))[1]
        return env

    monkeypatch.setattr(raylab.envs.registry, "make_render_env", recording_env)
    cfg = make_config(tmp_path, "+experiment=pendulum_ppo", "topology=local")
    spaces = env_spaces(EnvConfig(id="Pendulum-v1"))
    frames, _, _ = film_episode(cfg, spaces, Torque(), 30, tmp_path / "p.mp4", "mp4")
    assert frames == 31 and len(played) == 30
    assert all(np.asarray(a).shape == (1,) and np.asarray(a)[0] == np.float32(0.7) for a in played), played[0]


@pytest.mark.distributed
@pytest.mark.usefixtures("ray_session")
def test_on_ray_the_evaluation_actor_sends_the_encoded_file(tmp_path):
    # the actors can outrun any step budget before the first evaluation: the run stops on that evaluation instead
    stop = ("stop.env_steps=null", "stop.mean_return=1", "eval.confirm_episodes=0")  # random: 5 of 20
    summary = run(make_config(tmp_path, *IMAGES, "topology=apex_dqn", *stop))
    assert summary.stop_reason.startswith("eval return"), summary.stop_reason
    check_videos(tmp_path, summary, evaluations=1)

"""logger=wandb with no network: a real short apex_dqn run writes an offline W&B run whose history (read
back locally from the run file) holds the dashboard's keys with env_steps as the x-axis; TensorBoard gets
the same scalars; a fake API key in the environment appears nowhere in what the run wrote."""

from pathlib import Path

import pytest

from raylab.metrics import wandb_offline
from raylab.metrics.loggers import wandb_mode
from raylab.train import run
from tests.conftest import make_config

FAKE_KEY = "local-fake0123456789abcdef0123456789abcdef"

DASHBOARD_KEYS = {
    "env_steps", "throughput/env_frames_per_s", "throughput/env_steps_per_s", "throughput/updates_per_s",
    "throughput/samples_per_s", "replay/size", "replay/samples_per_insert", "share/rollout/env",
    "share/rollout/inference", "share/rollout/weight_sync", "share/rollout/wait", "share/learner/update",
    "share/learner/wait", "share/replay/add", "share/replay/sample", "share/driver/wait", "wait/worker_0_share",
    "wait/worker_1_share", "wait/worker_max_share", "lag/min", "lag/mean", "lag/max", "rollout/env_restarts",
    "episode/return_mean", "episode/length_mean", "eval/return_mean", "learner/loss",
}  # fmt: skip
"""What the README's W&B workspace layout plots (Mario's episode/x_pos_mean: tests/integration/test_experiments.py)."""


@pytest.fixture(scope="module")
def wandb_run(tmp_path_factory, ray_session):
    run_dir = tmp_path_factory.mktemp("wandb")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("WANDB_MODE", "offline")
        mp.setenv("WANDB_SILENT", "true")
        mp.setenv("WANDB_API_KEY", FAKE_KEY)
        cfg = make_config(
            run_dir, "+experiment=cartpole_dqn", "logger=wandb", "logger.console=false", "logger.tensorboard=true",
            # it stops on the event the tests read: the first periodic evaluation (any CartPole return is >= 0),
            # 16 s in at the earliest (5+ history rows); stop.seconds only caps a run whose evaluation never comes.
            # Reports every 3 s. A chunk's or a learner call's seconds are spread over the span it covered
            # (raylab/driver/progress.py); before that, a call that outlasted its interval read 1.5 and 4.7 here
            "logger.report_every_seconds=3", "stop.seconds=300", "stop.mean_return=0", "eval.every_seconds=16",
            "eval.episodes=2", "eval.final_episodes=2", "logger.wandb.tags=[ci,offline]", "eval.video=true",
        )  # fmt: skip
        summary = run(cfg)
    # W&B's service may still be writing the run's last records when finish() returns: wait for its exit record
    wandb_offline.wait_for_exit(wandb_offline.find_run_file(run_dir))
    return run_dir, summary


@pytest.mark.distributed
def test_offline_history_has_the_dashboard_keys(wandb_run):
    run_dir, summary = wandb_run
    assert summary.stop_reason.startswith("eval return"), summary.stop_reason  # a periodic evaluation came
    path = wandb_offline.find_run_file(run_dir)
    history = wandb_offline.history(path)
    assert len(history) >= 5
    keys = {k for row in history for k in row}
    assert keys >= DASHBOARD_KEYS, DASHBOARD_KEYS - keys
    assert history[-1]["env_steps"] == summary.env_steps
    assert all(row["throughput/env_frames_per_s"] > 0 for row in history[:-1])
    shares = [(k, v) for row in history for k, v in row.items() if k.startswith(("share/", "wait/"))]
    outside = [(k, v) for k, v in shares if not 0.0 <= v <= 1.5]
    assert shares and not outside, outside  # shares of one interval (a report is dated by its arrival)
    config = wandb_offline.config(path)
    assert config["topology"]["name"] == "apex_dqn" and config["logger"]["wandb"]["tags"] == ["ci", "offline"]
    # every panel's x-axis is env_steps
    metrics = {r.metric.glob_name or r.metric.name: r.metric.step_metric
               for r in wandb_offline.records(path) if r.WhichOneof("record_type") == "metric"}  # fmt: skip
    assert metrics.get("*") == "env_steps"


@pytest.mark.distributed
def test_tensorboard_gets_the_same_scalars(wandb_run):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    run_dir, summary = wandb_run
    events = EventAccumulator(str(Path(run_dir, "tensorboard")))
    events.Reload()
    tags = set(events.Tags()["scalars"])
    assert {"throughput/env_frames_per_s", "share/rollout/env", "episode/return_mean"} <= tags
    assert events.Scalars("throughput/env_frames_per_s")[-1].step == summary.env_steps


@pytest.mark.distributed
def test_no_api_key_in_anything_the_run_wrote(wandb_run):
    run_dir, _ = wandb_run
    files = [p for p in Path(run_dir).rglob("*") if p.is_file()]
    assert len(files) >= 6  # config, metrics, benchmark, checkpoint, W&B run file, TensorBoard events
    leaked = [str(p) for p in files if FAKE_KEY.encode() in p.read_bytes()]
    assert not leaked


def test_wandb_mode_is_offline_without_a_key(monkeypatch, tmp_path):
    monkeypatch.delenv("WANDB_MODE", raising=False)
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.netrc
    assert wandb_mode() == "offline"
    monkeypatch.setenv("WANDB_API_KEY", "x" * 40)
    assert wandb_mode() == "online"
    monkeypatch.setenv("WANDB_MODE", "disabled")
    assert wandb_mode() == "disabled"


def test_tensorboard_without_its_package_is_one_line(monkeypatch, tmp_path):
    import importlib.util

    from raylab.errors import ConfigError
    from raylab.metrics.loggers import check_logger_config

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "tensorboard" else real(name, *a))
    cfg = make_config(tmp_path, "env=fake", "logger.tensorboard=true")
    with pytest.raises(ConfigError, match=r"raylab-actor-learner\[tensorboard\]"):
        check_logger_config(cfg.logger)


@pytest.mark.distributed
def test_each_evaluations_video_reaches_wandb(wandb_run):
    """eval.video: the recorded episodes go to W&B's eval/video panel as well as to videos/."""
    run_dir, _ = wandb_run
    history = wandb_offline.history(wandb_offline.find_run_file(run_dir))
    clips = {  # W&B keeps a logged video as <key>/_type, <key>/path, ...
        key[: -len("/_type")]: row[key[: -len("_type")] + "path"]
        for row in history for key, value in row.items() if key.endswith("/_type") and value == "video-file"
    }  # fmt: skip
    assert set(clips) >= {"eval/video", "eval/video_final"}, clips  # each periodic evaluation's, the final one's
    assert all(path.endswith(".mp4") for path in clips.values())
    assert (run_dir / "videos" / "eval_final.mp4").exists() and list((run_dir / "videos").glob("eval_[0-9]*.mp4"))

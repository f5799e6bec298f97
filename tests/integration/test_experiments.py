"""Every image experiment starts, runs and writes its outputs on its own topology (short, on the shared Ray)."""

import json
from pathlib import Path

import pytest

from raylab.train import run
from tests.conftest import make_config, metrics_rows

pytestmark = [pytest.mark.distributed, pytest.mark.usefixtures("ray_session")]

SHORT = (
    "logger.console=false", "eval.every_seconds=null", "eval.episodes=1", "eval.final_episodes=2",
    "stop.seconds=120", "topology.rollout_length=16", "learner.updates_per_call=4", "learner.publish_every=4",
)  # fmt: skip


SLOW = pytest.mark.slow
"""10-25 s each: the default tier keeps Snake (DQN) and Pong with PPO (the Nature CNN on EnvPool's frames);
Mario's DQN, CoinRun's PPO (the IMPALA CNN) and DQN, Pong's DQN, CoinRun's and Breakout's APPO run in the slow
tier (APPO's path runs on the fake task in tests/distributed/test_appo.py; Mario's env in tests/envs)."""


@pytest.mark.parametrize(
    ("experiment", "overrides", "extras"),
    [
        pytest.param("mario_dqn", ("env.max_episode_steps=150", "replay.capacity=4000", "replay.min_size=300",
                     "stop.env_steps=1500", "stop.eval_extras=null"), {"x_pos", "flag_get"}, marks=SLOW),
        pytest.param("coinrun_dqn", ("env.max_episode_steps=100", "topology.envs_per_worker=4",
                     "replay.capacity=4000", "replay.min_size=300", "stop.env_steps=2000"), set(), marks=SLOW),
        ("snake_dqn", ("replay.min_size=300", "stop.env_steps=4000"), {"snake_length", "score"}),
        pytest.param("coinrun_ppo", ("env.max_episode_steps=100", "topology.envs_per_worker=4",
                     "algo.minibatches=2", "stop.env_steps=2000"), set(), marks=SLOW),
        pytest.param("coinrun_appo", ("env.max_episode_steps=100", "topology.envs_per_worker=4",
                     "algo.minibatches=2", "stop.env_steps=2000"), set(), marks=SLOW),
        ("pong_ppo", ("env.max_episode_steps=100", "topology.envs_per_worker=4", "algo.minibatches=2",
                      "algo.epochs=1", "stop.env_steps=1000", "stop.mean_return=null"), set()),
        pytest.param("pong_apex_dqn", ("env.max_episode_steps=100", "topology.envs_per_worker=4",
                     "replay.capacity=4000", "replay.min_size=300", "stop.env_steps=2000", "stop.mean_return=null"),
                     set(), marks=SLOW),
        pytest.param("breakout_appo", ("env.max_episode_steps=100", "topology.envs_per_worker=4",
                     "algo.minibatches=2", "stop.env_steps=2000"), set(), marks=SLOW),
    ],
)  # fmt: skip
def test_experiment_runs_and_writes_outputs(experiment, overrides, extras, tmp_path):
    cfg = make_config(tmp_path, f"+experiment={experiment}", *SHORT, *overrides)
    summary = run(cfg)
    out = Path(summary.run_dir)
    bm = json.loads((out / "benchmark_metrics.json").read_text())
    assert bm["total_timesteps"] >= cfg.stop.env_steps and bm["total_updates"] > 0
    assert bm["eval"]["episodes"] == 2 and bm["config"]["env"]["family"] == cfg.env.family
    assert set(bm["episode_extras"]) == extras
    assert set(bm["eval"]["extras_mean"]) == extras  # the greedy episodes' too (Mario's flag rate)
    rows = metrics_rows(out)
    assert rows and rows[-1]["env_steps"] == summary.env_steps
    keys = {k for row in rows for k in row}
    assert {"share/rollout/env", "share/rollout/inference", "share/learner/update", "wait/worker_0_share"} <= keys
    assert {f"episode/{extra}_mean" for extra in extras} <= keys  # Mario's x_pos reaches the dashboard
    assert (out / "checkpoints" / "final.pt").exists() and (out / "config.yaml").exists()

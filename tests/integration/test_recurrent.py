"""Recurrent policies end to end: every memory experiment starts on its own topology (PPO, APPO and A3C over Ray,
with a state per slot travelling in each chunk), writes its outputs, and its run dir evaluates and videos with
``raylab.evaluate``; the POPGym and MiniGrid ones run in the slow tier."""

import json
from pathlib import Path

import pytest

from raylab.train import run
from tests.conftest import make_config

pytestmark = [pytest.mark.distributed, pytest.mark.usefixtures("ray_session")]

SHORT = (
    "logger.console=false", "eval.every_seconds=null", "eval.episodes=1", "eval.final_episodes=4",
    "stop.seconds=120", "stop.mean_return=null", "checkpoint.every_seconds=null",
)  # fmt: skip


@pytest.mark.parametrize(
    ("experiment", "overrides"),
    [
        ("stateless_cartpole_ppo_lstm", ("topology.rollout_length=50", "stop.env_steps=1600", "algo.epochs=1")),
        ("stateless_cartpole_appo_lstm", ("stop.env_steps=4000",)),
        ("stateless_cartpole_a3c_gru", ("stop.env_steps=1500",)),
        pytest.param(
            "popgym_repeat_previous_ppo_gru", ("stop.env_steps=3000", "topology.rollout_length=64", "algo.bptt=32"),
            marks=pytest.mark.slow,
        ),
        pytest.param("minigrid_memory_ppo_lstm", ("stop.env_steps=2000",), marks=pytest.mark.slow),
    ],
)  # fmt: skip
def test_memory_experiment_runs_and_its_run_evaluates(experiment, overrides, tmp_path):
    from raylab.evaluate import EvaluateArgs, evaluate
    from raylab.learner.checkpoint import load_checkpoint

    cfg = make_config(tmp_path, f"+experiment={experiment}", *SHORT, *overrides)
    assert cfg.model.recurrent != "none"
    summary = run(cfg)
    out = Path(summary.run_dir)
    bm = json.loads((out / "benchmark_metrics.json").read_text())
    assert bm["total_timesteps"] >= cfg.stop.env_steps and bm["total_updates"] > 0
    assert bm["eval"]["episodes"] == 4
    params = load_checkpoint(out / "checkpoints" / "final.pt")["policy"]["params"]
    assert any(key.startswith("core.") for key in params), sorted(params)  # the recurrent core's weights
    scored = evaluate(EvaluateArgs(run_dir=str(out), episodes=3))
    assert scored["episodes"] == 3

"""Multi-agent envs end to end on the local topology, every algorithm: one policy acts for every agent slot."""

import json
from pathlib import Path

import pytest

from raylab.train import run
from tests.conftest import make_config

ARENA = (
    "env=snake_arena", "env.options.num_snakes=3", "env.options.dim=10", "logger.console=false", "topology=local",
    "topology.num_workers=2", "topology.envs_per_worker=2", "model.hidden_sizes=[32]", "stop.seconds=120",
    "stop.mean_return=null", "eval.every_seconds=null", "eval.final_episodes=6",
)  # fmt: skip
ALGOS = {
    "dqn": ("algo=dqn", "stop.env_steps=3000", "replay.min_size=256", "learner.batch_size=32"),
    "ppo": ("algo=ppo", "stop.env_steps=3000", "topology.rollout_length=32"),
    "appo": ("algo=appo", "stop.env_steps=3000", "topology.rollout_length=32"),
    "a3c": ("algo=a3c", "stop.env_steps=3000", "topology.rollout_length=8"),
}


@pytest.mark.parametrize("algo", sorted(ALGOS))
def test_every_algorithm_runs_the_arena_with_one_shared_policy(algo, tmp_path):
    summary = run(make_config(tmp_path, *ARENA, *ALGOS[algo]))
    assert summary.env_steps >= 3000 and summary.env_steps % 6 == 0  # 2 boards x 3 snakes per step and worker
    bm = json.loads((Path(summary.run_dir) / "benchmark_metrics.json").read_text())
    assert bm["eval"]["episodes"] == 6 and summary.eval_return_mean is not None
    assert "score" in bm["episode_extras"]  # each snake's life is an episode, with its foods
    rows = [json.loads(line) for line in (Path(summary.run_dir) / "metrics.jsonl").read_text().splitlines()]
    assert rows[-1]["episodes"] > 0


def test_a_pettingzoo_env_runs_with_parameter_sharing(tmp_path):
    summary = run(make_config(
        tmp_path, "env=pettingzoo", "env.id=mpe2.simple_spread_v3", "+env.options.max_cycles=10", "algo=ppo",
        "topology=local", "topology.envs_per_worker=2", "topology.rollout_length=20", "stop.env_steps=2000",
        "stop.mean_return=null", "eval.every_seconds=null", "eval.final_episodes=6", "logger.console=false",
    ))  # fmt: skip
    assert summary.env_steps >= 2000 and summary.env_steps % 6 == 0  # 3 agents x 2 envs
    assert summary.eval_return_mean is not None and summary.eval_return_mean < 0  # MPE rewards are negative distances

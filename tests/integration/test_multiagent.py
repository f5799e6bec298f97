"""Multi-agent envs end to end on the local topology, every algorithm: one policy acts for every agent slot."""

import json
from pathlib import Path

import pytest

from raylab.errors import ConfigError
from raylab.train import run
from tests.conftest import make_config, metrics_rows

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
    rows = metrics_rows(summary.run_dir)
    assert rows[-1]["episodes"] > 0


def test_a_pettingzoo_env_runs_with_parameter_sharing(tmp_path):
    summary = run(make_config(
        tmp_path, "env=pettingzoo", "env.id=mpe2.simple_spread_v3", "+env.options.max_cycles=10", "algo=ppo",
        "topology=local", "topology.envs_per_worker=2", "topology.rollout_length=20", "stop.env_steps=2000",
        "stop.mean_return=null", "eval.every_seconds=null", "eval.final_episodes=6", "logger.console=false",
    ))  # fmt: skip
    assert summary.env_steps >= 2000 and summary.env_steps % 6 == 0  # 3 agents x 2 envs
    assert summary.eval_return_mean is not None and summary.eval_return_mean < 0  # MPE rewards are negative distances


RIVALS = (
    "+experiment=snake_arena_rivals_ppo", "env.options.dim=10", "logger.console=false", "topology=local",
    "topology.num_workers=2", "topology.envs_per_worker=2", "topology.rollout_length=32", "model.hidden_sizes=[32]",
    "stop.seconds=120", "stop.env_steps=4096", "eval.every_seconds=null", "eval.final_episodes=8",
    "checkpoint.every_seconds=null", "algo.minibatches=2",
)  # fmt: skip


@pytest.mark.parametrize("algo", ["ppo", "appo"])
def test_two_policies_train_side_by_side_each_with_its_own_learner_metrics_and_checkpoint(algo, tmp_path):
    from raylab.evaluate import EvaluateArgs, evaluate
    from raylab.learner.checkpoint import load_checkpoint

    extra = () if algo == "ppo" else ("algo=appo", "~algo.gae_lambda")
    summary = run(make_config(tmp_path, *RIVALS, *extra))
    run_dir = Path(summary.run_dir)
    bm = json.loads((run_dir / "benchmark_metrics.json").read_text())
    red, blue = bm["policies"]["red"], bm["policies"]["blue"]
    # 2 workers x 2 boards x 4 snakes, half of them each policy's: every step counted once, by its policy
    assert red["env_steps"] == blue["env_steps"] == summary.env_steps // 2 and summary.env_steps >= 4096
    assert red["updates"] > 0 and blue["updates"] > 0 and red["updates"] + blue["updates"] == summary.updates
    assert red["version"] > 0 and blue["version"] > 0 and red["episodes"] > 0 and blue["episodes"] > 0
    assert red["learner_restarts"] == blue["learner_restarts"] == 0
    assert red["final_eval_return_mean"] is not None and blue["final_eval_return_mean"] is not None
    rows = metrics_rows(run_dir)
    for name in ("red", "blue"):
        assert rows[-1][f"policy/{name}/env_steps"] == summary.env_steps // 2
        assert f"policy/{name}/learner/loss" in rows[-1] and f"policy/{name}/lag/mean" in rows[-1]
    final = load_checkpoint(run_dir / "checkpoints" / "final.pt")
    assert set(final["policy"]["policies"]) == set(final["learner"]["policies"]) == {"red", "blue"}
    assert final["counters"]["policies"]["blue"]["env_steps"] == summary.env_steps // 2
    # the red and blue networks differ (trained apart from different seeds)
    red_params, blue_params = (final["policy"]["policies"][n]["params"] for n in ("red", "blue"))
    assert any((red_params[k] != blue_params[k]).any() for k in red_params)
    scored = evaluate(EvaluateArgs(run_dir=str(run_dir), episodes=8))
    assert set(scored["policies"]) == {"red", "blue"}
    assert sum(p["episodes"] for p in scored["policies"].values()) == scored["episodes"] == 8
    # blue acting uniformly at random instead of with its weights: red's score against a random opponent
    versus = evaluate(EvaluateArgs(run_dir=str(run_dir), episodes=8, against_random="blue"))
    assert versus["against_random"] == ["blue"] and set(versus["policies"]) == {"red", "blue"}
    with pytest.raises(ConfigError, match="against_random=green: no policy green; the run's are red, blue"):
        evaluate(EvaluateArgs(run_dir=str(run_dir), episodes=8, against_random="green"))


def test_a_resumed_run_of_two_policies_continues_both(tmp_path):
    first = run(make_config(tmp_path, *RIVALS))
    before = json.loads((Path(first.run_dir) / "benchmark_metrics.json").read_text())["policies"]
    second = run(make_config(tmp_path, *RIVALS, "stop.env_steps=8192", f"resume={first.run_dir}"))
    after = json.loads((Path(second.run_dir) / "benchmark_metrics.json").read_text())["policies"]
    for name in ("red", "blue"):
        assert after[name]["version"] > before[name]["version"] > 0
        assert after[name]["env_steps"] == second.env_steps // 2 and second.env_steps >= 8192


def test_two_dqn_policies_each_fill_their_own_replay_and_train_their_own_learner(tmp_path):
    """Ape-X DQN of red (snake_0) and blue (snakes 1 and 2): each policy's part of every chunk goes to its own
    replay shards, each learner samples only its own, each rate limiter counts its own slots."""
    summary = run(make_config(
        tmp_path, *ARENA, *ALGOS["dqn"], "replay.num_shards=2", "+policies.red={}",
        "+policies.blue={learner: {lr: 0.001}}", "+policy_mapping={snake_0: red, snake_1: blue, snake_2: blue}",
    ))  # fmt: skip
    bm = json.loads((Path(summary.run_dir) / "benchmark_metrics.json").read_text())
    red, blue = bm["policies"]["red"], bm["policies"]["blue"]
    # 2 workers x 2 boards: 4 red slots and 8 blue slots per step
    assert blue["env_steps"] == 2 * red["env_steps"] and red["env_steps"] + blue["env_steps"] == summary.env_steps
    assert red["updates"] > 0 and blue["updates"] > 0 and red["version"] > 0 and blue["version"] > 0
    assert red["final_eval_return_mean"] is not None and blue["final_eval_return_mean"] is not None
    # 2 shards per policy, each written by one worker: 4 replay actors, every transition inserted once
    assert bm["replay"]["inserted"] <= summary.env_steps and bm["replay"]["inserted"] > 0
    rows = metrics_rows(summary.run_dir)
    assert "policy/red/learner/loss" in rows[-1] and "policy/blue/learner/loss" in rows[-1]


def test_a_video_of_a_multi_agent_run_is_refused_before_evaluating(tmp_path):
    from raylab.evaluate import EvaluateArgs, evaluate

    summary = run(make_config(tmp_path, *RIVALS, "stop.env_steps=512", "eval.final_episodes=0"))
    with pytest.raises(ConfigError, match="videos of it are not made yet"):
        evaluate(EvaluateArgs(run_dir=summary.run_dir, episodes=4, video=True))
    assert not (Path(summary.run_dir) / "eval").exists()  # nothing written


TEAMS = (
    "logger.console=false", "topology=local", "topology.num_workers=1", "topology.envs_per_worker=2",
    "topology.rollout_length=25", "model.hidden_sizes=[32]", "algo.minibatches=2", "stop.seconds=120",
    "eval.every_seconds=null", "eval.final_episodes=8", "checkpoint.every_seconds=null",
)  # fmt: skip
"""Two rounds of a two-team mpe2 env: 1 worker x 2 envs x 25 steps of every agent each."""


def _first_layer(params: dict) -> tuple[int, ...]:
    return tuple(params["encoder.net.1.weight"].shape)


def test_a_discrete_and_a_continuous_policy_train_in_one_run_each_in_its_own_spaces(tmp_path):
    """simple_tag_mixed_ppo: Gaussian predators (16 floats, Box(5)) and a categorical prey (14 floats, Discrete(5))
    in one env, nothing padded; each learns, checkpoints and is scored in its own spaces."""
    from raylab.evaluate import EvaluateArgs, evaluate
    from raylab.learner.checkpoint import load_checkpoint

    summary = run(make_config(tmp_path, "+experiment=simple_tag_mixed_ppo", *TEAMS, "stop.env_steps=400"))
    run_dir = Path(summary.run_dir)
    bm = json.loads((run_dir / "benchmark_metrics.json").read_text())
    predators, prey = bm["policies"]["predators"], bm["policies"]["prey"]
    assert summary.env_steps == 400 and predators["env_steps"] == 3 * prey["env_steps"] == 300  # 2 rounds
    assert predators["updates"] > 0 and prey["updates"] > 0 and predators["version"] == prey["version"] == 2
    assert predators["episodes"] == 12 and prey["episodes"] == 4  # 25-step episodes: 2 rounds x 2 envs x agents
    final = load_checkpoint(run_dir / "checkpoints" / "final.pt")["policy"]["policies"]
    assert _first_layer(final["predators"]["params"]) == (32, 16) and final["predators"]["params"]["log_std"].shape == (
        5,
    )
    assert _first_layer(final["prey"]["params"]) == (32, 14) and "log_std" not in final["prey"]["params"]
    assert tuple(final["prey"]["params"]["policy.weight"].shape) == (5, 32)  # 5 logits
    scored = evaluate(EvaluateArgs(run_dir=str(run_dir), episodes=8))
    assert scored["policies"]["predators"]["episodes"] + scored["policies"]["prey"]["episodes"] == 8
    for team in ("predators", "prey"):  # a uniformly random Box team, then a uniformly random Discrete one
        versus = evaluate(EvaluateArgs(run_dir=str(run_dir), episodes=8, against_random=team))
        assert versus["against_random"] == [team] and versus["episodes"] == 8


def test_two_teams_of_different_observation_sizes_train_without_padding(tmp_path):
    """simple_adversary_ppo with env.pad_observations=false: the adversary's policy sees its 8 floats, the agents'
    their 10."""
    from raylab.learner.checkpoint import load_checkpoint

    summary = run(make_config(
        tmp_path, "+experiment=simple_adversary_ppo", "env.pad_observations=false", *TEAMS, "stop.env_steps=300",
    ))  # fmt: skip
    bm = json.loads((Path(summary.run_dir) / "benchmark_metrics.json").read_text())
    assert bm["policies"]["agents"]["env_steps"] == 2 * bm["policies"]["adversary"]["env_steps"] == 200
    assert bm["policies"]["adversary"]["updates"] > 0 and bm["policies"]["agents"]["updates"] > 0
    final = load_checkpoint(Path(summary.run_dir) / "checkpoints" / "final.pt")["policy"]["policies"]
    assert _first_layer(final["adversary"]["params"]) == (32, 8) and _first_layer(final["agents"]["params"]) == (32, 10)

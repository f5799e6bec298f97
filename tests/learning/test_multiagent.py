"""Multi-agent learning in the default tier: one shared policy for every agent, against a uniformly random
policy measured here on the same env. Each run stops on a confirmed greedy evaluation and its independent
final evaluation must hold most of it, so the test waits for the learning it checks, not for a step count."""

import numpy as np

from raylab.config import EnvConfig
from raylab.envs.registry import make_vector_env
from raylab.train import run
from tests.conftest import make_config


def random_return(cfg: EnvConfig, episodes: int) -> float:
    """Mean episode return of uniformly random actions (every agent slot), over ``episodes`` episodes."""
    venv = make_vector_env(cfg, 4, seed=123)
    venv.reset()
    rng = np.random.default_rng(0)
    n = int(venv.single_action_space.n)
    returns: list[float] = []
    while len(returns) < episodes:
        returns += [e["return"] for _, e in venv.step(rng.integers(0, n, venv.num_envs)).episodes]
    return float(np.mean(returns))


def test_snake_arena_ppo_snakes_eat_far_more_than_random_ones(tmp_path):
    """4 snakes per board, one PPO policy: the random policy dies with ~0.2 foods (return ~ -0.8)."""
    cfg = make_config(
        tmp_path, "+experiment=snake_arena_ppo", "topology=local", "logger.console=false", "stop.seconds=300",
        "stop.mean_return=5", "eval.every_seconds=2", "eval.episodes=32", "eval.confirm_episodes=32",
        "eval.final_episodes=64",
    )  # fmt: skip
    summary = run(cfg)
    random = random_return(cfg.env, 200)
    assert random < 0.5
    assert summary.stop_reason.startswith("eval return"), summary.stop_reason
    assert summary.eval_return_mean is not None and summary.eval_return_mean >= 4 > random + 3


def test_pettingzoo_simple_spread_shared_policy_beats_random(tmp_path):
    """mpe2's cooperative simple_spread (3 agents, 25 steps): a random policy earns about -27 per agent."""
    cfg = make_config(
        tmp_path, "env=pettingzoo", "env.id=mpe2.simple_spread_v3", "algo=ppo", "model.hidden_sizes=[64,64]",
        "topology=local", "topology.envs_per_worker=4", "topology.rollout_length=64", "learner.lr=0.001",
        "logger.console=false", "stop.seconds=400", "stop.env_steps=null", "stop.mean_return=-22",
        "eval.every_seconds=3", "eval.episodes=30", "eval.confirm_episodes=60", "eval.final_episodes=90",
    )  # fmt: skip
    summary = run(cfg)
    random = random_return(cfg.env, 300)
    assert random < -25
    assert summary.stop_reason.startswith("eval return"), summary.stop_reason
    assert summary.eval_return_mean is not None and summary.eval_return_mean >= -23.5 > random + 1.5

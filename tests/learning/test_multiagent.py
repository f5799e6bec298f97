"""Multi-agent learning (the snake arena in the default tier, simple_spread in the slow one): one shared policy
for every agent, against a uniformly random policy measured here on the same env. Each run stops on a confirmed
greedy evaluation and its independent final evaluation must hold most of it, so the test waits for the learning
it checks, not for a step count. The margin between the stop and the check is about 3 standard errors of the
difference of two evaluations: measured over 3 seeds each, arena returns varied by 6.6-8.0 per episode at means
of 8-12 (64 episodes, a standard error of about 1), simple_spread's by 4.5-6.0 (90 episodes, about 0.6)."""

import pytest

from raylab.bench.learn import random_policy_return
from raylab.config import EnvConfig
from raylab.train import run
from tests.conftest import make_config


def random_return(cfg: EnvConfig, episodes: int) -> float:
    """Mean episode return of uniformly random actions (every agent slot), over ``episodes`` episodes."""
    return random_policy_return(cfg, episodes)["return_mean"]


def test_snake_arena_ppo_snakes_eat_far_more_than_random_ones(tmp_path):
    """4 snakes per board, one PPO policy: the random policy dies with ~0.2 foods (return ~ -0.8)."""
    cfg = make_config(
        tmp_path, "+experiment=snake_arena_ppo", "topology=local", "logger.console=false", "stop.seconds=300",
        "stop.mean_return=8", "eval.every_seconds=2", "eval.episodes=32", "eval.confirm_episodes=32",
        "eval.final_episodes=64",
    )  # fmt: skip
    summary = run(cfg)
    random = random_return(cfg.env, 200)
    assert random < 0.5
    assert summary.stop_reason.startswith("eval return"), summary.stop_reason
    assert summary.eval_return_mean is not None and summary.eval_return_mean >= 4 > random + 4


@pytest.mark.slow  # 20 s; the snake arena's learning test stays
def test_pettingzoo_simple_spread_shared_policy_beats_random(tmp_path):
    """mpe2's cooperative simple_spread (3 agents, 25 steps): a random policy earns about -27 per agent."""
    cfg = make_config(
        tmp_path, "env=pettingzoo", "env.id=mpe2.simple_spread_v3", "algo=ppo", "model.hidden_sizes=[64,64]",
        "topology=local", "topology.envs_per_worker=4", "topology.rollout_length=64", "learner.lr=0.001",
        "logger.console=false", "stop.seconds=400", "stop.env_steps=null", "stop.mean_return=-21",
        "eval.every_seconds=3", "eval.episodes=30", "eval.confirm_episodes=60", "eval.final_episodes=90",
    )  # fmt: skip
    summary = run(cfg)
    random = random_return(cfg.env, 300)
    assert random < -25
    assert summary.stop_reason.startswith("eval return"), summary.stop_reason
    assert summary.eval_return_mean is not None and summary.eval_return_mean >= -23.5 > random + 1.5

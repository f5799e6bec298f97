"""PPO and APPO as the builders see them (raylab.algos.spec): a categorical policy acts and evaluates, the
Learner optimizes the PPO or APPO objective."""

from __future__ import annotations

from raylab.algos import actor_critic
from raylab.algos.ppo.appo import APPO
from raylab.algos.ppo.objective import PPO
from raylab.algos.spec import Algorithm
from raylab.config import APPOConfig, PPOConfig, RunConfig
from raylab.config.algorithms import ALGORITHMS
from raylab.models.factory import build_actor_critic
from raylab.types import EnvSpaces, Policy


def rollout_policy(cfg: RunConfig, spaces: EnvSpaces, worker_id: int, env_steps: int) -> Policy:
    return actor_critic.rollout_policy(cfg, spaces, worker_id)


def ppo_objective(cfg: RunConfig, spaces: EnvSpaces) -> PPO:
    assert isinstance(cfg.algo, PPOConfig), f"algo={cfg.algo.name} reached the PPO builder"
    return PPO(build_actor_critic(cfg.model, spaces), cfg.algo, seed=cfg.seed)


def appo_objective(cfg: RunConfig, spaces: EnvSpaces) -> APPO:
    assert isinstance(cfg.algo, APPOConfig), f"algo={cfg.algo.name} reached the APPO builder"
    return APPO(build_actor_critic(cfg.model, spaces), cfg.algo, seed=cfg.seed)


PPO_ALGORITHM = Algorithm(ALGORITHMS["ppo"], rollout_policy, actor_critic.eval_policy, ppo_objective)
APPO_ALGORITHM = Algorithm(ALGORITHMS["appo"], rollout_policy, actor_critic.eval_policy, appo_objective)

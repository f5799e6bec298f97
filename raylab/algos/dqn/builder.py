"""DQN as the builders see it (raylab.algos.spec): epsilon-greedy workers on the Ape-X epsilon ladder,
evaluation with algo.epsilon.eval, the DQN (or QR-DQN) objective; with model.recurrent, R2D2's."""

from __future__ import annotations

import numpy as np

from raylab.algos.dqn.objective import DQN
from raylab.algos.dqn.policy import EpsilonGreedyPolicy, EpsilonSchedule, apex_epsilons
from raylab.algos.dqn.r2d2 import R2D2
from raylab.algos.spec import Algorithm
from raylab.config import DQNConfig, RunConfig
from raylab.config.algorithms import ALGORITHMS
from raylab.models.factory import QNetwork, RecurrentQNetwork, build_q_network
from raylab.types import EnvSpaces, Policy


def dqn_config(cfg: RunConfig) -> DQNConfig:
    """``cfg.algo``, which must be DQN's section (a builder of DQN's parts was handed another algorithm)."""
    assert isinstance(cfg.algo, DQNConfig), f"algo={cfg.algo.name} reached a DQN builder"
    return cfg.algo


def q_network(cfg: RunConfig, spaces: EnvSpaces) -> QNetwork:
    algo = dqn_config(cfg)
    return build_q_network(cfg.model, spaces, atoms=algo.num_quantiles if algo.loss == "quantile" else 1)


def rollout_policy(cfg: RunConfig, spaces: EnvSpaces, worker_id: int, env_steps: int) -> Policy:
    """Epsilon-greedy with the worker's slice of the Ape-X epsilon ladder, annealed from ``env_steps``."""
    topo, eps = cfg.topology, dqn_config(cfg).epsilon
    num_envs = spaces.slots(topo.envs_per_worker)  # a multi-agent env: one epsilon per agent slot
    ladder = apex_epsilons(topo.num_workers * num_envs, eps.base, eps.alpha)
    schedule = EpsilonSchedule(
        final=ladder[worker_id * num_envs : (worker_id + 1) * num_envs],
        initial=eps.initial,
        anneal_env_steps=eps.anneal_env_steps,
        steps_scale=topo.num_workers,
    )
    assert spaces.num_actions is not None
    policy = EpsilonGreedyPolicy(
        q_network(cfg, spaces), schedule, spaces.num_actions, seed=cfg.seed * 7919 + worker_id,
        numpy_inference=cfg.model.numpy_inference, precision=cfg.model.rollout_precision,
    )  # fmt: skip
    policy.steps = env_steps // num_envs
    return policy


def eval_policy(cfg: RunConfig, spaces: EnvSpaces, num_envs: int) -> Policy:
    """Argmax Q with algo.epsilon.eval."""
    assert spaces.num_actions is not None
    schedule = EpsilonSchedule(final=np.full(num_envs, dqn_config(cfg).epsilon.eval))
    return EpsilonGreedyPolicy(q_network(cfg, spaces), schedule, spaces.num_actions, seed=cfg.seed)


def objective(cfg: RunConfig, spaces: EnvSpaces) -> DQN:
    """DQN, or R2D2 for a recurrent Q network (model.recurrent): sequences from the replay."""
    q_net = q_network(cfg, spaces)
    if isinstance(q_net, RecurrentQNetwork):
        return R2D2(q_net, dqn_config(cfg))
    return DQN(q_net, dqn_config(cfg))


DQN_ALGORITHM = Algorithm(ALGORITHMS["dqn"], rollout_policy, eval_policy, objective)

"""A3C as the builders see them (raylab.algos.spec): each worker acts with a categorical policy over the very
network it computes gradients on; no Learner (the parameter servers apply the gradients)."""

from __future__ import annotations

from raylab.algos import actor_critic
from raylab.algos.spec import Algorithm
from raylab.config import A3CConfig, RunConfig
from raylab.config.algorithms import ALGORITHMS
from raylab.types import EnvSpaces, Policy


def a3c_config(cfg: RunConfig) -> A3CConfig:
    """``cfg.algo``, which must be A3C's section (a builder of A3C's parts was handed another algorithm)."""
    assert isinstance(cfg.algo, A3CConfig), f"algo={cfg.algo.name} reached an A3C builder"
    return cfg.algo


def rollout_policy(cfg: RunConfig, spaces: EnvSpaces, worker_id: int, env_steps: int) -> Policy:
    """Not frozen: the A3C worker trains this policy's module in place (raylab.rollout.a3c). Without the
    behaviour log-probabilities: A3C's loss recomputes them from the segment, with gradients."""
    return actor_critic.rollout_policy(cfg, spaces, worker_id, frozen=False, keep_log_probs=False)


A3C_ALGORITHM = Algorithm(ALGORITHMS["a3c"], rollout_policy, actor_critic.eval_policy, objective=None)

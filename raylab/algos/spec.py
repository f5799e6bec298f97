"""``Algorithm``: what an algorithm package tells the builders, defined once in its ``builder.py``.

raylab.builders reads a RunConfig and builds envs, workers, replay and learners the same way for every
algorithm; where algorithms differ (which policy acts, which evaluates, what the Learner optimizes), it asks
the algorithm's spec through raylab.algos.registry instead of branching on the config's type.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from raylab.algos.objective import Objective
from raylab.config import RunConfig
from raylab.config.algorithms import AlgorithmInfo
from raylab.types import EnvSpaces, Policy

RolloutPolicyBuilder = Callable[[RunConfig, EnvSpaces, int, int], Policy]
"""``(cfg, spaces, worker_id, env_steps) -> policy``: the policy rollout worker ``worker_id`` acts with.
``cfg.seed`` is already that worker incarnation's; ``env_steps`` > 0 is where a resumed run's worker left
off (exploration schedules continue from there)."""

EvalPolicyBuilder = Callable[[RunConfig, EnvSpaces, int], Policy]
"""``(cfg, spaces, num_envs) -> policy``: the evaluation policy for batches of ``num_envs`` observations."""

ObjectiveBuilder = Callable[[RunConfig, EnvSpaces], Objective]
"""``(cfg, spaces) -> objective``: what the Learner optimizes (raylab.algos.objective)."""


@dataclass(frozen=True)
class Algorithm:
    info: AlgorithmInfo
    """Its torch-free facts (raylab.config.algorithms): name, Ray topology, replay, why it has no Learner."""
    rollout_policy: RolloutPolicyBuilder
    eval_policy: EvalPolicyBuilder
    objective: ObjectiveBuilder | None
    """None when no Learner trains it (``info.no_learner`` says why)."""

    @property
    def name(self) -> str:
        return self.info.name

    @property
    def topology(self) -> str:
        return self.info.topology

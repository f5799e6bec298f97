"""The algorithms as the builders see them: for each ``algo=`` name, the policy its rollout workers act with,
the one it evaluates with, and the objective its Learner optimizes, built from a RunConfig with explicit
arguments to the plain classes of raylab.algos (which read no config).

raylab.builders reads a RunConfig and builds envs, workers, replay and learners the same way for every
algorithm; where algorithms differ it asks ``algorithm(name)`` instead of branching on the config's type. The
torch-free table of names and topologies is raylab.config.algorithms.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from raylab.algos.actor_critic import ActorCriticPolicy
from raylab.algos.dqn.objective import DQN
from raylab.algos.dqn.policy import EpsilonGreedyPolicy, EpsilonSchedule, apex_epsilons
from raylab.algos.dqn.r2d2 import R2D2
from raylab.algos.objective import Objective
from raylab.algos.ppo.appo import APPO
from raylab.algos.ppo.objective import PPO
from raylab.config import A3CConfig, APPOConfig, DQNConfig, PPOConfig, RunConfig
from raylab.config.algorithms import ALGORITHMS, AlgorithmInfo
from raylab.models.factory import ActorCritic, QNetwork, RecurrentQNetwork, build_actor_critic, build_q_network
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


# -- DQN (and R2D2) ------------------------------------------------------------------------------------------
def dqn_config(cfg: RunConfig) -> DQNConfig:
    """``cfg.algo``, which must be DQN's section (a builder of DQN's parts was handed another algorithm)."""
    assert isinstance(cfg.algo, DQNConfig), f"algo={cfg.algo.name} reached a DQN builder"
    return cfg.algo


def q_network(cfg: RunConfig, spaces: EnvSpaces) -> QNetwork:
    algo = dqn_config(cfg)
    return build_q_network(cfg.model, spaces, atoms=algo.num_quantiles if algo.loss == "quantile" else 1)


def dqn_rollout_policy(cfg: RunConfig, spaces: EnvSpaces, worker_id: int, env_steps: int) -> Policy:
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


def dqn_eval_policy(cfg: RunConfig, spaces: EnvSpaces, num_envs: int) -> Policy:
    """Argmax Q with algo.epsilon.eval."""
    assert spaces.num_actions is not None
    schedule = EpsilonSchedule(final=np.full(num_envs, dqn_config(cfg).epsilon.eval))
    return EpsilonGreedyPolicy(q_network(cfg, spaces), schedule, spaces.num_actions, seed=cfg.seed)


def dqn_objective(cfg: RunConfig, spaces: EnvSpaces) -> DQN:
    """DQN, or R2D2 for a recurrent Q network (model.recurrent): sequences from the replay."""
    return build_dqn(q_network(cfg, spaces), dqn_config(cfg))


def build_dqn(q_net: QNetwork, algo: DQNConfig) -> DQN:
    """The DQN objective of ``algo`` on ``q_net``; R2D2's for a recurrent one."""
    targets = dict(
        double=algo.double, quantile=algo.loss == "quantile", huber_delta=algo.huber_delta,
        target_update_every=algo.target_update_every, target_tau=algo.target_tau,
    )  # fmt: skip
    if isinstance(q_net, RecurrentQNetwork):
        seq = algo.sequence
        return R2D2(
            q_net, gamma=algo.gamma, n_step=algo.n_step,
            rescale_eps=seq.rescale_eps if seq.value_rescaling else None,
            priority_max_weight=seq.priority_max_weight, **targets,
        )  # fmt: skip
    return DQN(q_net, **targets)  # type: ignore[arg-type]


# -- the actor-critics: PPO, APPO, A3C -----------------------------------------------------------------------
def actor_critic_policy(
    cfg: RunConfig,
    spaces: EnvSpaces,
    worker_id: int,
    frozen: bool = True,
    keep_log_probs: bool = True,
    device: str = "cpu",
) -> ActorCriticPolicy:
    """Worker ``worker_id``'s sampling policy, its generator seeded apart from the other workers' (``device``:
    where it acts; an inference actor's may be cuda)."""
    return ActorCriticPolicy(
        build_actor_critic(cfg.model, spaces), seed=cfg.seed * 7919 + worker_id, frozen=frozen,
        keep_log_probs=keep_log_probs, numpy_inference=cfg.model.numpy_inference and device == "cpu",
        precision=cfg.model.rollout_precision, device=device,
    )  # fmt: skip


def actor_critic_eval_policy(cfg: RunConfig, spaces: EnvSpaces, num_envs: int) -> ActorCriticPolicy:
    """Evaluation: the most likely action, or a sample from the policy with eval.greedy=false."""
    return ActorCriticPolicy(build_actor_critic(cfg.model, spaces), seed=cfg.seed, greedy=cfg.eval.greedy)


def ppo_rollout_policy(cfg: RunConfig, spaces: EnvSpaces, worker_id: int, env_steps: int) -> Policy:
    return actor_critic_policy(cfg, spaces, worker_id)


def _clipped(algo: PPOConfig | APPOConfig) -> dict[str, object]:
    """What PPO and APPO share: the minibatch epochs and the clipped objective's coefficients."""
    return dict(
        epochs=algo.epochs, minibatches=algo.minibatches, clip=algo.clip, value_coef=algo.value_coef,
        entropy_coef=algo.entropy_coef, bptt=algo.bptt,
    )  # fmt: skip


def ppo_objective(cfg: RunConfig, spaces: EnvSpaces) -> PPO:
    assert isinstance(cfg.algo, PPOConfig), f"algo={cfg.algo.name} reached the PPO builder"
    return build_ppo(build_actor_critic(cfg.model, spaces), cfg.algo)


def appo_objective(cfg: RunConfig, spaces: EnvSpaces) -> APPO:
    assert isinstance(cfg.algo, APPOConfig), f"algo={cfg.algo.name} reached the APPO builder"
    return build_appo(build_actor_critic(cfg.model, spaces), cfg.algo)


def build_ppo(model: ActorCritic, algo: PPOConfig) -> PPO:
    """The PPO objective of ``algo`` on ``model``."""
    return PPO(
        model, gamma=algo.gamma, gae_lambda=algo.gae_lambda, value_clip=algo.value_clip,
        normalize_advantages=algo.normalize_advantages, **_clipped(algo),
    )  # fmt: skip


def build_appo(model: ActorCritic, algo: APPOConfig) -> APPO:
    """The APPO objective of ``algo`` on ``model``."""
    return APPO(
        model, gamma=algo.gamma, max_policy_lag=algo.max_policy_lag, rho_bar=algo.rho_bar, c_bar=algo.c_bar,
        lam=algo.vtrace_lambda, **_clipped(algo),
    )  # fmt: skip


def a3c_config(cfg: RunConfig) -> A3CConfig:
    """``cfg.algo``, which must be A3C's section (a builder of A3C's parts was handed another algorithm)."""
    assert isinstance(cfg.algo, A3CConfig), f"algo={cfg.algo.name} reached an A3C builder"
    return cfg.algo


def a3c_rollout_policy(cfg: RunConfig, spaces: EnvSpaces, worker_id: int, env_steps: int) -> Policy:
    """Not frozen: the A3C worker trains this policy's module in place (raylab.rollout.a3c). Without the
    behaviour log-probabilities: A3C's loss recomputes them from the segment, with gradients."""
    return actor_critic_policy(cfg, spaces, worker_id, frozen=False, keep_log_probs=False)


SPECS = {
    "dqn": Algorithm(ALGORITHMS["dqn"], dqn_rollout_policy, dqn_eval_policy, dqn_objective),
    "a3c": Algorithm(ALGORITHMS["a3c"], a3c_rollout_policy, actor_critic_eval_policy, objective=None),
    "ppo": Algorithm(ALGORITHMS["ppo"], ppo_rollout_policy, actor_critic_eval_policy, ppo_objective),
    "appo": Algorithm(ALGORITHMS["appo"], ppo_rollout_policy, actor_critic_eval_policy, appo_objective),
}


def algorithm(name: str) -> Algorithm:
    """The spec of ``name``; KeyError naming the known algorithms for any other name (config validation
    lets none through)."""
    if name not in SPECS:
        raise KeyError(f"unknown algorithm {name!r}: raylab runs {', '.join(SPECS)}")
    return SPECS[name]


def algorithms() -> list[Algorithm]:
    """Every registered algorithm's spec, in the table's order."""
    return [algorithm(name) for name in ALGORITHMS]

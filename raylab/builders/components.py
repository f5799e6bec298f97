"""Component builders: a RunConfig made into each plain component (Acme's builder pattern).

Each builder passes explicit keyword arguments to a plain class, so the same builder serves the serial
topology in the driver process and the Ray actors on any node. Where algorithms differ (the policy a worker
acts with, the evaluation policy, the Learner's objective), the builders ask the algorithm's spec in the
table (raylab.builders.algorithms) rather than branching on the config's type.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from raylab.algos.actor_critic import ActorCriticPolicy
from raylab.algos.dqn.policy import EpsilonGreedyPolicy, EpsilonSchedule
from raylab.algos.objective import Objective
from raylab.builders.algorithms import a3c_config, algorithm, dqn_config
from raylab.config import RunConfig
from raylab.config.applicability import check_applicable
from raylab.config.policies import policy_config, policy_map, policy_spaces
from raylab.envs.registry import EVAL_WORKER_INDEX, make_vector_env
from raylab.envs.vector import VectorEnv
from raylab.errors import ConfigError
from raylab.learner.learner import Learner
from raylab.metrics.timing import StageTimer
from raylab.models.factory import build_actor_critic
from raylab.params.flat import ParamLayout, flatten_params
from raylab.params.link import ServerLink
from raylab.params.server import ParameterServer
from raylab.replay.buffer import (
    PrioritizedSpec,
    ReplayBuffer,
    SequenceLayout,
    bytes_per_transition,
    check_bytes_fit,
    check_fits_in_memory,
    dedup_applies,
    require_dedup_applies,
)
from raylab.replay.rate_limiter import SamplesPerInsertLimiter
from raylab.rollout.a3c import A3CWorker
from raylab.rollout.acting import CentralActions
from raylab.rollout.evaluator import Evaluator
from raylab.rollout.inference import InferenceServer
from raylab.rollout.video import EpisodeRecorder
from raylab.rollout.worker import Policy, PolicySet, RolloutWorker
from raylab.types import EnvSpaces

if TYPE_CHECKING:
    from raylab.driver.resume import ResumeState

MAX_EVAL_ENVS = 16


def _timer(cfg: RunConfig) -> StageTimer:
    """An actor's stage timer: a no-op with logger.timing=false."""
    return StageTimer(enabled=cfg.logger.timing)


def build_rollout_worker(
    cfg: RunConfig,
    spaces: EnvSpaces,
    worker_id: int,
    incarnation: int = 0,
    env_steps: int = 0,
    inference: Any = None,
    transport: Any = None,
) -> RolloutWorker:
    """Worker ``worker_id`` with its envs seeded apart, acting with its algorithm's rollout policy (DQN:
    epsilon-greedy with its slice of the Ape-X epsilon ladder; the actor-critics sample from their
    categorical policy). ``incarnation`` > 0 (a restarted actor) gives fresh env and policy seeds, so a
    restart does not replay the episodes it already played; ``env_steps`` (a resumed run) puts its
    exploration schedule where the worker left it.

    ``inference`` (topology.inference=central): the clients of the inference actors, its own first (one acts
    for it: the first on its machine, raylab.rollout.acting.CentralActions), and the ``transport`` its replies
    are read with; the worker's envs step in topology.env_splits parts (each seeded
    as that part of one vector env would be), and its own policy only explores (DQN's epsilons)."""
    cfg = _incarnation(cfg, incarnation)
    topo = cfg.topology
    spec = algorithm(cfg.algo.name)
    policy = _each_policy(
        cfg, spaces, topo.envs_per_worker,
        lambda c, s, n: spec.rollout_policy(c, s, worker_id, env_steps * n // spaces.slots(topo.envs_per_worker)),
    )  # fmt: skip
    layout = replay_sequences(cfg, spaces) if cfg.algo.name == "dqn" else None
    actions = None
    if inference is not None:
        splits = topo.splits
        env: VectorEnv | list[VectorEnv] = [
            make_vector_env(cfg.env, topo.envs_per_worker // splits, cfg.seed, worker_index=worker_id * splits + s)
            for s in range(splits)
        ]
        explorer = policy if isinstance(policy, EpsilonGreedyPolicy) else None
        clients = tuple(inference) if isinstance(inference, tuple) else (inference,)  # its own first, then the rest
        order = [(worker_id + j) % topo.inference_actors for j in range(len(clients))]
        names = [f"inference actor {k}" for k in order]
        slots = spaces.slots(topo.envs_per_worker)
        shm = topo.inference_transport == "auto"
        action = (
            ((spaces.action_dim,), "<f4")
            if spaces.action_dim is not None
            else ((len(spaces.action_nvec),), "<i8")
            if spaces.action_nvec is not None
            else ((), "<i8")
        )
        actions = CentralActions(clients[0], transport, splits, slots, explorer, name=names[0], shared_memory=shm,
                                 key=f"w{worker_id}", action=action, index=order[0],
                                 others=tuple(zip(clients[1:], names[1:], order[1:], strict=True)))  # fmt: skip
    else:
        env = make_vector_env(cfg.env, topo.envs_per_worker, cfg.seed, worker_index=worker_id)
    worker = RolloutWorker(
        env, policy, worker_id=worker_id, rollout_length=topo.rollout_length, timer=_timer(cfg),
        record_state_every=layout.period if layout is not None else 0, actions=actions,
    )  # fmt: skip
    worker.env_steps = env_steps
    return worker


CENTRAL_SEED = 1_000_003
"""Inference actor k samples with seed cfg.seed * 7919 + CENTRAL_SEED + k, apart from every rollout worker's."""


def build_inference_server(cfg: RunConfig, spaces: EnvSpaces, index: int) -> InferenceServer:
    """Inference actor ``index``'s server: the actor-critics sample from their policy (with the log-probabilities
    V-trace needs), DQN acts greedily (its workers explore); on the GPU when topology.inference_device asks
    for it or (auto) the actor was given one."""
    import torch

    from raylab.builders.algorithms import actor_critic_policy, q_network

    device = cfg.topology.inference_device
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise ConfigError(
            "topology.inference_device=cuda but torch sees no GPU here: set topology.inference_device=auto"
        )
    policy: Policy
    if cfg.algo.name == "dqn":
        assert spaces.num_actions is not None
        policy = EpsilonGreedyPolicy(
            q_network(cfg, spaces), EpsilonSchedule(final=np.zeros(1)), spaces.num_actions,
            seed=cfg.seed * 7919 + CENTRAL_SEED + index, precision=cfg.model.rollout_precision, device=device,
        )  # fmt: skip
    else:
        policy = actor_critic_policy(cfg, spaces, CENTRAL_SEED + index, device=device)
    return InferenceServer(policy)


def build_evaluator(cfg: RunConfig, spaces: EnvSpaces) -> Evaluator:
    """Evaluation: argmax Q (with algo.epsilon.eval) for DQN; for actor-critics the most likely action, or a
    sample from the policy with eval.greedy=false."""
    num_envs = min(max(cfg.eval.episodes, 1), MAX_EVAL_ENVS)
    every = cfg.eval.starts == "every"
    if every:  # each env takes its share of the starts in turn
        num_envs = min(num_envs, cfg.env.noop_max + 1)
    env = make_vector_env(cfg.eval_env, num_envs, cfg.seed, worker_index=EVAL_WORKER_INDEX, every_start=every)
    policy = build_eval_policy(cfg, spaces, env.num_envs)  # a multi-agent env: its agent slots
    names = policy_map(cfg, spaces).names if isinstance(policy, PolicySet) else None
    recorder = EpisodeRecorder(cfg, spaces, lambda: build_eval_policy(cfg, spaces, 1)) if cfg.eval.video else None
    return Evaluator(env, policy, names, recorder, starts=cfg.env.noop_max + 1 if every else None)


def build_eval_policy(cfg: RunConfig, spaces: EnvSpaces, num_envs: int) -> Policy:
    """The evaluation policy for batches of ``num_envs`` observations (weights still to be set); with several
    policies a PolicySet, each acting for its agents' slots."""
    spec = algorithm(cfg.algo.name)
    return _each_policy(cfg, spaces, num_envs // spaces.agents, lambda c, s, n: spec.eval_policy(c, s, n))


def _each_policy(
    cfg: RunConfig, spaces: EnvSpaces, envs: int, build: Callable[[RunConfig, EnvSpaces, int], Policy]
) -> Policy:
    """``build(cfg, spaces, slots)`` with one policy; with several, a PolicySet of ``build`` with policy k's
    config and spaces (its agents only) for its slots of ``envs`` envs (raylab/config/policies.py)."""
    pmap = policy_map(cfg, spaces)
    if not pmap.several:
        return build(cfg, one_space(spaces), spaces.slots(envs))
    parts = [
        build(policy_config(cfg, name), policy_spaces(cfg, spaces, name), pmap.slot_count(k, envs))
        for k, name in enumerate(pmap.names)
    ]
    layout = spaces.slot_layout(envs) if spaces.groups else None  # agents that differ: one batch per space group
    return PolicySet(parts, [pmap.slots(k, envs) for k in range(len(parts))], layout)


def one_space(spaces: EnvSpaces) -> EnvSpaces:
    """``spaces``, which a builder of one policy's component takes: those of agents that share one space (a run's
    agents that differ are each policy's, raylab.config.policies.policy_spaces)."""
    assert not spaces.groups, "a policy's components take its own spaces: policy_spaces(cfg, spaces, name)"
    return spaces


def replay_dedup(cfg: RunConfig, spaces: EnvSpaces) -> bool:
    """Whether replay stores frames once: replay.frame_dedup, with auto on where it applies."""
    if cfg.replay.frame_dedup == "auto":
        return dedup_applies(spaces.obs_shape, spaces.obs_dtype, cfg.env.frame_stack)
    if cfg.replay.frame_dedup:
        require_dedup_applies(spaces.obs_shape, spaces.obs_dtype, cfg.env.frame_stack)
    return bool(cfg.replay.frame_dedup)


def replay_sequences(cfg: RunConfig, spaces: EnvSpaces) -> SequenceLayout | None:
    """R2D2's replay sequences (algo=dqn with model.recurrent), None for transitions."""
    if cfg.model.recurrent == "none":
        return None
    seq = dqn_config(cfg).sequence
    size = 2 * cfg.model.recurrent_size if cfg.model.recurrent == "lstm" else cfg.model.recurrent_size
    return SequenceLayout(seq.burn_in, seq.trace, seq.period, size)


def replay_shard_capacity(cfg: RunConfig, spaces: EnvSpaces | None = None) -> int:
    """Items per replay shard (replay.capacity is the total, in transitions; R2D2's sequences: in env steps,
    one sequence per algo.sequence.period of them)."""
    steps = max(1, cfg.replay.capacity // cfg.replay.num_shards)
    layout = replay_sequences(cfg, spaces) if spaces is not None else None
    return layout.items(steps) if layout is not None else steps


def check_replay_fits(cfg: RunConfig, spaces: EnvSpaces) -> None:
    """ConfigError (before Ray starts) when replay.capacity cannot fit in memory, counting de-duplication."""
    check_fits_in_memory(
        cfg.replay.capacity, spaces.obs_shape, spaces.obs_dtype, cfg.env.frame_stack, replay_dedup(cfg, spaces),
        replay_sequences(cfg, spaces),
    )  # fmt: skip


def check_policy_replays_fit(cfg: RunConfig, spaces: EnvSpaces) -> None:
    """``check_replay_fits`` for every policy's replay together, each storing its own agents' observations."""
    parts = [(policy_config(cfg, name), policy_spaces(cfg, spaces, name)) for name in policy_map(cfg, spaces).names]
    needed = sum(
        p.replay.capacity * bytes_per_transition(s.obs_shape, s.obs_dtype, p.env.frame_stack, replay_dedup(p, s))
        for p, s in parts
    )
    check_bytes_fit(sum(p.replay.capacity for p, _ in parts), needed)


def build_replay(cfg: RunConfig, spaces: EnvSpaces, shard: int = 0) -> ReplayBuffer:
    spaces = one_space(spaces)
    rc = cfg.replay
    prioritized = (
        PrioritizedSpec(rc.alpha, rc.beta, rc.beta_final, rc.beta_anneal_env_steps // rc.num_shards, rc.priority_eps)
        if rc.kind == "prioritized"
        else None
    )
    return ReplayBuffer(
        capacity=replay_shard_capacity(cfg, spaces),
        obs_shape=spaces.obs_shape,
        obs_dtype=spaces.obs_dtype,
        n_step=dqn_config(cfg).n_step,
        gamma=dqn_config(cfg).gamma,
        seed=cfg.seed + 1 + 7919 * shard,
        prioritized=prioritized,
        frame_stack=cfg.env.frame_stack,
        dedup=replay_dedup(cfg, spaces),
        timer=_timer(cfg),
        sequence=replay_sequences(cfg, spaces),
    )


def replay_snapshots_to_load(
    cfg: RunConfig, spaces: EnvSpaces, resume: ResumeState | None, first: int = 0
) -> list[Path | None]:
    """Per replay shard, the snapshot a resumed run loads (checkpoint.replay): checked against this run's
    replay before anything starts; None (with a note) where the checkpoint has none, and that shard refills.
    ``first``: the run's index of the first shard (several policies: each policy's shards follow the last's)."""
    shards = cfg.replay.num_shards
    if resume is None or not cfg.checkpoint.replay:
        return [None] * shards
    from raylab.replay.snapshot import check_snapshot

    paths = [resume.replay_snapshot(first + k) for k in range(shards)]
    for path in paths:
        if path is not None:
            check_snapshot(
                path, replay_shard_capacity(cfg, spaces), cfg.replay.kind == "prioritized", replay_dedup(cfg, spaces),
                replay_sequences(cfg, spaces) is not None,
            )  # fmt: skip
    missing = [first + k for k, path in enumerate(paths) if path is None]
    if missing:
        print(f"raylab: no replay snapshot of shard(s) {missing} beside {resume.path.name}: they refill", flush=True)
    return paths


def build_objective(cfg: RunConfig, spaces: EnvSpaces) -> Objective:
    """The algorithm as the Learner trains it: DQN (and QR-DQN), PPO, or APPO (V-trace, lag-bounded)."""
    spec = algorithm(cfg.algo.name)
    spaces = one_space(spaces)
    if spec.objective is None:
        reason = spec.info.no_learner or "it has no objective"
        raise ConfigError(f"algo={cfg.algo.name} has no learner ({reason}): build its workers, not a learner")
    return spec.objective(cfg, spaces)


def build_learner(cfg: RunConfig, spaces: EnvSpaces) -> Learner:
    """The learner of every algorithm that has one, with every learner option."""
    import torch

    check_applicable(cfg)
    torch.manual_seed(cfg.seed)
    torch.set_num_threads(cfg.learner.num_threads)
    limit_blas_threads(cfg.learner.num_threads)
    opt = cfg.learner
    return Learner(
        build_objective(cfg, spaces),
        lr=opt.lr,
        adam_eps=opt.adam_eps,
        max_grad_norm=opt.max_grad_norm,
        device=opt.device,
        # a replay learner's version is an optimizer step, a round learner's a call
        publish_every=opt.publish_every if algorithm(cfg.algo.name).info.replay else opt.publish_every_calls,
        precision=opt.precision,
        compile=opt.compile,
        compile_mode=opt.compile_mode,
        grad_accumulation=opt.grad_accumulation,
        prefetch=opt.prefetch,
        tf32=opt.tf32,
        fused=opt.fused,
        seed=cfg.seed,
        average_rate=opt.average_rate,
    )


def limit_blas_threads(threads: int) -> None:
    """Cap NumPy's BLAS (OpenBLAS) at ``threads`` in this process, as torch.set_num_threads caps torch: the fused
    DQN update and NumPy acting run small matrix products that OpenBLAS would otherwise spread over every core
    (2x the CPU time for the same wall time on a 2-core machine), taking them from the envs and other actors."""
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=threads, user_api="blas")


def build_rate_limiter(cfg: RunConfig, spaces: EnvSpaces) -> SamplesPerInsertLimiter:
    """The limiter with enough slack for one in-flight chunk per worker plus one learner call."""
    spi = cfg.replay.samples_per_insert
    layout = replay_sequences(cfg, spaces)
    sample_request = cfg.learner.batch_size * cfg.learner.updates_per_call * steps_per_item(cfg, spaces)
    slots = spaces.slots(cfg.topology.envs_per_worker)
    chunk = cfg.topology.rollout_length * slots
    error_buffer = cfg.replay.error_buffer
    if error_buffer is None:
        error_buffer = spi * chunk * cfg.topology.num_workers + sample_request
    needed = SamplesPerInsertLimiter.min_error_buffer(spi, sample_request, chunk * cfg.topology.num_workers)
    if error_buffer < needed:
        raise ConfigError(
            f"replay.error_buffer={error_buffer:g} can deadlock actors and learner: set it >= {needed:g} or null"
        )
    # The limiter counts env steps inserted; the replay completes a step's n-step transition only once the
    # next n - 1 steps arrived, so up to (n - 1) steps per env are still in flight at any time.
    # R2D2: a sequence completes once its m = burn_in + trace steps arrived (or its episode ended).
    window = dqn_config(cfg).n_step - 1 if layout is None else layout.length
    pending = window * slots * cfg.topology.num_workers
    return SamplesPerInsertLimiter(spi, cfg.replay.min_size + pending, error_buffer)


def steps_per_item(cfg: RunConfig, spaces: EnvSpaces) -> int:
    """Env steps one sampled replay item trains: 1 for a transition, algo.sequence.trace for R2D2's sequences
    (the rate limiter counts samples in trained steps, inserts in env steps)."""
    layout = replay_sequences(cfg, spaces)
    return 1 if layout is None else layout.trace


def build_parameter_servers(cfg: RunConfig, spaces: EnvSpaces) -> tuple[ParamLayout, list[int], list[np.ndarray]]:
    """The initial model (seeded), its flat layout, the shard bounds and each shard's initial slice."""
    import torch

    torch.manual_seed(cfg.seed)
    model = build_actor_critic(cfg.model, one_space(spaces))
    layout = ParamLayout.of(model)
    bounds = layout.shard_bounds(cfg.params.num_shards)
    flat = flatten_params(model)
    return layout, bounds, [flat[bounds[k] : bounds[k + 1]] for k in range(len(bounds) - 1)]


def build_parameter_server(cfg: RunConfig, params: np.ndarray, shard: int) -> ParameterServer:
    algo = a3c_config(cfg)
    return ParameterServer(params, lr=algo.lr, alpha=algo.rmsprop_alpha, eps=algo.rmsprop_eps, shard=shard)


RESTART_SEED_STRIDE = 1_000_003


def _incarnation(cfg: RunConfig, incarnation: int) -> RunConfig:
    """The config a worker's ``incarnation``-th restart builds from: seeds moved on by a stride, so it
    neither replays its earlier episodes nor collides with another worker's seeds."""
    return dataclasses.replace(cfg, seed=cfg.seed + RESTART_SEED_STRIDE * incarnation) if incarnation else cfg


def build_a3c_worker(
    cfg: RunConfig, spaces: EnvSpaces, worker_id: int, link: ServerLink, incarnation: int = 0
) -> A3CWorker:
    """Worker ``worker_id`` with its envs seeded apart; weights come from the server on the first run.
    ``incarnation`` counts restarts of this worker: a restarted worker gets fresh seeds, not a replay."""
    algo, cfg = a3c_config(cfg), _incarnation(cfg, incarnation)
    env = make_vector_env(cfg.env, cfg.topology.envs_per_worker, cfg.seed, worker_index=worker_id)
    policy = algorithm(cfg.algo.name).rollout_policy(cfg, one_space(spaces), worker_id, 0)
    assert isinstance(policy, ActorCriticPolicy), "A3C's worker trains the module its policy acts with"
    return A3CWorker(
        env,
        policy,
        link,
        worker_id=worker_id,
        rollout_length=cfg.topology.rollout_length,
        gamma=algo.gamma,
        value_coef=algo.value_coef,
        entropy_coef=algo.entropy_coef,
        max_grad_norm=algo.max_grad_norm,
        cut_at_episode_end=algo.cut_at_episode_end,
        pushes_in_flight=cfg.params.pushes_in_flight,
        timer=_timer(cfg),
    )

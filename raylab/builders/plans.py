"""A RunConfig made into a run's plan (raylab.plan): the actors each topology starts, as ``ActorSpec``s whose hosts
get the builder of their component (raylab.builders.components) and nothing of the config, with the counts,
sizes and resumed states the flow needs. This and the component builders are the only readers of a RunConfig.
"""

from __future__ import annotations

import dataclasses
import itertools
import uuid
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import psutil

from raylab.builders.components import (
    build_a3c_worker,
    build_evaluator,
    build_inference_server,
    build_learner,
    build_parameter_server,
    build_parameter_servers,
    build_rate_limiter,
    build_replay,
    build_rollout_worker,
    check_policy_replays_fit,
    check_replay_fits,
    replay_shard_capacity,
    replay_snapshots_to_load,
    steps_per_item,
)
from raylab.config import ModelConfig, RunConfig
from raylab.config.algorithms import ALGORITHMS
from raylab.config.policies import check_policy_spaces, policy_config, policy_map, policy_spaces
from raylab.driver.resume import ResumeState, resumed
from raylab.driver.stop import eval_target
from raylab.errors import ConfigError
from raylab.hosts import (
    A3CWorkerHost,
    EvalHost,
    InferenceHost,
    LearnerHost,
    ReplayHost,
    RolloutHost,
    ShardHost,
)
from raylab.learner.schedule import LrSchedule
from raylab.plan import A3CPlan, Policies, PolicyPlan, ReplayPlan, RolloutPlan, RunPlan
from raylab.remote.host import ActorSpec, Late, Resources
from raylab.types import EnvSpaces

A3C_WINDOW_S = 0.25
"""Seconds an A3C worker actor runs between reports to the driver (raylab.topology.a3c)."""


def topology_of(cfg: RunConfig) -> str:
    """The flow a run runs: its topology's, or with topology=local the algorithm's Ray topology's, in one process."""
    return ALGORITHMS[cfg.algo.name].topology if cfg.topology.name == "local" else cfg.topology.name


def build_plan(cfg: RunConfig, spaces: EnvSpaces, resume: ResumeState | None = None) -> RunPlan:
    """The plan of the run ``cfg`` describes; a config that cannot run (a bad policy mapping, a replay that
    cannot fit in memory) fails here in one line, before Ray starts."""
    check_policy_spaces(cfg, spaces)
    if cfg.topology.central and spaces.groups:
        raise ConfigError(
            f"topology.inference=central serves agents of one observation and action space; {cfg.env.id}'s agents "
            f"differ: remove topology.inference"
        )
    for name in policy_map(cfg, spaces).names:  # each policy's network, of its own spaces
        check_model_fits(policy_config(cfg, name).model, policy_spaces(cfg, spaces, name), cfg.algo.name == "dqn")
    topology = topology_of(cfg)
    flow = a3c_plan(cfg, spaces, resume) if topology == "a3c" else rollout_plan(cfg, spaces, resume, topology)
    workers = cfg.topology.num_workers
    if isinstance(flow, A3CPlan):
        server = cfg.params.num_shards
        counts = {"rollout": workers, "learner": workers, "replay": 1, "driver": 1, "server": server}
    else:
        plans = flow.policies.plans
        shards = sum(len(p.replay.shards) for p in plans if p.replay is not None)
        counts = {"rollout": workers, "learner": len(plans), "replay": max(shards, 1), "driver": 1}
        if flow.inference:
            counts["inference"] = len(flow.inference)
    ev = cfg.eval
    return RunPlan(
        topology=topology,
        evaluator=ActorSpec(EvalHost, (partial(build_evaluator, cfg, spaces),), Resources(cpus=0)),
        eval_episodes=ev.episodes, confirm_episodes=ev.confirm_episodes, final_episodes=ev.final_episodes,
        target=eval_target(cfg.stop),
        max_restarts=cfg.topology.max_actor_restarts,
        placement_wait_s=cfg.ray.placement_wait_s,
        actor_counts=counts, flow=flow,
    )  # fmt: skip


BYTES_PER_TRAINED_PARAMETER = 16
"""fp32 weights, gradients and Adam's two moments."""


def check_model_fits(model: ModelConfig, spaces: EnvSpaces, q_network: bool) -> None:
    """A network too large for this machine's memory is refused before any allocation, with its size: torch
    would fail deep inside the first layer's allocation (model.hidden_sizes=[100000, 100000]: 160 GB). Its
    parameters are counted on torch's meta device (no memory), for every model, the user's included."""
    params = count_parameters(model, spaces, q_network)
    if params is None:
        return
    need = params * BYTES_PER_TRAINED_PARAMETER
    free = psutil.virtual_memory().available
    if need > free:
        sizes = f"model.hidden_sizes={list(model.hidden_sizes)}"
        if model.encoder == "nature_cnn":
            sizes += f" and model.conv_channels={list(model.conv_channels)}"
        what = {"mlp": sizes, "custom": "model=custom"}.get(model.encoder, f"model={model.encoder} with {sizes}")
        raise ConfigError(
            f"{what} makes a network of {params / 1e9:.2f} G parameters, whose weights, gradients and Adam state "
            f"need {need / 2**30:.0f} GiB, more than the {free / 2**30:.0f} GiB free here: choose smaller layers"
        )


def count_parameters(model: ModelConfig, spaces: EnvSpaces, q_network: bool) -> int | None:
    """The network's parameter count, built on the meta device; None when it cannot be built there (a user's
    network that allocates on a device of its own: it is checked when it is built)."""
    import torch

    from raylab.models import build_actor_critic, build_q_network

    if model.encoder == "mlp":  # counted without torch: the common case stays cheap
        sizes = [int(np.prod(spaces.obs_shape)), *model.hidden_sizes]
        return sum(a * b + b for a, b in itertools.pairwise(sizes))
    try:
        with torch.device("meta"):
            net = build_q_network(model, spaces) if q_network else build_actor_critic(model, spaces)
    except Exception:
        return None
    return sum(p.numel() for p in net.parameters())


def rollout_spec(
    cfg: RunConfig, spaces: EnvSpaces, worker_id: int, incarnation: int = 0, env_steps: int = 0
) -> ActorSpec:
    """Rollout worker ``worker_id``; ``incarnation`` and ``env_steps``: a resumed run's fresh seeds and where
    its exploration schedule left off."""
    make = partial(build_rollout_worker, cfg, spaces, worker_id, env_steps=env_steps)
    links = (inference_links(cfg, worker_id), Late("transport")) if cfg.topology.central else ()
    return ActorSpec(RolloutHost, (make, incarnation, *links), Resources(cpus=cfg.topology.worker_cpus, spread=True))


def inference_name(cfg: RunConfig, worker_id: int) -> str:
    """The inference actor rollout worker ``worker_id`` sends to first (topology.inference=central)."""
    return f"inference_{worker_id % cfg.topology.inference_actors}"


def inference_links(cfg: RunConfig, worker_id: int) -> tuple[Late, ...]:
    """Every inference actor, worker ``worker_id``'s own (``inference_name``) first and the others after it in
    turn: the worker sends to the first that runs on its machine (shared memory, no network), or to its own when
    none does (raylab.rollout.acting.CentralActions). Ray places the two kinds of actors independently, so a
    fixed pairing would leave some workers talking to another machine's actor while one shares theirs."""
    k = cfg.topology.inference_actors
    return tuple(Late(f"inference_{(worker_id + j) % k}") for j in range(k))


CENTRAL_GPU_SHARE = 0.5
"""With central inference on the GPU (learner.device and topology.inference_device auto), the inference actors
share half of it and the learner keeps the other half (Ray's fractional GPUs: placement, not a limit)."""


def inference_spec(cfg: RunConfig, spaces: EnvSpaces, index: int) -> ActorSpec:
    """Inference actor ``index``: it admits a request per env split of each rollout worker it serves at once,
    and takes a GPU share when the cluster has a GPU (topology.inference_device=auto) or one is asked for."""
    topo = cfg.topology
    served = len(range(index, topo.num_workers, topo.inference_actors))
    share = CENTRAL_GPU_SHARE / topo.inference_actors
    res = Resources(
        cpus=topo.inference_cpus, gpus=share if topo.inference_device == "cuda" else 0.0,
        gpu_if_any=share if topo.inference_device == "auto" else 0.0, concurrency=served * topo.splits + 4,
        spread=True,  # several inference actors: across the nodes, as the rollout actors are
    )  # fmt: skip
    make = partial(build_inference_server, cfg, spaces, index)
    threads = max(1, int(topo.inference_cpus))
    return ActorSpec(InferenceHost, (make, Late("learner"), Late("transport"), threads), res)


def learner_spec(cfg: RunConfig, spaces: EnvSpaces, sharing: int = 1) -> ActorSpec:
    """A learner of one policy (``cfg`` and ``spaces`` its own: policy_config, policy_spaces); ``sharing``
    learners (several policies) share the GPU evenly. learner.num_gpus when set; with learner.device=auto, one
    GPU when the cluster has any (resolved where the actor is placed)."""
    opt = cfg.learner
    fixed = bool(opt.num_gpus) or opt.device == "cpu"
    whole = 1.0 - CENTRAL_GPU_SHARE if cfg.topology.central and cfg.topology.inference_device != "cpu" else 1.0
    res = Resources(
        cpus=max(opt.num_cpus, opt.num_threads),  # the CPUs its torch threads keep busy
        gpus=opt.num_gpus / sharing if fixed else 0.0, gpu_if_any=0.0 if fixed else whole / sharing,
        threads=opt.num_threads,
    )  # fmt: skip
    return ActorSpec(LearnerHost, (partial(build_learner, cfg, spaces), lr_schedule(cfg)), res)


def lr_schedule(cfg: RunConfig) -> LrSchedule | None:
    """The learner's lr over the run (learner.lr_schedule), None when it is constant."""
    opt = cfg.learner
    if opt.lr_schedule == "constant":
        return None
    return LrSchedule(opt.lr_schedule, opt.lr, opt.lr_final, cfg.stop.env_steps)


def replay_spec(cfg: RunConfig, spaces: EnvSpaces, shard: int) -> ActorSpec:
    """Replay shard ``shard`` (its run-wide index); Ray restarts a crashed one from its newest snapshot when the
    run keeps them (checkpoint.replay)."""
    snapshots = str(Path(cfg.run_dir) / "checkpoints") if cfg.checkpoint.replay else None
    return ActorSpec(ReplayHost, (partial(build_replay, cfg, spaces, shard), shard, snapshots), Resources(cpus=0))


def rollout_plan(cfg: RunConfig, spaces: EnvSpaces, resume: ResumeState | None, topology: str) -> RolloutPlan:
    pmap = policy_map(cfg, spaces)  # a bad mapping fails here, before Ray starts
    names = pmap.names
    if topology == "apex_dqn" and spaces.groups:  # each policy's replay holds its own agents' observations
        check_policy_replays_fit(cfg, spaces)
    elif topology == "apex_dqn":
        total = sum(policy_config(cfg, n).replay.capacity for n in names)
        check_replay_fits(dataclasses.replace(cfg, replay=dataclasses.replace(cfg.replay, capacity=total)), spaces)
    plans = []
    for k, name in enumerate(names):
        pcfg, pspaces = policy_config(cfg, name), policy_spaces(cfg, spaces, name)
        replay = _replay_plan(cfg, pcfg, pspaces, resume, k) if topology == "apex_dqn" else None
        plans.append(
            PolicyPlan(
                name=name, actor=f"learner_{name}" if pmap.several else "learner",
                learner=learner_spec(pcfg, pspaces, len(names)), replay=replay,
                resumed=_learner_part(resume, name, pmap.several), reports_as=name if pmap.several else None,
            )
        )  # fmt: skip
    workers = tuple(rollout_spec(cfg, spaces, i, *resumed(resume, i)) for i in range(cfg.topology.num_workers))
    inference = tuple(inference_spec(cfg, spaces, k) for k in range(cfg.topology.inference_actors))
    algo: Any = cfg.algo
    return RolloutPlan(
        workers=workers, inference=inference if cfg.topology.central else (),
        policies=Policies(tuple(plans)), chunks_in_flight=cfg.topology.chunks_in_flight,
        chunks_per_update=getattr(algo, "chunks_per_update", 1), batch_size=cfg.learner.batch_size,
        updates_per_call=cfg.learner.updates_per_call, prioritized=cfg.replay.kind == "prioritized",
        replay_snapshots=Path(cfg.run_dir) / "checkpoints" if cfg.checkpoint.replay else None,
    )  # fmt: skip


def _learner_part(resume: ResumeState | None, name: str, several: bool) -> dict[str, Any] | None:
    """Policy ``name``'s part of a resumed checkpoint's learner state (several: ``policies.<name>``)."""
    if resume is None:
        return None
    return resume.learner["policies"].get(name) if several else resume.learner


def _replay_plan(cfg: RunConfig, pcfg: RunConfig, spaces: EnvSpaces, resume: ResumeState | None, k: int) -> ReplayPlan:
    """Policy ``k``'s replay: shards ``k * S .. k * S + S - 1`` of the run (S = replay.num_shards)."""
    num_shards = cfg.replay.num_shards
    first = k * num_shards
    return ReplayPlan(
        first=first,
        shards=tuple(replay_spec(pcfg, spaces, first + j) for j in range(num_shards)),
        limiter=build_rate_limiter(pcfg, spaces),
        snapshots=tuple(replay_snapshots_to_load(pcfg, spaces, resume, first)),
        capacity=replay_shard_capacity(pcfg, spaces) * num_shards,
        chunk_size=cfg.topology.rollout_length * spaces.slots(cfg.topology.envs_per_worker),
        steps_per_item=steps_per_item(pcfg, spaces),
    )


def a3c_worker_spec(
    cfg: RunConfig, spaces: EnvSpaces, token: str | None, worker_id: int, link: Any, incarnation: int = 0
) -> ActorSpec:
    """A3C worker ``worker_id`` pushing through ``link`` (raylab.params.link), at params.worker_nice; named
    ``raylab-a3c-<token>-worker-<id>`` (no name without a token)."""
    res = Resources(cpus=cfg.topology.worker_cpus, spread=True, nice=cfg.params.worker_nice)
    make = partial(build_a3c_worker, cfg, spaces, worker_id)
    name = f"raylab-a3c-{token}-worker-{worker_id}" if token else None
    return ActorSpec(A3CWorkerHost, (make, link, incarnation), res, name=name)


def shard_spec(cfg: RunConfig, params: Any, shard: int, token: str | None = None) -> ActorSpec:
    """Parameter-server shard ``shard`` starting from ``params``; Ray restarts a crashed one with them (the
    a3c topology then restores the whole server from its latest checkpoint)."""
    name = f"raylab-a3c-{token}-shard-{shard}" if token else None
    make = partial(build_parameter_server, cfg, params, shard)
    return ActorSpec(ShardHost, (make,), Resources(cpus=cfg.params.shard_cpus), name=name)


def a3c_plan(cfg: RunConfig, spaces: EnvSpaces, resume: ResumeState | None) -> A3CPlan:
    token = uuid.uuid4().hex[:8]
    layout, bounds, initial = build_parameter_servers(cfg, spaces)
    shards = tuple(shard_spec(cfg, params, k, token) for k, params in enumerate(initial))
    in_process = cfg.topology.name == "local"  # one segment a turn, the workers taking turns
    return A3CPlan(
        shards=shards, layout=layout, bounds=bounds, initial=initial, num_workers=cfg.topology.num_workers,
        worker=partial(a3c_worker_spec, cfg, spaces, token), window=(1, None) if in_process else (None, A3C_WINDOW_S),
        max_restarts=cfg.topology.max_actor_restarts, incarnation=0 if resume is None else resume.incarnation,
        resumed_shards=None if resume is None else resume.learner["shards"], token=token,
    )  # fmt: skip

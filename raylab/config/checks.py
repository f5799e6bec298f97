"""``resolve``: a composed config in, a checked ``RunConfig`` out; and the checks that span sections.

Each dataclass checks its own fields as it is built (raylab/config/schema.py and its sections' modules); what
needs two sections at once, or the env registry (is the env id known, can a return threshold ever be
reached), is checked here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from raylab.config.algo import APPOConfig, DQNConfig, PPOConfig, SequenceConfig
from raylab.config.algorithms import ALGORITHMS, LOCAL_TOPOLOGY, TOPOLOGY_ALGOS
from raylab.config.applicability import check_applicable
from raylab.config.coerce import build, to_container
from raylab.config.policies import check_policies, policy_config
from raylab.config.schema import RunConfig
from raylab.envs.registry import check_env_config, check_every_start, env_spaces, family, max_return
from raylab.errors import ConfigError, check


def resolve(cfg: Mapping[str, Any], run_dir: str = ".") -> RunConfig:
    """Validate a composed config (DictConfig or plain mapping) into a frozen ``RunConfig``.

    Raises ``ConfigError`` (one line, names the fix) on unknown keys, wrong types, bad values, unknown env
    ids and stop conditions that can never trigger.
    """
    data = to_container(cfg)
    data.pop("hydra", None)
    data["run_dir"] = str(run_dir)
    for key in auto_keys(data):  # sized by a probe before resolve (raylab/builders/autosize.py)
        raise ConfigError(
            f"topology.{key}=auto is sized by python -m raylab.train's probe; from Python, call "
            f"raylab.builders.autosize.fill(config) first, or give a number"
        )
    run = build(RunConfig, data, "")
    if run.env.normalize_reward and run.env.normalize_reward_gamma is None:
        run = dataclasses.replace(run, env=dataclasses.replace(run.env, normalize_reward_gamma=run.algo.gamma))
    check_cross_fields(run)
    return run


AUTO_KEYS = ("num_workers", "envs_per_worker", "inference_actors")
"""Topology keys that may be ``auto``: sized on this machine by a probe (raylab/builders/autosize.py)."""


def auto_keys(data: Mapping[str, Any]) -> tuple[str, ...]:
    """The topology keys set to ``auto`` in a composed config (a plain mapping)."""
    topology = data.get("topology") or {}
    return tuple(k for k in AUTO_KEYS if topology.get(k) == "auto")


def check_r2d2(run: RunConfig, algo: DQNConfig) -> None:
    """algo=dqn with model.recurrent is R2D2: sequences in the replay, the expected-value loss."""
    if run.model.recurrent == "none":
        check(
            algo.sequence == SequenceConfig(),
            "algo.sequence sets R2D2's replay sequences, which need a recurrent Q network: add model.recurrent=lstm "
            "(or gru), or remove algo.sequence",
        )
        return
    check(
        algo.loss == "huber",
        f"algo.loss={algo.loss} with model.recurrent (R2D2) is not supported: R2D2 trains expected values with value "
        "rescaling; set algo.loss=huber",
    )
    check(
        not run.policies,
        "several policies with model.recurrent and algo=dqn (R2D2) are not supported yet: remove policies, or "
        "model.recurrent",
    )


CENTRAL_TOPOLOGIES = ("apex_dqn", "ppo", "appo")
"""The topologies whose rollout actors can send their observations to inference actors."""


def check_inference(run: RunConfig) -> None:
    """topology.inference=central where it can run, and its settings only with it."""
    topo = run.topology
    if not topo.central:
        defaults = {
            "inference_actors": 1,
            "inference_cpus": 1.0,
            "inference_device": "auto",
            "inference_transport": "auto",
        }
        for key, default in defaults.items():
            value = getattr(topo, key)
            check(
                value == default,
                f"topology.{key}={value} sets the inference actors of topology.inference=central: add "
                f"topology.inference=central, or remove it",
            )
        check(
            topo.env_splits <= 1,
            f"topology.env_splits={topo.env_splits} steps parts of a worker's envs while the others' observations are "
            f"acted on centrally: add topology.inference=central, or remove it",
        )
        return
    check(
        topo.name in CENTRAL_TOPOLOGIES,
        f"topology.inference=central serves the rollout actors of topology={'/'.join(CENTRAL_TOPOLOGIES)}; "
        f"topology={topo.name} acts in its own workers: remove topology.inference, or choose one of those",
    )
    check(
        not run.policies,
        "topology.inference=central serves one policy: remove topology.inference, or train one policy for every agent",
    )
    check(
        run.model.recurrent == "none",
        f"topology.inference=central serves feed-forward policies (model.recurrent={run.model.recurrent} keeps a "
        f"state per slot in its rollout actor): remove topology.inference, or model.recurrent",
    )


def check_cross_fields(run: RunConfig) -> None:
    """Checks that need more than one section, or the env family (raises ``ConfigError``)."""
    algos = TOPOLOGY_ALGOS[run.topology.name]
    runners = [t for t, a in TOPOLOGY_ALGOS.items() if run.algo.name in a and t != LOCAL_TOPOLOGY]
    check(
        run.algo.name in algos,
        f"topology={run.topology.name} runs {'/'.join(algos)}, not algo={run.algo.name}: "
        f"add algo={algos[0]}, or topology={'/'.join(runners) or 'local'} for algo={run.algo.name}",
    )
    info = ALGORITHMS[run.algo.name]
    if info.replay and run.replay.min_size < run.learner.batch_size:
        room = run.learner.batch_size <= run.replay.capacity  # else raising min_size would pass capacity
        fix = (
            "raise replay.min_size to at least it, or lower learner.batch_size"
            if room
            else (f"lower learner.batch_size (replay.capacity={run.replay.capacity} holds fewer)")
        )
        raise ConfigError(
            f"replay.min_size={run.replay.min_size} is below learner.batch_size={run.learner.batch_size}: {fix}"
        )
    check(
        not info.replay or run.replay.num_shards <= run.topology.num_workers,
        f"replay.num_shards={run.replay.num_shards} exceeds topology.num_workers={run.topology.num_workers} (each "
        f"worker writes to one shard): set replay.num_shards <= {run.topology.num_workers}",
    )
    if isinstance(run.algo, PPOConfig | APPOConfig):
        steps = run.topology.num_workers * run.topology.envs_per_worker * run.topology.rollout_length
        check(
            run.algo.minibatches <= steps,
            f"algo.minibatches={run.algo.minibatches} exceeds the {steps} steps of one round of rollouts: lower "
            f"algo.minibatches or raise topology.rollout_length",
        )
        bptt = run.algo.bptt
        if bptt is not None:
            check(
                run.model.recurrent != "none",
                f"algo.bptt={bptt} sets the sequence length of a recurrent model: add model.recurrent=lstm (or gru), "
                "or remove algo.bptt",
            )
            check(
                run.topology.rollout_length % bptt == 0,
                f"algo.bptt={bptt} must divide topology.rollout_length={run.topology.rollout_length} (the learner "
                f"cuts each chunk into sequences of bptt steps): e.g. algo.bptt={run.topology.rollout_length}",
            )
    if isinstance(run.algo, DQNConfig):
        check_r2d2(run, run.algo)
    check_applicable(run)
    check_inference(run)
    check_policies(run)
    check_env_config(run.env)
    if run.eval.env_options:
        try:
            check_env_config(run.eval_env)
        except ConfigError as err:
            raise ConfigError(f"eval.env_options: {err}") from None
        if env_spaces(run.eval_env) != env_spaces(run.env):  # the policy trained on env's spaces acts there
            raise ConfigError(
                f"eval.env_options={dict(run.eval.env_options)} change the env's observation or action space, "
                "which the trained policy acts in: set only options that keep them (e.g. Mario's stall_steps)"
            )
    stop = run.stop
    if (
        stop.env_steps is None and stop.seconds is None and stop.mean_return is None and stop.train_return is None
        and not stop.eval_extras
    ):  # fmt: skip
        raise ConfigError("no stop condition: set stop.env_steps, stop.seconds or stop.mean_return")
    bound = max_return(run.env)
    if stop.train_return is not None and bound is not None and stop.train_return > bound:
        raise ConfigError(
            f"stop.train_return={stop.train_return:g} can never trigger: {run.env.id} returns at most {bound:g} "
            f"per episode; set stop.train_return<={bound:g} or null"
        )
    if stop.mean_return is not None:
        if not run.eval.periodic:
            raise ConfigError(
                f"stop.mean_return={stop.mean_return} can never trigger: periodic evaluation is off; "
                f"set eval.every_seconds=10 or eval.every_env_steps=N"
            )
        bound = max_return(run.eval_env)  # stop.mean_return judges evaluation episodes
        if bound is not None and stop.mean_return > bound:
            raise ConfigError(
                f"stop.mean_return={stop.mean_return:g} can never trigger: {run.env.id} returns at most "
                f"{bound:g} per episode; set stop.mean_return<={bound:g} or null"
            )
    check_eval_extras(run)
    check_eval_starts(run)
    check_lr_schedule(run)
    check(
        not (run.eval.video and family(run.env).multi_agent),
        f"eval.video records one env's game, and env={run.env.family} is a multi-agent env, which has no video "
        f"yet: set eval.video=false",
    )


def check_eval_starts(run: RunConfig) -> None:
    """eval.starts=every: an env whose no-op starts raylab plays, and evaluations of whole rounds of them."""
    if run.eval.starts != "every":
        return
    check_every_start(run.eval_env)
    starts = run.env.noop_max + 1
    for key, episodes in (
        ("eval.episodes", run.eval.episodes), ("eval.confirm_episodes", run.eval.confirm_episodes),
        ("eval.final_episodes", run.eval.final_episodes),
    ):  # fmt: skip
        check(
            episodes % starts == 0,
            f"eval.starts=every plays each of the {starts} no-op starts (env.noop_max={run.env.noop_max}) once per "
            f"{starts} episodes: set {key}={starts} (or a multiple; got {episodes})",
        )


def check_lr_schedule(run: RunConfig) -> None:
    """A linear learner.lr_schedule (the run's, or a policy's) is measured against stop.env_steps."""
    prefixes = [("", run)] + [(f"policies.{name}.", policy_config(run, name)) for name in run.policies]
    for prefix, cfg in prefixes:
        check(
            cfg.learner.lr_schedule != "linear" or run.stop.env_steps is not None,
            f"{prefix}learner.lr_schedule=linear moves the lr over stop.env_steps, which is not set: set "
            f"stop.env_steps=N (the run stops on whichever of its conditions comes first), or "
            f"{prefix}learner.lr_schedule=constant",
        )


def check_eval_extras(run: RunConfig) -> None:
    """stop.eval_extras names episode values the env family reports, and a periodic evaluation judges them."""
    extras = run.stop.eval_extras or {}
    known = family(run.env).episode_extras
    for key in extras:
        if key not in known:
            fix = f"name one of {', '.join(known)} or remove" if known else "they report none: remove"
            raise ConfigError(
                f"stop.eval_extras.{key} can never trigger: env={run.env.family} episodes have no value '{key}'; "
                f"{fix} stop.eval_extras"
            )
    if extras and not run.eval.periodic:
        key = next(iter(extras))
        raise ConfigError(
            f"stop.eval_extras.{key} can never trigger: periodic evaluation is off; set eval.every_seconds=60 (or "
            f"eval.every_env_steps=N), or stop.eval_extras=null"
        )

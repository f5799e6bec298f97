"""``sampling``: the rollout path alone, against the env-only limit measured in the same run.

    python -m raylab.bench sampling +experiment=cartpole_appo --workers 1 2 --output benchmarks/sampling_cartpole.json

Three measurements, alternating over --rounds rounds (medians):
    env only   the experiment's vector env (same implementation, wrappers and envs per worker) stepped with
               uniformly random actions in this process: one core's limit
    in process one rollout worker (the same class the actors run) sampling chunks in this process, no Ray, loading
               a new weights version before each chunk as the sink's workers do: what the worker itself costs
               beyond the env (acting, chunk assembly), apart from any call or transport
    sampling   W rollout actors on Ray, each always with --calls chunk calls in flight (as APPO keeps them,
               topology.chunks_in_flight; several values alternate within each round); the driver
               is a sink that takes each chunk's stats, drops the chunk, and publishes a new weights version
               once per W chunks (a round), which the workers load before their next chunk
``efficiency = sampled agent steps/s / (W x env-only steps/s)``. The workers' own stage timers split their
time: ``env_share`` and ``inference_share`` (stepping the envs, acting), ``sync_share`` (loading weights) and
``transport_share``: the rest of the wall time of W workers (chunk assembly, serialization, the call's round
trip, waiting on the driver). Ray's start-up and each measurement's first second are not measured. The Ray side is
raylab/bench/sink.py.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from raylab.bench import plots
from raylab.bench.checks import count, duration, output_file
from raylab.bench.machine import machine_info


def add_parser(commands: Any) -> None:
    p = commands.add_parser("sampling", help="rollout actors alone (a sink for a learner) vs the env-only rate")
    p.add_argument("--workers", type=count, nargs="+", default=[1, 2])
    p.add_argument("--calls", type=count, nargs="+", default=[1], help="sample calls each actor has in flight")
    p.add_argument("--seconds", type=duration, default=8.0, help="measuring time per measurement per round")
    p.add_argument("--rounds", type=count, default=3)
    p.add_argument("--output", type=output_file, required=True, help="JSON to write; the PNG goes next to it")
    p.set_defaults(func=run)


def shares(timings: dict[str, float], workers: int, wall_s: float) -> dict[str, float]:
    """The workers' summed stage seconds over ``workers x wall_s``; transport is what the stages leave."""
    total = max(workers * wall_s, 1e-9)
    env, inference, sync = (timings.get(k, 0.0) / total for k in ("env", "inference", "weight_sync"))
    return {
        "env_share": env,
        "inference_share": inference,
        "sync_share": sync,
        "transport_share": max(0.0, 1.0 - env - inference - sync),
    }


def efficiency(sampled_per_s: float, workers: int, env_only_per_s: float) -> float:
    return sampled_per_s / (workers * env_only_per_s)


def _env_only(cfg: Any, seconds: float) -> float:
    import gymnasium as gym

    from raylab.envs.registry import make_vector_env

    venv = make_vector_env(cfg.env, cfg.topology.envs_per_worker, seed=cfg.seed)
    venv.reset()
    space, rng = venv.single_action_space, np.random.default_rng(0)

    def actions() -> np.ndarray:
        if isinstance(space, gym.spaces.Discrete):
            return rng.integers(0, int(space.n), venv.num_envs)
        assert isinstance(space, gym.spaces.Box)
        return rng.uniform(space.low, space.high, (venv.num_envs, *space.shape)).astype(np.float32)

    try:
        venv.step(actions())
        steps, start = 0, time.perf_counter()
        while (elapsed := time.perf_counter() - start) < seconds:
            venv.step(actions())
            steps += venv.num_envs
        return steps / elapsed
    finally:
        venv.close()


def _in_process(cfg: Any, spaces: Any, seconds: float) -> float:
    """Agent steps/s of one rollout worker sampling in this process, a new weights version before each chunk,
    on one torch thread as the rollout actors run."""
    import torch

    from raylab.builders import build_learner, build_rollout_worker

    weights = build_learner(cfg, spaces).get_weights()
    torch.set_num_threads(1)  # as a rollout actor runs (building the learner set learner.num_threads)
    worker = build_rollout_worker(cfg, spaces, 0)
    worker.set_weights(weights)
    worker.sample()
    steps, start = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - start) < seconds:
        weights = dataclasses.replace(weights, version=weights.version + 1)
        worker.set_weights(weights)
        steps += worker.sample()[1].num_steps
    worker.env.close()
    return steps / elapsed


def _sampling(cfg: Any, spaces: Any, workers: int, seconds: float, calls: int = 1) -> dict[str, float]:
    from raylab.bench.sink import sample_with_sink
    from raylab.builders import build_learner
    from raylab.remote.ray_backend import RayBackend

    cfg = dataclasses.replace(cfg, topology=dataclasses.replace(cfg.topology, num_workers=workers))
    weights = build_learner(cfg, spaces).get_weights()
    backend = RayBackend(cfg.ray, cfg.topology.max_actor_restarts)
    steps, timings, wall = sample_with_sink(backend, cfg, spaces, workers, seconds, weights, calls)
    return {"agent_steps_per_s": steps / wall, **shares(timings, workers, wall)}


def run(args: argparse.Namespace, overrides: list[str]) -> int:
    import torch

    from raylab.config import resolve
    from raylab.envs.registry import env_spaces
    from raylab.remote.runtime import shutdown_ray, start_local_ray
    from raylab.train import compose

    torch.set_num_threads(1)
    cfg = resolve(compose([*overrides, "logger.console=false"]), run_dir=tempfile.mkdtemp(prefix="raylab-sampling-"))
    spaces = env_spaces(cfg.env)
    start_local_ray(math.ceil(max(args.workers) * cfg.topology.worker_cpus) + 1)
    env_rates: list[float] = []
    in_process: list[float] = []
    shapes = [(w, c) for w in args.workers for c in args.calls]
    sampled: dict[tuple[int, int], list[dict[str, float]]] = {shape: [] for shape in shapes}
    try:
        for round_ in range(args.rounds):
            env_rates.append(_env_only(cfg, args.seconds))
            in_process.append(_in_process(cfg, spaces, args.seconds))
            for w, c in shapes if round_ % 2 == 0 else reversed(shapes):
                sampled[w, c].append(_sampling(cfg, spaces, w, args.seconds, c))
            print(f"round {round_ + 1}/{args.rounds} done", flush=True)
    finally:
        shutdown_ray()
    env_only = statistics.median(env_rates)
    worker_alone = statistics.median(in_process)
    print(f"in process: {worker_alone:,.0f} agent steps/s, {worker_alone / env_only:.1%} of env-only", flush=True)
    results: dict[str, Any] = {}
    for (w, c), rows in sampled.items():
        med = {k: statistics.median(r[k] for r in rows) for k in rows[0]}
        key = str(w) if args.calls == [1] else f"{w}, {c} in flight"
        results[key] = {
            **{k: round(v, 4 if k.endswith("share") else 1) for k, v in med.items()},
            "efficiency": round(efficiency(med["agent_steps_per_s"], w, env_only), 4),
            "rounds": [{k: round(v, 4) for k, v in r.items()} for r in rows],
        }
        r = results[key]
        print(
            f"{key} workers: {r['agent_steps_per_s']:,.0f} agent steps/s, efficiency {r['efficiency']:.1%} of "
            f"{w} x {env_only:,.0f} env-only; env {r['env_share']:.0%}, inference {r['inference_share']:.0%}, "
            f"sync {r['sync_share']:.0%}, transport {r['transport_share']:.0%}",
            flush=True,
        )
    report = {
        "benchmark": "sampling",
        "overrides": overrides,
        "envs_per_worker": cfg.topology.envs_per_worker,
        "rollout_length": cfg.topology.rollout_length,
        "calls": args.calls,
        "seconds": args.seconds,
        "rounds": args.rounds,
        "env_only_agent_steps_per_s": round(env_only, 1),
        "env_only_rounds": [round(v, 1) for v in env_rates],
        "in_process_agent_steps_per_s": round(worker_alone, 1),
        "in_process_efficiency": round(worker_alone / env_only, 4),
        "in_process_rounds": [round(v, 1) for v in in_process],
        "machine": machine_info(),
        "workers": results,
    }
    headline = {w: {k: r[k] for k in ("agent_steps_per_s", "efficiency")} for w, r in results.items()}
    plots.write_report(Path(args.output), report, plot, headline)
    return 0


def plot(report: dict[str, Any], path: Path) -> None:
    results = report["workers"]
    names = list(results)
    fig, ax = plots.figure(7, 4)
    x = np.arange(len(names))
    limit = [int(n.split(",")[0]) * report["env_only_agent_steps_per_s"] for n in names]
    sampled = [results[n]["agent_steps_per_s"] for n in names]
    ax.bar(x - 0.2, limit, 0.4, label="W x env only (the limit)", color="0.7")
    bars = ax.bar(x + 0.2, sampled, 0.4, label="sampled (rollout actors, a sink for the learner)")
    ax.bar_label(bars, labels=[f"{results[n]['efficiency']:.0%}" for n in names], fontsize=8, padding=2)
    ax.set_xticks(x, [f"{n} worker{'s' if n.split(',')[0] != '1' else ''}" for n in names], fontsize=8)
    ax.set_ylabel("agent steps / s")
    ax.set_title(f"sampling efficiency: {' '.join(report['overrides'])}")
    ax.legend(fontsize=8)
    plots.save(fig, path)

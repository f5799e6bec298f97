"""``envs``: single-process raw throughput of every env family — the physical limit later goals are held to.

    python -m raylab.bench envs --output benchmarks/envs.json

For each family, with the preprocessing and envs-per-worker of its experiment, four stages:
    raw      the family's bare env, one at a time, random actions
    wrapped  make_env: frame skip, grayscale, resize, frame stack, reward transform, episode statistics
    vector   make_vector_env with the experiment's envs_per_worker (EnvPool's native batch for Procgen)
    worker   one RolloutWorker.sample() loop: the vector env plus batched policy inference (the model of the
             experiment, one torch thread, as in a rollout actor) and chunk assembly
Agent steps/s and emulator frames/s (agent steps x frame skip) are reported separately. The stages are
measured in rounds, alternating, and each figure is the median over the rounds.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from raylab.bench import plots
from raylab.bench.checks import count, duration, output_file
from raylab.bench.machine import machine_info

FAMILIES = {
    "cartpole": "cartpole_dqn",
    "snake": "snake_dqn",
    "mario": "mario_dqn",
    "coinrun": "coinrun_dqn",
}
STAGES = ("raw", "wrapped", "vector", "worker")


def add_parser(commands: Any) -> None:
    p = commands.add_parser("envs", help="single-process raw steps/s per env family (raw, wrapped, vector, worker)")
    p.add_argument("--families", nargs="+", default=list(FAMILIES), choices=list(FAMILIES))
    p.add_argument("--seconds", type=duration, default=3.0, help="measuring time per stage per round")
    p.add_argument("--rounds", type=count, default=3)
    p.add_argument("--output", type=output_file, required=True, help="JSON to write; the PNG goes next to it")
    p.set_defaults(func=run)


def _timed(step: Callable[[], int], seconds: float) -> float:
    """Agent steps per second of calling ``step`` (which returns the steps it took) for ``seconds``."""
    step()  # warm-up (first reset, lazy allocations)
    steps, start = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - start) < seconds:
        steps += step()
    return steps / elapsed


def _stages(experiment: str) -> tuple[dict[str, Callable[[], int]], dict[str, Any]]:
    import torch

    from raylab.builders import build_rollout_worker
    from raylab.config import resolve
    from raylab.envs.registry import env_spaces, family, make_env, make_vector_env
    from raylab.train import compose

    torch.set_num_threads(1)
    cfg = resolve(compose([f"+experiment={experiment}", "logger.console=false"]), run_dir="/tmp/raylab-bench-envs")
    spaces = env_spaces(cfg.env)
    assert spaces.num_actions is not None
    rng = np.random.default_rng(0)
    num_actions, num_envs = spaces.num_actions, cfg.topology.envs_per_worker

    def single(env: Any) -> Callable[[], int]:
        env.reset(seed=0)

        def step() -> int:
            for _ in range(32):
                _, _, terminated, truncated, _ = env.step(int(rng.integers(num_actions)))
                if terminated or truncated:
                    env.reset()
            return 32

        return step

    venv = make_vector_env(cfg.env, num_envs, seed=0)
    venv.reset()

    def vector_step() -> int:
        for _ in range(8):
            venv.step(rng.integers(num_actions, size=num_envs))
        return 8 * num_envs

    worker = build_rollout_worker(cfg, spaces, worker_id=0)  # its freshly initialized network acts
    worker_seconds: dict[str, float] = {}

    def worker_step() -> int:
        chunk, stats = worker.sample()
        for stage, seconds in stats.timings.items():
            worker_seconds[stage] = worker_seconds.get(stage, 0.0) + seconds
        return chunk.size

    stages = {
        "raw": single(family(cfg.env).make_raw(cfg.env)),
        "wrapped": single(make_env(cfg.env, seed=0)),
        "vector": vector_step,
        "worker": worker_step,
    }
    info = {
        "experiment": experiment,
        "env": f"{cfg.env.family}:{cfg.env.id}",
        "obs_shape": list(spaces.obs_shape),
        "obs_dtype": str(spaces.obs_dtype),
        "frame_skip": cfg.env.frame_skip,
        "envs_per_worker": num_envs,
        "rollout_length": cfg.topology.rollout_length,
        "model": cfg.model.encoder,
        "worker_seconds": worker_seconds,
    }
    return stages, info


def run(args: argparse.Namespace, overrides: list[str]) -> int:
    if overrides:
        raise SystemExit(f"raylab bench envs: error: unexpected arguments {overrides}")
    results: dict[str, Any] = {}
    built = {name: _stages(FAMILIES[name]) for name in args.families}
    samples: dict[str, dict[str, list[float]]] = {n: {s: [] for s in STAGES} for n in args.families}
    for round_ in range(args.rounds):
        for name in args.families:
            stages, _ = built[name]
            for stage in STAGES:
                samples[name][stage].append(_timed(stages[stage], args.seconds))
        print(f"round {round_ + 1}/{args.rounds} done", flush=True)
    for name in args.families:
        _, info = built[name]
        shares = info.pop("worker_seconds")
        total = sum(shares.values()) or 1.0
        frames = info["frame_skip"]
        stage_results = {}
        for stage in STAGES:
            values = samples[name][stage]
            median = statistics.median(values)
            # the raw env is one emulator frame per step; every other stage steps frame_skip frames
            per_step = 1 if stage == "raw" else frames
            stage_results[stage] = {
                "agent_steps_per_s": round(median, 1),
                "frames_per_s": round(median * per_step, 1),
                "rounds": [round(v, 1) for v in values],
            }
        results[name] = {
            **info,
            "stages": stage_results,
            "worker_time_share": {k: round(v / total, 3) for k, v in sorted(shares.items())},
        }
        line = ", ".join(
            f"{s} {r['agent_steps_per_s']:,.0f} steps/s ({r['frames_per_s']:,.0f} frames/s)"
            for s, r in stage_results.items()
        )
        print(f"{name}: {line}", flush=True)
    report = {
        "benchmark": "envs",
        "seconds_per_stage": args.seconds,
        "rounds": args.rounds,
        "machine": machine_info(),
        "families": results,
    }
    output = Path(args.output)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(report, indent=2) + "\n")
    plot(results, output.with_suffix(".png"))
    print(f"wrote {output} and {output.with_suffix('.png')}")
    return 0


def plot(results: dict[str, Any], path: Path) -> None:
    names = list(results)
    fig, ax = plots.figure(8, 4)
    width = 0.2
    for i, stage in enumerate(STAGES):
        values = [results[n]["stages"][stage]["agent_steps_per_s"] for n in names]
        bars = ax.bar(np.arange(len(names)) + (i - 1.5) * width, values, width, label=stage)
        ax.bar_label(bars, labels=[f"{v:,.0f}" for v in values], fontsize=6, rotation=90, padding=2)
    ax.set_yscale("log")
    top = max(r["stages"][s]["agent_steps_per_s"] for r in results.values() for s in STAGES)
    ax.set_ylim(top=top * 8)
    ax.set_xticks(np.arange(len(names)), [f"{n}\n({results[n]['envs_per_worker']} envs/worker)" for n in names])
    ax.set_ylabel("agent steps / s (log)")
    ax.set_title("raylab bench envs: single process, one core")
    ax.legend(fontsize=8)
    plots.save(fig, path)

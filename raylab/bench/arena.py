"""``arena``: the multi-snake arena's throughput with 1, 4 and 16 snakes per board, raw and end to end.

    python -m raylab.bench arena --snakes 1 4 16 --output benchmarks/snake_arena_throughput.json

For each number of snakes N (board side ``dim(N)``, so every snake has about as much room as on Snake's
10x10 board; ``--slots`` snakes per worker in all, i.e. slots / N boards):
    raw      SnakeArena.step with uniformly random actions, one process (agent steps/s per core); its
             finished episodes give the uniformly random policy's return and foods per episode, the baseline
             the learning runs are held to
    worker   one RolloutWorker.sample() loop of snake_arena_ppo's policy (one torch thread)
    worker_2_policies   the same worker with two policies, even and odd snakes (N >= 2): one batched forward
             pass per policy and step, and the chunk cut in two (sample_each): the rollout side's cost of a
             second policy at the same agents
    e2e      ``python -m raylab.train +experiment=snake_arena_ppo`` with that arena for --e2e-seconds (2 rollout
             actors and the learner on Ray): agent steps/s from its benchmark_metrics.json
raw and worker alternate over --rounds rounds (medians); the e2e runs alternate N over --e2e-repeats.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from raylab.bench import plots
from raylab.bench.checks import count, duration, output_file
from raylab.bench.machine import machine_info


def add_parser(commands: Any) -> None:
    p = commands.add_parser("arena", help="snake arena agent steps/s with N snakes per board: raw, worker, e2e")
    p.add_argument("--snakes", type=count, nargs="+", default=[1, 4, 16])
    p.add_argument("--slots", type=count, default=64, help="snakes per rollout worker (boards = slots / snakes)")
    p.add_argument("--seconds", type=duration, default=3.0, help="measuring time per stage per round")
    p.add_argument("--rounds", type=count, default=3)
    p.add_argument("--e2e-seconds", type=float, default=40.0, help="training time of each end-to-end run (0: none)")
    p.add_argument("--e2e-repeats", type=int, default=1)
    p.add_argument("--output", type=output_file, required=True, help="JSON to write; the PNG goes next to it")
    p.set_defaults(func=run)


def board_dim(snakes: int) -> int:
    """10 for one snake (Snake's board), then about 49 cells per snake."""
    return max(10, round(7 * math.sqrt(snakes)))


def arena_overrides(snakes: int, slots: int) -> list[str]:
    if slots % snakes:
        raise SystemExit(f"raylab bench arena: error: --slots {slots} is not a multiple of {snakes} snakes")
    return [
        f"env.options.num_snakes={snakes}", f"env.options.dim={board_dim(snakes)}",
        f"topology.envs_per_worker={slots // snakes}",
    ]  # fmt: skip


def _timed(step: Callable[[], int], seconds: float) -> float:
    step()
    steps, start = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - start) < seconds:
        steps += step()
    return steps / elapsed


def _stages(snakes: int, slots: int) -> tuple[dict[str, Callable[[], int]], list[dict[str, float]]]:
    import torch

    from raylab.builders import build_rollout_worker
    from raylab.config import PolicyConfig, resolve
    from raylab.config.policies import check_policies
    from raylab.envs.registry import env_spaces, make_vector_env
    from raylab.train import compose

    torch.set_num_threads(1)
    overrides = ["+experiment=snake_arena_ppo", "logger.console=false", *arena_overrides(snakes, slots)]
    cfg = resolve(compose(overrides), run_dir=tempfile.mkdtemp(prefix="raylab-bench-arena-"))
    spaces = env_spaces(cfg.env)
    venv = make_vector_env(cfg.env, cfg.topology.envs_per_worker, seed=0)
    venv.reset()
    rng = np.random.default_rng(0)
    episodes: list[dict[str, float]] = []

    def raw() -> int:
        for _ in range(8):
            episodes.extend(e for _, e in venv.step(rng.integers(0, 3, venv.num_envs)).episodes)
        return 8 * venv.num_envs

    worker = build_rollout_worker(cfg, spaces, worker_id=0)

    def worker_step() -> int:
        chunk, _ = worker.sample()
        return chunk.size

    stages = {"raw": raw, "worker": worker_step}
    if snakes >= 2:
        mapping = {"snake_*[02468]": "even", "snake_*[13579]": "odd"}  # (Hydra's override grammar takes no [)
        policies = {"even": PolicyConfig(), "odd": PolicyConfig()}
        cfg2 = dataclasses.replace(cfg, policies=policies, policy_mapping=mapping)
        check_policies(cfg2)
        worker2 = build_rollout_worker(cfg2, spaces, worker_id=0)

        def two_policies() -> int:
            chunks, _ = worker2.sample_each()
            return sum(c.size for c in chunks)

        stages["worker_2_policies"] = two_policies
    return stages, episodes


def _e2e(snakes: int, slots: int, seconds: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="raylab-arena-e2e-") as out:
        cmd = [
            sys.executable, "-m", "raylab.train", "+experiment=snake_arena_ppo", *arena_overrides(snakes, slots),
            f"stop.seconds={seconds}", "eval.every_seconds=null", "eval.final_episodes=8", "logger.console=false",
            f"hydra.run.dir={out}",
        ]  # fmt: skip
        env = {**os.environ, "WANDB_MODE": "disabled"}
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
        if proc.returncode != 0:
            raise SystemExit(f"raylab bench arena: the e2e run failed: {proc.stderr.strip()[-500:]}")
        bm = json.loads((Path(out) / "benchmark_metrics.json").read_text())
    return {
        "agent_steps_per_s": bm["throughput"]["agent_steps_per_s"],
        "train_seconds": round(bm["duration_hours"] * 3600, 1),
    }


def run(args: argparse.Namespace, overrides: list[str]) -> int:
    if overrides:
        raise SystemExit(f"raylab bench arena: error: unexpected arguments {overrides}")
    built = {n: _stages(n, args.slots) for n in args.snakes}
    samples: dict[int, dict[str, list[float]]] = {n: {stage: [] for stage in built[n][0]} for n in args.snakes}
    for round_ in range(args.rounds):
        for n in args.snakes:
            for stage, fn in built[n][0].items():
                samples[n][stage].append(_timed(fn, args.seconds))
        print(f"round {round_ + 1}/{args.rounds} done", flush=True)
    e2e: dict[int, list[dict[str, Any]]] = {n: [] for n in args.snakes}
    if args.e2e_seconds > 0:
        for _ in range(args.e2e_repeats):
            for n in args.snakes:
                e2e[n].append(_e2e(n, args.slots, args.e2e_seconds))
                print(f"e2e {n} snakes: {e2e[n][-1]['agent_steps_per_s']:,.0f} agent steps/s", flush=True)
    results: dict[str, Any] = {}
    for n in args.snakes:
        episodes = built[n][1]
        results[str(n)] = {
            "dim": board_dim(n),
            "boards_per_worker": args.slots // n,
            "raw_agent_steps_per_s": round(statistics.median(samples[n]["raw"]), 1),
            "worker_agent_steps_per_s": round(statistics.median(samples[n]["worker"]), 1),
            "worker_2_policies_agent_steps_per_s": (
                round(statistics.median(samples[n]["worker_2_policies"]), 1)
                if samples[n].get("worker_2_policies")
                else None
            ),
            "rounds": {stage: [round(v, 1) for v in values] for stage, values in samples[n].items()},
            "e2e_agent_steps_per_s": (
                round(statistics.median(r["agent_steps_per_s"] for r in e2e[n]), 1) if e2e[n] else None
            ),
            "e2e_runs": e2e[n],
            "random_policy": {
                "episodes": len(episodes),
                "return_mean": round(float(np.mean([e["return"] for e in episodes])), 3),
                "foods_per_episode": round(float(np.mean([e["score"] for e in episodes])), 3),
                "length_mean": round(float(np.mean([e["length"] for e in episodes])), 2),
            },
        }
        r = results[str(n)]
        if r["worker_2_policies_agent_steps_per_s"]:  # same run, alternating rounds: the ratio of medians
            r["two_policies_vs_one"] = round(
                r["worker_2_policies_agent_steps_per_s"] / r["worker_agent_steps_per_s"], 3
            )
        print(
            f"{n} snakes ({r['dim']}x{r['dim']}): raw {r['raw_agent_steps_per_s']:,.0f}, worker "
            f"{r['worker_agent_steps_per_s']:,.0f} (two policies: {r.get('two_policies_vs_one')}x), e2e "
            f"{r['e2e_agent_steps_per_s']} agent steps/s; random policy "
            f"{r['random_policy']['foods_per_episode']} foods per episode",
            flush=True,
        )
    report = {
        "benchmark": "arena",
        "experiment": "snake_arena_ppo",
        "slots_per_worker": args.slots,
        "seconds_per_stage": args.seconds,
        "rounds": args.rounds,
        "e2e_seconds": args.e2e_seconds,
        "machine": machine_info(),
        "snakes": results,
    }
    headline = {n: {k: r[k] for k in ("raw_agent_steps_per_s", "e2e_agent_steps_per_s")} for n, r in results.items()}
    plots.write_report(Path(args.output), report, plot, headline)
    return 0


def plot(report: dict[str, Any], path: Path) -> None:
    results = report["snakes"]
    names = list(results)
    fig, ax = plots.figure(7, 4)
    stages = [("raw_agent_steps_per_s", "raw env"), ("worker_agent_steps_per_s", "rollout worker"),
              ("worker_2_policies_agent_steps_per_s", "rollout worker, 2 policies"),
              ("e2e_agent_steps_per_s", "end to end (snake_arena_ppo)")]  # fmt: skip
    width = 0.2
    for i, (key, label) in enumerate(stages):
        values = [results[n].get(key) or 0.0 for n in names]
        bars = ax.bar(np.arange(len(names)) + (i - 1.5) * width, values, width, label=label)
        ax.bar_label(bars, labels=[f"{v:,.0f}" for v in values], fontsize=7, padding=2)
    ax.set_xticks(np.arange(len(names)), [f"{n} snakes/board\n{results[n]['dim']}x{results[n]['dim']}" for n in names])
    ax.set_ylabel("agent steps / s")
    ax.set_yscale("log")
    ax.set_title(f"snake arena: {report['slots_per_worker']} snakes per worker, one core per process")
    ax.legend(fontsize=8)
    plots.save(fig, path)

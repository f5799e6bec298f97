"""``timed``: seed 003's fixed-duration run, sequential or parallel, with everything the comparison needs.

    python -m raylab.bench timed --duration-hours 0.5 --mode sequential --output-dir runs/seq_s0 \\
        +experiment=coinrun_ppo seed=0
    python -m raylab.bench timed --duration-hours 0.5 --mode parallel --output-dir runs/par_s0 \\
        +experiment=coinrun_ppo seed=0

Both modes train the same config for exactly the given training time (Ray start-up and the final
evaluation are outside it) and stop on nothing else. ``parallel`` runs the experiment's own Ray topology
(ppo, appo, apex_dqn or a3c); ``sequential`` runs the same algorithm, workers and envs in one process with no
Ray (``topology=local``: the workers take turns), and torch there uses every core (``learner.num_threads``,
like seed 003's ``--num-threads``) unless you set it. Periodic greedy evaluation is off in both, so neither
side spends training time on it; the learning measure is the training episodes' return, and a greedy
evaluation of the final weights runs after the clock stops.

The output dir gets what seed 003's guide lists: benchmark_metrics.json (its fields, plus throughput,
losses, resource use of the whole process tree and the machine), config.yaml, checkpoints/ (periodic
step_*.pt and final.pt) and metrics.jsonl (one row per report interval). ``python -m raylab.bench compare``
reads two or more of these dirs.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from raylab.bench.machine import machine_info
from raylab.driver.outputs import atomic_write
from raylab.driver.resources import available_cores
from raylab.errors import ConfigError

MODES = ("sequential", "parallel")


def add_parser(commands: Any) -> None:
    p = commands.add_parser("timed", help="train for a fixed time, sequential or parallel (seed 003's format)")
    p.add_argument("--duration-hours", type=float, required=True, help="training time, e.g. 0.25 for 15 minutes")
    p.add_argument("--mode", choices=MODES, required=True, help="sequential: one process, no Ray; parallel: Ray")
    p.add_argument("--output-dir", required=True, help="a new directory for this run's outputs")
    p.add_argument(
        "--checkpoint-every-minutes",
        type=float,
        default=None,
        help="periodic checkpoints (default: every fifth of the duration, at least 1 minute)",
    )
    p.set_defaults(func=run)


def timed_overrides(
    overrides: list[str], mode: str, duration_hours: float, checkpoint_every_s: float, cores: int, layout: str
) -> list[str]:
    """The user's overrides plus what makes a timed run: stop on time only, no periodic eval, and for
    ``sequential`` the serial topology with the parallel config's worker layout (``layout``: its
    num_workers, envs_per_worker and rollout_length as overrides) and torch on every core."""
    keys = {o.lstrip("+~").partition("=")[0] for o in overrides}
    forced = [
        f"stop.seconds={duration_hours * 3600.0:.3f}",
        "stop.env_steps=null",
        "stop.mean_return=null",
        "stop.train_return=null",
        "stop.eval_extras=null",
        "eval.every_seconds=null",
        "eval.every_env_steps=null",
        f"checkpoint.every_seconds={checkpoint_every_s:.3f}",
    ]
    if mode == "sequential":
        forced += ["topology=local", *layout.split()]
        if "learner.num_threads" not in keys:
            forced.append(f"learner.num_threads={cores}")
    return [*overrides, *forced]


def run(args: argparse.Namespace, overrides: list[str]) -> int:
    from raylab.config import resolve
    from raylab.driver.outputs import check_not_under_a_file, run_files
    from raylab.train import EXIT_INTERRUPTED, check_overrides, compose
    from raylab.train import run as train

    if args.duration_hours <= 0:
        raise ConfigError(f"--duration-hours must be > 0, got {args.duration_hours:g}: e.g. --duration-hours 0.25")
    out = Path(args.output_dir)
    check_not_under_a_file(out, "--output-dir")
    if run_files(out) if out.is_dir() else []:
        raise ConfigError(f"--output-dir {out} already holds a run: choose a new directory (nothing was changed)")
    every_s = (
        args.checkpoint_every_minutes * 60.0
        if args.checkpoint_every_minutes is not None
        else max(60.0, args.duration_hours * 3600.0 / 5)
    )
    if every_s <= 0:
        raise ConfigError("--checkpoint-every-minutes must be > 0")
    check_overrides(overrides)
    base = resolve(compose(overrides), str(out))
    if args.mode == "parallel" and base.topology.name == "local":
        raise ConfigError(
            "--mode parallel needs a Ray topology but the config has topology=local: drop that override or name "
            "one (topology=ppo, appo, apex_dqn or a3c)"
        )
    t = base.topology
    # topology=local brings its own defaults; the layout of the config as given is carried over explicitly
    layout = f"topology.num_workers={t.num_workers} topology.envs_per_worker={t.envs_per_worker} "
    layout += f"topology.rollout_length={t.rollout_length}"
    full = timed_overrides(overrides, args.mode, args.duration_hours, every_s, available_cores(), layout)
    cfg = resolve(compose(full), str(out))
    total_envs = cfg.topology.num_workers * cfg.topology.envs_per_worker
    print(
        f"raylab bench timed: {args.mode}, {args.duration_hours * 60:g} min, topology={cfg.topology.name}, "
        f"{cfg.topology.num_workers} workers x {cfg.topology.envs_per_worker} envs, outputs in {out}",
        flush=True,
    )
    summary = train(cfg)
    metrics_path = out / "benchmark_metrics.json"
    metrics = json.loads(metrics_path.read_text())
    metrics["training_mode"] = args.mode
    metrics["benchmark"] = {
        "command": "timed",
        "mode": args.mode,
        "requested_duration_hours": args.duration_hours,
        "overrides": overrides,
        "timed_overrides": full[len(overrides) :],
        "total_envs": total_envs,
        "machine": machine_info(),
    }
    atomic_write(metrics_path, json.dumps(metrics, indent=2) + "\n")
    return EXIT_INTERRUPTED if summary.stop_reason == "interrupted" else 0

"""``timer_overhead``: what per-stage timing costs, per stage and end to end.

    python -m raylab.bench timer_overhead --output benchmarks/timer_overhead.json

Two measurements, in one run:
- **micro**: nanoseconds per ``with timer.stage(name):`` for raylab's StageTimer (a reused ``__slots__``
  context manager per stage name), the same timer disabled (``logger.timing=false``), the generator-based
  ``contextlib.contextmanager`` timer raylab used before, and an empty loop (the floor); medians over rounds.
- **end to end**: the same training run with ``logger.timing=true`` and ``false``, alternated round by
  round, each in a fresh ``python -m raylab.train`` process; throughput is training-time env steps/s and
  updates/s from benchmark_metrics.json. Variants: ``local`` (cartpole_dqn in one process, where any
  per-step cost lands directly on throughput) and ``apex_free`` (cartpole_dqn on Ray with the rate limiter
  off, so the rollout actors step as fast as they can: the per-step timers' worst case on a real env).

The ratio timing-on / timing-off is the overhead figure the README quotes (1.0 = free; below 1 = slower).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from raylab.bench import plots
from raylab.bench.checks import count, duration, output_file
from raylab.bench.machine import machine_info
from raylab.metrics.timing import StageTimer

VARIANTS: dict[str, tuple[str, ...]] = {
    "local": ("+experiment=cartpole_dqn", "topology=local"),
    "apex_free": ("+experiment=cartpole_dqn", "replay.samples_per_insert=0"),
}
COMMON = ("stop.mean_return=null", "eval.every_seconds=null", "eval.final_episodes=0", "logger.console=false")


class GeneratorStageTimer:
    """The timer raylab had before (kept here as the 'before' of the micro measurement)."""

    def __init__(self) -> None:
        self._seconds: defaultdict[str, float] = defaultdict(float)

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self._seconds[name] += time.perf_counter() - start


def add_parser(commands: Any) -> None:
    p = commands.add_parser("timer_overhead", help="cost of per-stage timing: ns per stage, and a run on vs off")
    p.add_argument("--rounds", type=count, default=3, help="end-to-end runs per variant and setting (alternating)")
    p.add_argument("--seconds", type=duration, default=20.0, help="training seconds per run")
    p.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    p.add_argument("--micro-iterations", type=int, default=200_000)
    p.add_argument("--runs-dir", default=None, help="where the runs write (default outputs/bench/<output stem>)")
    p.add_argument("--output", type=output_file, required=True, help="JSON to write; the PNG goes next to it")
    p.set_defaults(func=run)


def micro(
    iterations: int,
    rounds: int = 7,
    summary: Callable[[list[float]], float] = statistics.median,
    clock: Callable[[], float] = time.perf_counter,
) -> dict[str, float]:
    """ns per stage entry + exit for each timer (and an empty loop): the median over ``rounds`` (``summary``:
    another statistic; the least is the one a busy machine disturbs least). ``clock``: wall time by default;
    ``time.thread_time`` counts only the CPU this thread was given, which another process on the core cannot
    inflate by preempting it."""

    def timed(timer: Any) -> float:
        start = clock()
        for _ in range(iterations):
            with timer.stage("env"):
                pass
        return (clock() - start) / iterations * 1e9

    def empty() -> float:
        start = clock()
        for _ in range(iterations):
            pass
        return (clock() - start) / iterations * 1e9

    samples: dict[str, list[float]] = defaultdict(list)
    for _ in range(rounds):
        samples["contextmanager (before)"].append(timed(GeneratorStageTimer()))
        samples["StageTimer"].append(timed(StageTimer()))
        samples["StageTimer disabled"].append(timed(StageTimer(enabled=False)))
        samples["empty loop"].append(empty())
    return {k: summary(v) for k, v in samples.items()}


def train_run(overrides: list[str], run_dir: Path) -> dict[str, Any]:
    env = {**os.environ, "WANDB_MODE": os.environ.get("WANDB_MODE", "disabled")}
    cmd = [sys.executable, "-m", "raylab.train", *overrides, f"hydra.run.dir={run_dir}"]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}): {proc.stderr[-2000:]}")
    bm = json.loads((run_dir / "benchmark_metrics.json").read_text())
    seconds = bm["duration_hours"] * 3600
    return {
        "run_dir": str(run_dir),
        "train_s": seconds,
        "env_steps_per_s": bm["total_timesteps"] / seconds,
        "updates_per_s": bm["total_updates"] / seconds,
    }


def run(args: argparse.Namespace, overrides: list[str]) -> int:
    output = Path(args.output)
    runs_dir = Path(args.runs_dir or Path("outputs") / "bench" / output.stem)
    micro_ns = micro(args.micro_iterations)
    print("ns per stage: " + ", ".join(f"{k} {v:.0f}" for k, v in micro_ns.items()), flush=True)
    results: dict[str, dict[str, list[dict[str, Any]]]] = {v: {"on": [], "off": []} for v in args.variants}
    for r in range(args.rounds):
        for variant in args.variants:
            for setting in ("on", "off") if r % 2 == 0 else ("off", "on"):
                timing = "true" if setting == "on" else "false"
                extra = [*VARIANTS[variant], *COMMON, f"stop.seconds={args.seconds}", "stop.env_steps=null",
                         f"logger.timing={timing}", f"seed={r}", *overrides]  # fmt: skip
                result = train_run(extra, runs_dir / f"{variant}_{setting}_{r}")
                results[variant][setting].append(result)
                print(f"round {r} {variant:10s} timing {setting:3s}: {result['env_steps_per_s']:8.0f} env steps/s "
                      f"{result['updates_per_s']:7.1f} updates/s", flush=True)  # fmt: skip
    summary = {}
    for variant, by in results.items():
        on = {k: statistics.median(x[k] for x in by["on"]) for k in ("env_steps_per_s", "updates_per_s")}
        off = {k: statistics.median(x[k] for x in by["off"]) for k in ("env_steps_per_s", "updates_per_s")}
        summary[variant] = {
            "timing_on": on,
            "timing_off": off,
            "ratio_on_over_off": {k: on[k] / off[k] for k in on},
            "overrides": [*VARIANTS[variant], *COMMON],
        }
    report = {
        "benchmark": "timer_overhead",
        "protocol": {
            "rounds": args.rounds,
            "seconds": args.seconds,
            "statistic": "median over rounds; on/off alternated each round",
            "extra_overrides": overrides,
        },
        "machine": machine_info(),
        "micro_ns_per_stage": micro_ns,
        "micro_speedup_over_contextmanager": micro_ns["contextmanager (before)"] / micro_ns["StageTimer"],
        "summary": summary,
        "runs": results,
    }
    plots.write_report(output, report, _plot, {"micro_ns_per_stage": micro_ns, "summary": summary})
    return 0


def _plot(report: dict[str, Any], path: Path) -> None:
    fig, axes = plots.figure(width=11, height=3.6, rows=1, cols=2)
    ax_micro, ax_e2e = axes[0]
    names = list(report["micro_ns_per_stage"])
    ax_micro.barh(names, [report["micro_ns_per_stage"][n] for n in names], color="#4c72b0")
    for y, n in enumerate(names):
        ax_micro.text(report["micro_ns_per_stage"][n], y, f" {report['micro_ns_per_stage'][n]:.0f}", va="center")
    ax_micro.set_xlabel("ns per `with timer.stage(...)` (median)")
    ax_micro.set_title("timer cost per stage")
    labels: list[str] = []
    for variant, by in report["runs"].items():
        base = report["summary"][variant]["timing_off"]["env_steps_per_s"]
        for setting, color in (("on", "#dd8452"), ("off", "#55a868")):
            label = f"{variant} ({base:,.0f}/s)\ntiming {setting}"
            y = len(labels)
            labels.append(label)
            values = [x["env_steps_per_s"] / base for x in by[setting]]
            ax_e2e.scatter(values, [y] * len(values), c=color)
            median = report["summary"][variant][f"timing_{setting}"]["env_steps_per_s"] / base
            ax_e2e.plot([median, median], [y - 0.3, y + 0.3], color="black")
            if setting == "on":
                ax_e2e.text(median, y + 0.35, f"median on/off = {median:.3f}", fontsize=8, ha="center")
    ax_e2e.axvline(1.0, color="grey", linestyle="--", linewidth=0.8)
    ax_e2e.set_yticks(range(len(labels)), labels, fontsize=7)
    ax_e2e.set_ylim(-0.6, len(labels) - 0.2)
    ax_e2e.set_xlabel("env steps/s ÷ timing-off median (dot: one run, bar: median)")
    ax_e2e.set_title("same run, timing on vs off")
    plots.save(fig, path)

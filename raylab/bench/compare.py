"""``compare``: seed 003's comparison of sequential and parallel timed runs.

    python -m raylab.bench compare --sequential runs/seq_s0 runs/seq_s1 --parallel runs/par_s0 runs/par_s1 \\
        --output benchmarks/coinrun_ppo_comparison.png

Each side takes one or more run dirs written by ``python -m raylab.bench timed`` (or any raylab run: they all
write benchmark_metrics.json and metrics.jsonl). Writes:

- a console table, sequential against parallel (mean ± standard deviation over the seeds of a side);
- the 4-panel PNG at ``--output``: episode return vs env steps, FPS over time, policy loss vs env steps, and
  cumulative env steps vs wall clock (each run thin, the side's mean thick with its spread shaded);
- ``comparison_report.txt`` beside it: the table, speed-up (parallel FPS / sequential FPS), efficiency gain
  ((parallel timesteps/hour - sequential) / sequential), sample efficiency (return at the same env-step count,
  and env steps and wall time to the same return), memory per worker, where each side's time went, and with
  two or more runs per side Welch's t-test (scipy) on FPS and on return;
- the same numbers as JSON beside the PNG (``<output>.json``).

The numbers are raylab.bench.compare_analysis's (``load_run``, ``analyse``); this module writes them out.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from raylab.bench import plots
from raylab.bench.compare_analysis import RETURN_KEY, SCALARS, SIDES, Run, Stat, analyse, divide, load_run
from raylab.errors import ConfigError

LOSS_KEYS = ("learner/policy_loss", "learner/loss")
"""The policy loss (PPO, APPO, A3C) or, for DQN, the TD loss."""


def table_text(result: dict[str, Any], n: dict[str, int]) -> str:
    seq_head, par_head = f"sequential (n={n['sequential']})", f"parallel (n={n['parallel']})"
    header = f"{'metric':<24} {seq_head:>24} {par_head:>24} {'par/seq':>8}"
    lines = [header, "-" * len(header)]
    for name, fmt, _ in SCALARS:
        cells = result["table"][name]
        texts = [Stat(cells[s]["values"]).text(fmt) for s in SIDES]
        ratio = divide(cells["parallel"]["mean"], cells["sequential"]["mean"])
        ratio_text = f"{ratio:.2f}x" if ratio is not None else ""
        lines.append(f"{name:<24} {texts[0]:>24} {texts[1]:>24} {ratio_text:>8}")
    return "\n".join(lines)


def _fmt(value: float | None, fmt: str, unit: str = "") -> str:
    return "n/a" if value is None else f"{value:{fmt}}{unit}"


def report_text(result: dict[str, Any], seq: Sequence[Run], par: Sequence[Run]) -> str:
    """comparison_report.txt: what was compared, the table, the key metrics, where the time went, the t-tests."""
    n = {"sequential": len(seq), "parallel": len(par)}
    lines = [*_setup_lines(result, seq, par), "", table_text(result, n), "", "Key metrics", *_key_metric_lines(result)]
    lines += ["", "Where the time went (seconds summed over the run's workers and learner; from metrics.jsonl)"]
    for side in SIDES:
        stages = result["stage_seconds"][side]
        parts = ", ".join(f"{k.removesuffix('_s')} {v:.0f}" for k, v in stages.items()) or "not recorded"
        lines.append(f"  {side}: {parts}")
    lines += ["", "Statistics (Welch's t-test, parallel against sequential)"]
    for key, test in result["ttest"].items():
        body = test.get("note") or f"t = {test['t']:.2f}, p = {test['p']:.3g} (n = {test['n'][0]} vs {test['n'][1]})"
        lines.append(f"  {key}: {body}")
    lines += ["", verdict(result["speedup"])]
    return "\n".join(lines) + "\n"


def _setup_lines(result: dict[str, Any], seq: Sequence[Run], par: Sequence[Run]) -> list[str]:
    """The report's head: the env, algorithm and model, each side's topology and runs, the machine, warnings."""
    cfg = seq[0].metrics.get("config", {})
    machine = (seq[0].metrics.get("benchmark") or {}).get("machine", {})
    env = cfg.get("env", {})
    lines = [
        "raylab sequential vs parallel comparison (the timed-training benchmark's workflow)",
        "",
        f"env {env.get('id')} ({env.get('family')}), algo {cfg.get('algo', {}).get('name')}, "
        f"model {cfg.get('model', {}).get('encoder')}",
    ]
    for side, runs in zip(SIDES, (seq, par), strict=True):
        t = runs[0].metrics["config"]["topology"]
        lines.append(
            f"{side}: topology={t['name']}, {t['num_workers']} workers x {t['envs_per_worker']} envs, "
            f"{len(runs)} run(s): {', '.join(result['runs'][side])}"
        )
    if machine:
        lines.append(f"machine: {machine.get('cpu')}, {machine.get('cores')} cores, cuda {machine.get('cuda')}")
    return lines + [f"warning: {w}" for w in result["warnings"]]


def _key_metric_lines(result: dict[str, Any]) -> list[str]:
    """Speed-up, efficiency gain, sample efficiency and memory per worker, a line each."""
    se = result["sample_efficiency"]
    at = se["return_at_common_env_steps"]
    lines = [
        f"  speed-up (parallel FPS / sequential FPS): {_fmt(result['speedup'], '.2f', 'x')}",
        "  efficiency gain ((parallel - sequential timesteps/hour) / sequential): "
        f"{_fmt(result['efficiency_gain_percent'], '+.1f', ' %')}",
        f"  sample efficiency, return at {se['common_env_steps']:,.0f} env steps (reached by every run): "
        f"sequential {_fmt(at['sequential']['mean'], '.2f')}, parallel {_fmt(at['parallel']['mean'], '.2f')}",
    ]
    reach = se["to_return_level"]
    if se["return_level"] is not None:
        sides = [
            f"{side} {_fmt(reach[side]['env_steps'], ',.0f')} env steps / {_fmt(reach[side]['seconds'], '.0f')} s"
            for side in SIDES
        ]
        lines.append(
            f"  to a return of {se['return_level']:.2f} (the lowest final return of any run): {', '.join(sides)} "
            f"(env steps ratio {_fmt(se['env_steps_ratio'], '.2f')}, "
            f"wall time ratio {_fmt(se['wall_time_ratio'], '.2f')})"
        )
    for side in SIDES:
        res = result["resource_efficiency"][side]
        lines.append(
            f"  {side} memory: peak {_fmt(res['peak_memory_gb'], '.2f')} GB for {res['workers']:g} workers "
            f"({_fmt(res['peak_memory_gb_per_worker'], '.2f')} GB per worker)"
        )
    lines.append(
        "  (memory is the summed resident size of the run's process tree: with Ray that includes the raylet, "
        "GCS and idle workers, and object-store pages count once per process that maps them)"
    )
    return lines


def verdict(speedup: float | None) -> str:
    if speedup is None:
        return "Speed-up: not measurable (no FPS on one side)."
    if speedup >= 1.5:
        return f"Speed-up {speedup:.2f}x: parallel collection pays on this machine."
    return (
        f"Speed-up {speedup:.2f}x (< 1.5x). Usual causes: the learner, not the env, is the bottleneck (see where "
        "the time went), fewer cores than processes, synchronisation waits, or unbalanced workers."
    )


def plot(seq: Sequence[Run], par: Sequence[Run], path: Path) -> None:
    fig, axes = plots.figure(12, 8, rows=2, cols=2)
    panels = [
        (axes[0][0], RETURN_KEY, "env_steps", 1.0, "env steps", "episode return (last 100 mean)", "Episode reward"),
        (
            axes[0][1],
            "throughput/env_frames_per_s",
            "time_s",
            60.0,
            "wall clock (min)",
            "env frames / s",
            "Training speed (FPS)",
        ),
        (axes[1][0], None, "env_steps", 1.0, "env steps", "policy loss", "Policy loss"),
        (axes[1][1], "env_steps", "time_s", 60.0, "wall clock (min)", "env steps", "Cumulative progress"),
    ]
    for ax, key, x, xscale, xlabel, ylabel, title in panels:
        for side, runs, color in (("sequential", seq, "C0"), ("parallel", par, "C1")):
            curves = []
            for run in runs:
                k = key or next((c for c in LOSS_KEYS if any(c in row for row in run.rows)), LOSS_KEYS[0])
                xs, ys = run.series(k, x)
                if k == "env_steps":  # cumulative progress starts at the origin by definition
                    xs, ys = np.concatenate([[0.0], xs]), np.concatenate([[0.0], ys])
                if xs.size:
                    ax.plot(xs / xscale, ys, color=color, lw=0.8, alpha=0.45)
                    curves.append((xs / xscale, ys))
            if curves:
                # the span every run covers: no extrapolation beyond a run's first or last row
                grid = np.linspace(max(c[0][0] for c in curves), min(c[0][-1] for c in curves), 100)
                stack = np.stack([np.interp(grid, cx, cy) for cx, cy in curves])
                mean = stack.mean(axis=0)
                ax.plot(grid, mean, color=color, lw=2.2, label=f"{side} (n={len(curves)})")
                if len(curves) > 1:
                    ax.fill_between(grid, stack.min(axis=0), stack.max(axis=0), color=color, alpha=0.15)
        ax.set_title(title)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        for axis, label in (("x", xlabel), ("y", ylabel)):
            if label.startswith(("env steps", "env frames")):
                plots.short_ticks(ax, axis)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle("Sequential against parallel collection, the same algorithm (thin: one seed each; bold: mean; "
                 "band: min-max)")  # fmt: skip
    plots.save(fig, path)


def add_parser(commands: Any) -> None:
    p = commands.add_parser("compare", help="compare sequential and parallel timed runs (table, PNG, report)")
    p.add_argument("--sequential", nargs="+", required=True, metavar="DIR", help="run dirs of the sequential side")
    p.add_argument("--parallel", nargs="+", required=True, metavar="DIR", help="run dirs of the parallel side")
    p.add_argument("--output", default="comparison.png", help="the PNG; the report and JSON go beside it")
    p.add_argument("--report", default=None, help="report path (default: comparison_report.txt beside the PNG)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace, overrides: list[str]) -> int:
    if overrides:
        raise ConfigError(f"compare takes no config overrides, got {' '.join(overrides)}: pass only run dirs")
    seq = [load_run(p) for p in args.sequential]
    par = [load_run(p) for p in args.parallel]
    output = Path(args.output)
    output.parent.mkdir(parents=True, exist_ok=True)
    report_path = Path(args.report) if args.report else output.parent / "comparison_report.txt"
    result = analyse(seq, par)
    for warning in result["warnings"]:
        print(f"raylab bench compare: warning: {warning}")
    print(table_text(result, {"sequential": len(seq), "parallel": len(par)}))
    report = report_text(result, seq, par)
    report_path.write_text(report)
    output.with_suffix(".json").write_text(json.dumps(result, indent=2) + "\n")
    plot(seq, par, output)
    print(report[report.index("Key metrics") :], end="")
    print(f"wrote {output}, {report_path} and {output.with_suffix('.json')}")
    return 0

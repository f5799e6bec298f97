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
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from raylab.bench import plots
from raylab.errors import ConfigError

SIDES = ("sequential", "parallel")
RETURN_KEY = "episode/return_mean"
"""The mean return of the last 100 training episodes, in every metrics row."""
FULL_WINDOW = 100
LOSS_KEYS = ("learner/policy_loss", "learner/loss")
"""The policy loss (PPO, APPO, A3C) or, for DQN, the TD loss."""


@dataclass
class Run:
    path: Path
    metrics: dict[str, Any]
    rows: list[dict[str, Any]]

    def series(self, key: str, x: str = "env_steps") -> tuple[np.ndarray, np.ndarray]:
        rows = self.rows
        if key.startswith("throughput/") and len(rows) >= 3:
            # the row forced when the run stops covers a fraction of an interval (often no whole round):
            # its rate is noise, as benchmark_metrics.json's final_fps also judges
            last, before = rows[-1]["time_s"] - rows[-2]["time_s"], rows[-2]["time_s"] - rows[-3]["time_s"]
            if last < 0.5 * before:
                rows = rows[:-1]
        points = [(r[x], r[key]) for r in rows if r.get(key) is not None and r.get(x) is not None]
        if not points:
            return np.zeros(0), np.zeros(0)
        xs, ys = zip(*points, strict=True)
        return np.asarray(xs, float), np.asarray(ys, float)

    def return_at(self, env_steps: float) -> float | None:
        """The 100-episode mean return when the run had done ``env_steps`` (linear between rows)."""
        xs, ys = self.series(RETURN_KEY)
        if xs.size == 0 or env_steps < xs[0]:
            return None
        return float(np.interp(env_steps, xs, ys))

    def first_reaching(self, level: float) -> tuple[float, float] | None:
        """(env steps, seconds) of the first row whose 100-episode mean return is >= ``level``; rows from
        before the 100th episode are skipped (their mean covers a handful of episodes: noise)."""
        for row in self.rows:
            value = row.get(RETURN_KEY)
            if row.get("episodes", FULL_WINDOW) < FULL_WINDOW:
                continue
            if value is not None and value >= level:
                return float(row["env_steps"]), float(row["time_s"])
        return None

    def stage_seconds(self) -> dict[str, float]:
        """Seconds per timed stage over the run (summed over workers: more than wall time in parallel)."""
        totals: dict[str, float] = {}
        for row in self.rows:
            for key, value in row.items():
                if key.startswith("timing/") and value is not None:
                    totals[key[len("timing/") :]] = totals.get(key[len("timing/") :], 0.0) + float(value)
        return totals


@dataclass
class Stat:
    values: list[float] = field(default_factory=list)

    @property
    def mean(self) -> float | None:
        return statistics.fmean(self.values) if self.values else None

    @property
    def std(self) -> float | None:
        return statistics.stdev(self.values) if len(self.values) > 1 else None

    def text(self, fmt: str) -> str:
        if self.mean is None:
            return "n/a"
        spread = f" ± {self.std:{fmt}}" if self.std is not None else ""
        return f"{self.mean:{fmt}}{spread}"


def load_run(path: str | Path) -> Run:
    run_dir = Path(path)
    metrics_file, rows_file = run_dir / "benchmark_metrics.json", run_dir / "metrics.jsonl"
    if not metrics_file.exists() or not rows_file.exists():
        raise ConfigError(
            f"{run_dir} has no benchmark_metrics.json and metrics.jsonl: give a directory written by "
            f"`python -m raylab.bench timed` (or raylab.train)"
        )
    try:
        metrics = json.loads(metrics_file.read_text())
        rows = [json.loads(line) for line in rows_file.read_text().splitlines() if line.strip()]
    except json.JSONDecodeError as err:
        raise ConfigError(
            f"{run_dir}: unreadable metrics ({err}): the run may still be writing; retry when it is done"
        ) from None
    return Run(run_dir, metrics, rows)


def _get(run: Run, *keys: str) -> float | None:
    value: Any = run.metrics
    for key in keys:
        if not isinstance(value, dict) or value.get(key) is None:
            return None
        value = value[key]
    return float(value)


SCALARS: list[tuple[str, str, Callable[[Run], float | None]]] = [
    ("duration (min)", ".1f", lambda r: 60.0 * r.metrics["duration_hours"]),
    ("total timesteps", ",.0f", lambda r: r.metrics["total_timesteps"]),
    ("total updates", ",.0f", lambda r: r.metrics["total_updates"]),
    ("average FPS", ",.0f", lambda r: r.metrics["average_fps"]),
    ("final FPS", ",.0f", lambda r: r.metrics["final_fps"]),
    ("timesteps per hour", ",.0f", lambda r: r.metrics["total_timesteps"] / max(r.metrics["duration_hours"], 1e-12)),
    ("initial reward", ".2f", lambda r: _get(r, "performance", "initial_reward")),
    ("final reward (last 10)", ".2f", lambda r: _get(r, "performance", "final_reward")),
    ("best reward (10 ep.)", ".2f", lambda r: _get(r, "performance", "best_reward")),
    ("avg reward last 100", ".2f", lambda r: _get(r, "performance", "average_reward_last_100_episodes")),
    ("reward std last 100", ".2f", lambda r: _get(r, "performance", "reward_std_last_100_episodes")),
    ("greedy eval return", ".2f", lambda r: _get(r, "eval", "return_mean")),
    ("peak memory (GB)", ".2f", lambda r: _get(r, "resource_usage", "peak_memory_gb")),
    ("average memory (GB)", ".2f", lambda r: _get(r, "resource_usage", "average_memory_gb")),
    ("CPU utilization (%)", ".0f", lambda r: _pct(_get(r, "resource_usage", "cpu_utilization"))),
]


def _pct(x: float | None) -> float | None:
    return None if x is None else 100.0 * x


def side_stats(runs: Sequence[Run]) -> dict[str, Stat]:
    out: dict[str, Stat] = {}
    for name, _, get in SCALARS:
        stat = Stat()
        for run in runs:
            value = get(run)
            if value is not None and math.isfinite(value):
                stat.values.append(float(value))
        out[name] = stat
    return out


def _ratio(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None or b == 0 else a / b


def ttest(a: Sequence[float], b: Sequence[float]) -> dict[str, Any]:
    """Welch's t-test (unequal variances) of b against a; needs two or more values per side."""
    if len(a) < 2 or len(b) < 2:
        return {"note": "needs 2 or more runs per side"}
    try:
        from scipy import stats
    except ImportError:
        return {"note": "scipy is not installed: pip install 'raylab[bench]'"}
    if statistics.pstdev(a) == 0 and statistics.pstdev(b) == 0:
        return {"note": "no spread on either side"}
    result = stats.ttest_ind(b, a, equal_var=False)
    return {"t": float(result.statistic), "p": float(result.pvalue), "n": [len(a), len(b)]}


def analyse(seq: Sequence[Run], par: Sequence[Run]) -> dict[str, Any]:
    stats = {"sequential": side_stats(seq), "parallel": side_stats(par)}
    fps = {s: stats[s]["average FPS"].mean for s in SIDES}
    tph = {s: stats[s]["timesteps per hour"].mean for s in SIDES}
    speedup = _ratio(fps["parallel"], fps["sequential"])
    gain = _ratio(tph["parallel"], tph["sequential"])
    # sample efficiency 1: the return at the env-step count every run reached
    common_steps = min(float(r.metrics["total_timesteps"]) for r in [*seq, *par])
    at_common = {
        s: [v for r in runs if (v := r.return_at(common_steps)) is not None]
        for s, runs in zip(SIDES, (seq, par), strict=True)
    }
    # sample efficiency 2: env steps and wall time to the return every run ended at or above
    finals = [r.series(RETURN_KEY)[1] for r in [*seq, *par]]
    level = min((float(ys[-1]) for ys in finals if ys.size), default=None)
    reach: dict[str, dict[str, Any]] = {}
    for side, runs in zip(SIDES, (seq, par), strict=True):
        hits = [h for r in runs if level is not None and (h := r.first_reaching(level)) is not None]
        reach[side] = {
            "runs_reaching": len(hits),
            "env_steps": statistics.fmean(h[0] for h in hits) if hits else None,
            "seconds": statistics.fmean(h[1] for h in hits) if hits else None,
        }
    workers = {
        s: statistics.fmean(r.metrics["config"]["topology"]["num_workers"] for r in runs)
        for s, runs in zip(SIDES, (seq, par), strict=True)
    }
    memory = {s: stats[s]["peak memory (GB)"].mean for s in SIDES}
    stages = {s: _mean_dicts([r.stage_seconds() for r in runs]) for s, runs in zip(SIDES, (seq, par), strict=True)}
    return {
        "runs": {s: [str(r.path) for r in runs] for s, runs in zip(SIDES, (seq, par), strict=True)},
        "warnings": mismatches(seq, par),
        "table": {
            name: {
                s: {"mean": stats[s][name].mean, "std": stats[s][name].std, "values": stats[s][name].values}
                for s in SIDES
            }
            for name, _, _ in SCALARS
        },
        "speedup": speedup,
        "efficiency_gain_percent": None if gain is None else 100.0 * (gain - 1.0),
        "sample_efficiency": {
            "common_env_steps": common_steps,
            "return_at_common_env_steps": {
                s: {"mean": statistics.fmean(v) if v else None, "values": v} for s, v in at_common.items()
            },
            "return_level": level,
            "to_return_level": reach,
            "env_steps_ratio": _ratio(reach["parallel"]["env_steps"], reach["sequential"]["env_steps"]),
            "wall_time_ratio": _ratio(reach["parallel"]["seconds"], reach["sequential"]["seconds"]),
        },
        "resource_efficiency": {
            s: {
                "workers": workers[s],
                "peak_memory_gb": memory[s],
                "peak_memory_gb_per_worker": _ratio(memory[s], workers[s]),
            }
            for s in SIDES
        },
        "stage_seconds": stages,
        "ttest": {
            "average_fps": ttest(stats["sequential"]["average FPS"].values, stats["parallel"]["average FPS"].values),
            "avg_reward_last_100": ttest(
                stats["sequential"]["avg reward last 100"].values, stats["parallel"]["avg reward last 100"].values
            ),
            "return_at_common_env_steps": ttest(at_common["sequential"], at_common["parallel"]),
        },
    }


def mismatches(seq: Sequence[Run], par: Sequence[Run]) -> list[str]:
    """What makes the comparison unfair or the sides swapped: said in the report, not silently averaged."""
    out = []
    for side, runs in zip(SIDES, (seq, par), strict=True):
        for run in runs:
            mode = run.metrics.get("training_mode")
            if mode != side:
                out.append(f"{run.path} is a {mode} run but was given as --{side}")
            if run.metrics.get("stop_reason") in ("interrupted", "terminated"):
                out.append(f"{run.path} was {run.metrics['stop_reason']}")

    def distinct(get: Callable[[Run], Any]) -> set[str]:
        return {json.dumps(get(r), sort_keys=True, default=str) for r in [*seq, *par]}

    config = lambda r: r.metrics.get("config", {})  # noqa: E731
    checks = {
        "env": lambda r: config(r).get("env"),
        "algo": lambda r: config(r).get("algo"),
        "model": lambda r: config(r).get("model"),
        "total envs": lambda r: (
            (config(r).get("topology") or {}).get("num_workers", 0)
            * (config(r).get("topology") or {}).get("envs_per_worker", 0)
        ),
        "duration": lambda r: round(60 * r.metrics.get("duration_hours", 0.0)),
    }
    out += [f"the runs differ in {name}" for name, get in checks.items() if len(distinct(get)) > 1]
    return out


def _mean_dicts(dicts: list[dict[str, float]]) -> dict[str, float]:
    keys = sorted({k for d in dicts for k in d})
    return {k: statistics.fmean(d.get(k, 0.0) for d in dicts) for k in keys}


def table_text(result: dict[str, Any], n: dict[str, int]) -> str:
    seq_head, par_head = f"sequential (n={n['sequential']})", f"parallel (n={n['parallel']})"
    header = f"{'metric':<24} {seq_head:>24} {par_head:>24} {'par/seq':>8}"
    lines = [header, "-" * len(header)]
    for name, fmt, _ in SCALARS:
        cells = result["table"][name]
        texts = [Stat(cells[s]["values"]).text(fmt) for s in SIDES]
        ratio = _ratio(cells["parallel"]["mean"], cells["sequential"]["mean"])
        ratio_text = f"{ratio:.2f}x" if ratio is not None else ""
        lines.append(f"{name:<24} {texts[0]:>24} {texts[1]:>24} {ratio_text:>8}")
    return "\n".join(lines)


def _fmt(value: float | None, fmt: str, unit: str = "") -> str:
    return "n/a" if value is None else f"{value:{fmt}}{unit}"


def report_text(result: dict[str, Any], seq: Sequence[Run], par: Sequence[Run]) -> str:
    n = {"sequential": len(seq), "parallel": len(par)}
    cfg = seq[0].metrics.get("config", {})
    machine = (seq[0].metrics.get("benchmark") or {}).get("machine", {})
    topo = {s: runs[0].metrics["config"]["topology"] for s, runs in zip(SIDES, (seq, par), strict=True)}
    se = result["sample_efficiency"]
    env = cfg.get("env", {})
    lines = [
        "raylab sequential vs parallel comparison (seed 003's workflow)",
        "",
        f"env {env.get('id')} ({env.get('family')}), algo {cfg.get('algo', {}).get('name')}, "
        f"model {cfg.get('model', {}).get('encoder')}",
    ]
    for side in SIDES:
        t = topo[side]
        lines.append(
            f"{side}: topology={t['name']}, {t['num_workers']} workers x {t['envs_per_worker']} envs, "
            f"{n[side]} run(s): {', '.join(result['runs'][side])}"
        )
    if machine:
        lines.append(f"machine: {machine.get('cpu')}, {machine.get('cores')} cores, cuda {machine.get('cuda')}")
    lines += [f"warning: {w}" for w in result["warnings"]]
    lines += ["", table_text(result, n), "", "Key metrics"]
    lines.append(f"  speed-up (parallel FPS / sequential FPS): {_fmt(result['speedup'], '.2f', 'x')}")
    lines.append(
        "  efficiency gain ((parallel - sequential timesteps/hour) / sequential): "
        f"{_fmt(result['efficiency_gain_percent'], '+.1f', ' %')}"
    )
    at = se["return_at_common_env_steps"]
    lines.append(
        f"  sample efficiency, return at {se['common_env_steps']:,.0f} env steps (reached by every run): "
        f"sequential {_fmt(at['sequential']['mean'], '.2f')}, parallel {_fmt(at['parallel']['mean'], '.2f')}"
    )
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
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle("raylab: sequential vs parallel (thin: runs; thick: mean; band: min-max)")
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

"""``bench compare``'s numbers: the runs of each side loaded, their scalars as mean ± standard deviation, the
speed-up, efficiency gain, sample efficiency, memory per worker, stage seconds and Welch's t-tests, and what makes
the two sides unfair to compare (raylab.bench.compare writes them out: table, report, PNG, JSON)."""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from raylab.errors import ConfigError

SIDES = ("sequential", "parallel")
RETURN_KEY = "episode/return_mean"
"""The mean return of the last 100 training episodes, in every metrics row."""
FULL_WINDOW = 100


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


def divide(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None or b == 0 else a / b


def ttest(a: Sequence[float], b: Sequence[float]) -> dict[str, Any]:
    """Welch's t-test (unequal variances) of b against a; needs two or more values per side."""
    if len(a) < 2 or len(b) < 2:
        return {"note": "needs 2 or more runs per side"}
    try:
        from scipy import stats
    except ImportError:
        return {"note": "scipy is not installed: pip install 'raylab-actor-learner[bench]'"}
    if statistics.pstdev(a) == 0 and statistics.pstdev(b) == 0:
        return {"note": "no spread on either side"}
    result = stats.ttest_ind(b, a, equal_var=False)
    return {"t": float(result.statistic), "p": float(result.pvalue), "n": [len(a), len(b)]}


def analyse(seq: Sequence[Run], par: Sequence[Run]) -> dict[str, Any]:
    """Everything the report, the table and the JSON say, from the runs of each side."""
    stats = {"sequential": side_stats(seq), "parallel": side_stats(par)}
    fps = {s: stats[s]["average FPS"].mean for s in SIDES}
    tph = {s: stats[s]["timesteps per hour"].mean for s in SIDES}
    gain = divide(tph["parallel"], tph["sequential"])
    sample = sample_efficiency(seq, par)
    at_common = {s: v["values"] for s, v in sample["return_at_common_env_steps"].items()}
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
        "speedup": divide(fps["parallel"], fps["sequential"]),
        "efficiency_gain_percent": None if gain is None else 100.0 * (gain - 1.0),
        "sample_efficiency": sample,
        "resource_efficiency": _resources(seq, par, stats),
        "stage_seconds": {
            s: _mean_dicts([r.stage_seconds() for r in runs]) for s, runs in zip(SIDES, (seq, par), strict=True)
        },
        "ttest": {
            "average_fps": ttest(stats["sequential"]["average FPS"].values, stats["parallel"]["average FPS"].values),
            "avg_reward_last_100": ttest(
                stats["sequential"]["avg reward last 100"].values, stats["parallel"]["avg reward last 100"].values
            ),
            "return_at_common_env_steps": ttest(at_common["sequential"], at_common["parallel"]),
        },
    }


def sample_efficiency(seq: Sequence[Run], par: Sequence[Run]) -> dict[str, Any]:
    """The return of each side at the env-step count every run reached, and the env steps and wall time each
    side took to the return every run ended at or above."""
    common_steps = min(float(r.metrics["total_timesteps"]) for r in [*seq, *par])
    at_common = {
        s: [v for r in runs if (v := r.return_at(common_steps)) is not None]
        for s, runs in zip(SIDES, (seq, par), strict=True)
    }
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
    return {
        "common_env_steps": common_steps,
        "return_at_common_env_steps": {
            s: {"mean": statistics.fmean(v) if v else None, "values": v} for s, v in at_common.items()
        },
        "return_level": level,
        "to_return_level": reach,
        "env_steps_ratio": divide(reach["parallel"]["env_steps"], reach["sequential"]["env_steps"]),
        "wall_time_ratio": divide(reach["parallel"]["seconds"], reach["sequential"]["seconds"]),
    }


def _resources(seq: Sequence[Run], par: Sequence[Run], stats: dict[str, dict[str, Stat]]) -> dict[str, Any]:
    """Each side's mean worker count and peak memory, in all and per worker."""
    out = {}
    for side, runs in zip(SIDES, (seq, par), strict=True):
        workers = statistics.fmean(r.metrics["config"]["topology"]["num_workers"] for r in runs)
        memory = stats[side]["peak memory (GB)"].mean
        out[side] = {
            "workers": workers,
            "peak_memory_gb": memory,
            "peak_memory_gb_per_worker": divide(memory, workers),
        }
    return out


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

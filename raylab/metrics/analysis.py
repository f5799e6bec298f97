"""Read run directories and benchmark JSONs back, and plot them: what notebooks/throughput.ipynb runs, and
``python -m raylab.metrics.analysis RUN_DIR [RUN_DIR ...] --output throughput.png`` for a PNG.

A run dir holds metrics.jsonl (one row per report interval, flat keys) and, once finished,
benchmark_metrics.json. Every row's ``share/<actor>/<stage>`` is that stage's seconds over (actors of
that type x the interval); the run-level share is the interval-weighted mean of the rows' shares.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ACTOR_ORDER = ("rollout", "learner", "replay", "server", "driver")


@dataclass
class RunData:
    path: Path
    rows: list[dict[str, Any]]
    benchmark: dict[str, Any] | None = None
    config: dict[str, Any] = field(default_factory=dict)

    @property
    def label(self) -> str:
        topo = self.config.get("topology", {}).get("name", "?")
        env = self.config.get("env", {}).get("id", "?")
        return f"{self.path.name} ({topo}, {env})"

    def series(self, key: str) -> tuple[list[float], list[float]]:
        """(time_s, value) for every row that has ``key``."""
        pairs = [(float(r["time_s"]), float(r[key])) for r in self.rows if r.get(key) is not None]
        return [p[0] for p in pairs], [p[1] for p in pairs]

    def policies(self) -> list[str]:
        """The names of a run's several policies (its ``policy/<name>/...`` keys), in first-seen order."""
        names: dict[str, None] = {}
        for row in self.rows:
            for key in row:
                if key.startswith("policy/"):
                    names.setdefault(key.split("/", 2)[1], None)
        return list(names)

    def stage_shares(self) -> dict[str, dict[str, float]]:
        """{actor: {stage: share of the run}}: each row's share weighted by its interval's length."""
        totals: dict[str, dict[str, float]] = {}
        weight, last_t = 0.0, 0.0
        for row in self.rows:
            t = float(row["time_s"])
            dt, last_t = max(t - last_t, 0.0), t
            weight += dt
            for key, value in row.items():
                if key.startswith("share/") and value is not None:
                    _, actor, stage = key.split("/", 2)
                    totals.setdefault(actor, {})
                    totals[actor][stage] = totals[actor].get(stage, 0.0) + float(value) * dt
        if weight <= 0:
            return {}
        ordered = sorted(totals, key=lambda a: ACTOR_ORDER.index(a) if a in ACTOR_ORDER else len(ACTOR_ORDER))
        return {a: {s: v / weight for s, v in sorted(totals[a].items())} for a in ordered}


def load_run(path: str | Path) -> RunData:
    path = Path(path)
    metrics = path / "metrics.jsonl"
    if not metrics.is_file():
        raise FileNotFoundError(f"{metrics} not found: pass a raylab run directory")
    rows = [json.loads(line) for line in metrics.read_text().splitlines() if line.strip()]
    bench_path = path / "benchmark_metrics.json"
    benchmark = json.loads(bench_path.read_text()) if bench_path.is_file() else None
    config: dict[str, Any] = {}
    if benchmark is not None:
        config = benchmark.get("config", {})
    elif (path / "config.yaml").is_file():
        import yaml

        config = yaml.safe_load((path / "config.yaml").read_text())
    return RunData(path, rows, benchmark, config)


def scaling_curve(bench: dict[str, Any]) -> dict[str, list[tuple[int, float, float]]]:
    """From benchmarks/a3c_scaling.json: {variant: [(workers, speed-up over 1 worker, wait share)]}."""
    curves = {}
    for variant, by_workers in bench.get("summary", {}).items():
        points = []
        for workers, row in by_workers.items():
            speedup = row.get("final_speedup", row.get("initial_speedup"))
            wait = row.get("final_wait_share", row.get("initial_wait_share", 0.0))
            if speedup is not None:
                points.append((int(workers), float(speedup), float(wait)))
        curves[variant] = sorted(points)
    return curves


# -- plots (matplotlib, imported lazily) ------------------------------------------------------------------
def plot_throughput(runs: list[RunData], ax: Any, key: str = "throughput/env_frames_per_s") -> None:
    for run in runs:
        t, v = run.series(key)
        ax.plot(t, v, label=run.label)
    ax.set_xlabel("training time (s)")
    ax.set_ylabel(key.split("/")[-1].replace("_", " "))
    ax.set_title(key)
    ax.legend(fontsize=7)


def plot_policies(runs: list[RunData], ax: Any, key: str = "episode/return_mean") -> int:
    """Each policy's ``policy/<name>/<key>`` over training time, for every run of several policies; returns
    how many curves it drew (0: no run has several policies)."""
    drawn = 0
    for run in runs:
        for name in run.policies():
            t, v = run.series(f"policy/{name}/{key}")
            if t:
                ax.plot(t, v, label=f"{run.path.name} {name}")
                drawn += 1
    ax.set_xlabel("training time (s)")
    ax.set_ylabel(key.replace("_", " "))
    ax.set_title(f"per policy: {key}")
    if drawn:
        ax.legend(fontsize=7)
    return drawn


def plot_stage_breakdown(runs: list[RunData], ax: Any) -> None:
    """One horizontal stacked bar per (run, actor type): where that actor type's time went."""
    import matplotlib.pyplot as plt

    labels, bars = [], []
    for run in runs:
        for actor, stages in run.stage_shares().items():
            labels.append(f"{actor}\n{run.path.name}" if len(runs) > 1 else actor)
            bars.append(stages)
    stages_all = sorted({s for bar in bars for s in bar})
    colors = plt.get_cmap("tab20")
    color = {s: colors(i % 20) for i, s in enumerate(stages_all)}
    for y, stages in enumerate(bars):
        left = 0.0
        for stage, share in stages.items():
            ax.barh(y, share, left=left, color=color[stage], edgecolor="white", linewidth=0.5)
            if share >= 0.06:
                ax.text(left + share / 2, y, f"{stage}\n{share:.0%}", ha="center", va="center", fontsize=6)
            left += share
        if left < 1.0:
            ax.barh(y, 1.0 - left, left=left, color="#eeeeee", edgecolor="white", linewidth=0.5)
    handles = [plt.Rectangle((0, 0), 1, 1, color=color[s]) for s in stages_all]
    ax.legend(handles, stages_all, fontsize=6, ncol=min(6, max(1, len(stages_all))), loc="upper center",
              bbox_to_anchor=(0.5, -0.18), frameon=False)  # fmt: skip
    ax.set_yticks(range(len(labels)), labels, fontsize=7)
    ax.set_xlim(0, max(1.0, *(sum(b.values()) for b in bars)) if bars else 1.0)
    ax.set_xlabel("share of each actor's time (grey: untimed: Ray calls, serialization, idle)")
    ax.set_title("stage breakdown per actor type")
    ax.invert_yaxis()


def plot_scaling(bench: dict[str, Any], ax: Any) -> None:
    curves = scaling_curve(bench)
    top = 1
    for variant, points in curves.items():
        if points:
            ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=variant)
            top = max(top, *(p[0] for p in points))
    ax.plot([1, top], [1, top], linestyle="--", color="grey", label="linear")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("workers")
    ax.set_ylabel("speed-up over 1 worker")
    ax.set_title("scaling")
    ax.legend(fontsize=7)


def plot_runs(runs: list[RunData], output: str | Path, scaling: dict[str, Any] | None = None) -> Path:
    """Throughput over time, learning curve, stage breakdown (and a scaling curve) in one PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from raylab.metrics.plots import save

    bars = sum(len(run.stage_shares()) for run in runs)
    mosaic: Any = [["throughput", "return"], ["stages", "stages" if scaling is None else "scaling"]]
    bottom = max(3.0, 0.45 * bars + 1.2)
    fig, named = plt.subplot_mosaic(mosaic, figsize=(12.0, 3.6 + bottom), height_ratios=[3.6, bottom])
    flat: list[Any] = [named["throughput"], named["return"], named["stages"], named.get("scaling")]
    plot_throughput(runs, flat[0])
    for run in runs:
        t, v = run.series("episode/return_mean")
        flat[1].plot(t, v, label=f"training: {run.label}")
        t, v = run.series("eval/return_mean")
        if t:
            flat[1].plot(t, v, linestyle="--", marker=".", label=f"greedy eval: {run.path.name}")
    flat[1].set_xlabel("training time (s)")
    flat[1].set_ylabel("return")
    flat[1].set_title("return (mean of the last 100 episodes)")
    flat[1].legend(fontsize=7)
    plot_stage_breakdown(runs, flat[2])
    if scaling is not None:
        plot_scaling(scaling, flat[3])
    out = Path(output)
    save(fig, out)
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m raylab.metrics.analysis", description=__doc__)
    parser.add_argument("run_dirs", nargs="+")
    parser.add_argument("--output", default="throughput.png")
    parser.add_argument("--scaling", default=None, help="a scaling JSON (benchmarks/a3c_scaling.json)")
    args = parser.parse_args(argv)
    scaling = json.loads(Path(args.scaling).read_text()) if args.scaling else None
    print(plot_runs([load_run(d) for d in args.run_dirs], args.output, scaling))


if __name__ == "__main__":
    main()

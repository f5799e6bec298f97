"""Pong learning at equal frames: a ``pong_appo`` run with central inference against a per-actor one, read from
their records (no run is started here).

    python benchmarks/pong_central_equal_frames.py \\
        --central outputs/bench/pong_appo_central_to18/central_seed0 \\
        --per-actor benchmarks/pong_learning_avx2.json --output benchmarks/pong_appo_central_equal_frames.json

``--central`` is a run directory (its ``metrics.jsonl``); ``--per-actor`` a ``benchmarks/pong_learning.py``
JSON (its first raylab run's ``curve``, the training return, and ``evals``, the greedy evaluations, each against
frames). At each frame mark both runs' latest training return (the mean of the last 100 games) and latest greedy
evaluation at or below it are read; the first greedy evaluation >= 18 (a confirmed one: the run stops on it) is
each run's frames to 18. Frames are agent steps x 4 (``pong_appo``'s frame skip). The two runs' wall times are
not comparable when other work shared the machine, which the output records as given (``--beside``).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from raylab.bench import plots
from raylab.bench.machine import machine_info

FRAME_SKIP = 4
MARKS = (1_000_000, 2_000_000, 3_000_000, 4_000_000, 5_000_000, 5_500_000, 6_000_000, 6_500_000, 7_000_000, 8_000_000)


def central_curves(run_dir: Path) -> tuple[list[list[float]], list[list[float]], dict[str, Any]]:
    """(training curve, greedy evaluations), each [seconds, frames, return], and the run's stop record."""
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    curve = [
        [r["time_s"], r["env_steps"] * FRAME_SKIP, r["episode/return_mean"]] for r in rows if "episode/return_mean" in r
    ]
    evals, seen = [], set()
    for r in rows:
        if "eval/return_mean" in r and r.get("eval/version") not in seen:
            seen.add(r.get("eval/version"))
            evals.append([r["time_s"], r["env_steps"] * FRAME_SKIP, r["eval/return_mean"]])
    done = run_dir / "benchmark_metrics.json"
    record = json.loads(done.read_text()) if done.exists() else {}
    return curve, evals, {"finished": done.exists(), "stop_reason": record.get("stop_reason"), "rows": len(rows)}


def at(points: list[list[float]], frames: float) -> float | None:
    """The latest point's return at or below ``frames``; None before the first."""
    found = [p[2] for p in points if p[1] <= frames]
    return found[-1] if found else None


def first_reaching(points: list[list[float]], target: float) -> list[float] | None:
    return next((p for p in points if p[2] >= target), None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--central", required=True, type=Path)
    parser.add_argument("--per-actor", required=True, type=Path)
    parser.add_argument("--output", required=True, type=Path)
    parser.add_argument("--beside", default="", help="what else ran on the machine during each run, in words")
    args = parser.parse_args()
    reference = json.loads(args.per_actor.read_text())
    old = reference["results"]["runs"][0]
    runs = {
        "per-actor": {"curve": old["curve"], "evals": old["evals"], "commit": old["commit"],
                      "date": reference["machine"]["date"], "source": str(args.per_actor)},
    }  # fmt: skip
    curve, evals, record = central_curves(args.central)
    runs["central"] = {
        "curve": curve,
        "evals": evals,
        "commit": machine_info()["git_commit"],
        "source": str(args.central),
        **record,
    }
    last = min(max(p[1] for p in run["curve"]) for run in runs.values())
    table = [
        {
            "frames": mark,
            **{name: {"train": at(run["curve"], mark), "greedy": at(run["evals"], mark)} for name, run in runs.items()},
        }
        for mark in MARKS
        if mark <= last
    ]
    reached = {}
    for name, run in runs.items():
        hit = first_reaching(run["evals"], 18.0)
        reached[name] = None if hit is None else {"seconds": hit[0], "frames": hit[1]}
    out = {
        "benchmark": "pong_central_equal_frames",
        "machine": machine_info(),
        "protocol": __doc__,
        "beside": args.beside,
        "frames_compared": last,
        "to_18": reached,
        "table": table,
        "runs": runs,
    }
    args.output.write_text(json.dumps(out, indent=1) + "\n")
    fig, grid = plots.figure(10.0, 3.6, 1, 2)
    axes = list(grid[0])
    for name, run in runs.items():
        axes[0].plot([p[1] / 1e6 for p in run["curve"]], [p[2] for p in run["curve"]], label=name)
        axes[1].plot([p[1] / 1e6 for p in run["evals"]], [p[2] for p in run["evals"]], marker="o", label=name)
    for ax, label in zip(axes, ("training return (last 100 games)", "greedy evaluation"), strict=True):
        ax.set_xlabel("frames (millions)")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
        ax.legend()
    plots.save(fig, args.output.with_suffix(".png"))
    print(f"wrote {args.output} and {args.output.with_suffix('.png')}: compared to {last:,} frames; to 18: {reached}")


if __name__ == "__main__":
    main()

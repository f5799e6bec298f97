"""The GPU learner A/B's results (benchmarks/gpu_learner_ab.sh's OUT_DIR) as one JSON: per Pong run its env
frames/s, learner optimizer steps/s, chunks waiting for the learner and the GPU's busy share over the run (from
nvidia-smi's samples between the run's marks), and the isolated learner's figures.

    python benchmarks/gpu_learner_ab.py OUT_DIR --output benchmarks/gpu_learner_ab.json
"""

from __future__ import annotations

import argparse
import datetime
import json
import statistics
from pathlib import Path
from typing import Any


def _smi(path: Path) -> list[tuple[float, float]]:
    """(unix time, GPU busy %) per nvidia-smi sample."""
    out = []
    for line in path.read_text().splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) < 2:
            continue
        with_ms = parts[0].replace("/", "-")
        try:
            when = datetime.datetime.strptime(with_ms, "%Y-%m-%d %H:%M:%S.%f").timestamp()
            out.append((when, float(parts[1])))
        except ValueError:
            continue
    return out


def _marks(path: Path) -> list[tuple[float, str]]:
    return [(float(t), name) for t, name in (line.split(maxsplit=1) for line in path.read_text().splitlines())]


def _metrics(run_dir: Path) -> dict[str, Any]:
    """The run's median env frames/s and learner steps/s over its metrics rows, and its chunk queue."""
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines() if line.strip()]
    rows = rows[len(rows) // 4 :]  # past the start-up

    def median(key: str) -> float | None:
        values = [r[key] for r in rows if isinstance(r.get(key), int | float)]
        return statistics.median(values) if values else None

    return {
        "env_frames_per_s": median("throughput/env_frames_per_s"),
        "learner_updates_per_s": median("throughput/updates_per_s"),
        "rollouts_in_flight": median("queue/rollouts_in_flight"),
        "parked_workers": median("queue/parked_workers"),
        "rows": len(rows),
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out_dir")
    p.add_argument("--output", default="benchmarks/gpu_learner_ab.json")
    args = p.parse_args()
    out = Path(args.out_dir)
    smi, marks = _smi(out / "smi.csv"), _marks(out / "marks.txt")
    starts = {name.removesuffix("_start"): t for t, name in marks if name.endswith("_start")}
    runs = []
    for t_end, name in marks:
        if not name.endswith("_end"):
            continue
        phase = name.removesuffix("_end")
        busy = [u for t, u in smi if starts.get(phase, t_end) + 20 <= t <= t_end]  # past Ray's start-up
        runs.append({"phase": phase, "gpu_busy_median": statistics.median(busy) if busy else None,
                     "gpu_busy_p90": sorted(busy)[int(0.9 * (len(busy) - 1))] if busy else None})  # fmt: skip
    pong_dirs = sorted(out.glob("pong_*_*/"))
    for k, run_dir in enumerate(d for d in pong_dirs if (d / "metrics.jsonl").exists()):
        pong = [r for r in runs if r["phase"].startswith("pong_")]
        if k < len(pong):
            pong[k].update(_metrics(run_dir), run_dir=run_dir.name)
    learner = out / "learner_step_cost_cuda.json"
    report = {
        "benchmark": "gpu_learner_ab",
        "gpu": (out / "gpu.txt").read_text().strip() if (out / "gpu.txt").exists() else None,
        "cores": (out / "nproc.txt").read_text().strip() if (out / "nproc.txt").exists() else None,
        "new_commit": (out / "new_commit.txt").read_text().strip() if (out / "new_commit.txt").exists() else None,
        "runs": runs,
        "learner": json.loads(learner.read_text())["summary"] if learner.exists() else None,
    }
    Path(args.output).write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report["runs"], indent=2))


if __name__ == "__main__":
    main()

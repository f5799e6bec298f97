"""A GPU call's results (benchmarks/gpu_learner_ab.sh's OUT_DIR) as one JSON: the machine's env-only limit; per
Pong run its env frames/s, learner optimizer steps/s, parked actors, stage shares, evaluations and the GPU's busy
share (nvidia-smi's samples between the run's marks); the frame path rows it reached; and the isolated learner's
figures (learner_step_cost.py's JSONs, from OUT_DIR or named with --learner).

    python benchmarks/gpu_learner_ab.py OUT_DIR --learner lsc_appo.json --output benchmarks/gpu_learner_ab.json

OUT_DIR as the call left it (run_<name>/metrics.jsonl, frame_path.log) or as committed
(benchmarks/pong_h200_2026-11-30: metrics_<name>.jsonl, frame_path.txt).
"""

from __future__ import annotations

import argparse
import datetime
import json
import re
import statistics
from pathlib import Path
from typing import Any

RAY = "2.60.0"
"""The offline bundle's Ray (benchmarks/learner_step_cost.py's machine record on that machine says the same)."""
STARTUP_S = 20.0
"""nvidia-smi samples this long after a phase's start are not counted (Ray's and the actors' start-up)."""
SHARES = (
    "share/learner/update",
    "share/learner/wait",
    "share/rollout/env",
    "share/rollout/inference",
    "share/rollout/wait",
)


def _smi(path: Path) -> list[tuple[float, float]]:
    """(unix time, GPU busy %) per nvidia-smi sample (its timestamps are the machine's UTC)."""
    out = []
    for line in path.read_text().splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) < 2:
            continue
        try:
            when = datetime.datetime.strptime(parts[0].replace("/", "-"), "%Y-%m-%d %H:%M:%S.%f")
            out.append((when.replace(tzinfo=datetime.UTC).timestamp(), float(parts[1])))
        except ValueError:
            continue
    return out


def _marks(path: Path) -> list[tuple[float, str]]:
    return [(float(t), name) for t, name in (line.split(maxsplit=1) for line in path.read_text().splitlines())]


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def _run(metrics: Path) -> dict[str, Any]:
    """A Pong run's medians over its rows once the learner trains (its first rows are start-up: Ray, actors,
    the learner's compile), its evaluations, and how far it got."""
    rows = [json.loads(line) for line in metrics.read_text().splitlines() if line.strip()]
    rows = [r for r in rows if "throughput/env_frames_per_s" in r]
    first = next((i for i, r in enumerate(rows) if r.get("throughput/updates_per_s", 0) > 0), len(rows))
    steady = rows[first + 1 : -1] or rows[first:]  # the first training row is partial; the last is the stop's

    def median(key: str) -> float | None:
        return _median([r[key] for r in steady if isinstance(r.get(key), int | float)])

    evals, seen = [], set()
    for r in rows:
        if "eval/return_mean" in r and r.get("eval/version") not in seen:
            seen.add(r.get("eval/version"))
            evals.append({"time_s": r["time_s"], "env_frames": r["env_frames"], "return_mean": r["eval/return_mean"]})
    return {
        "env_frames_per_s": median("throughput/env_frames_per_s"),
        "updates_per_s": median("throughput/updates_per_s"),
        "parked_workers": median("queue/parked_workers"),
        "rollouts_in_flight": median("queue/rollouts_in_flight"),
        **{key: median(key) for key in SHARES},
        "steady_rows": len(steady),
        "first_update_row_s": rows[first]["time_s"] if first < len(rows) else None,
        "last_row": {k: rows[-1][k] for k in ("time_s", "env_frames", "updates")} if rows else None,
        "last_training_return": rows[-1].get("episode/return_mean") if rows else None,
        "evals": evals,
    }


def _machine(text: Any, start: float) -> dict[str, Any]:
    """The machine in the keys every table reads (docs/tables/format.py machine_line), from the call's files."""
    words = (text("versions.txt") or "").split()  # "3.12.3 (main, ...) [GCC ...] 2.11.0+cu130 13.0"
    python, torch = (words[0], words[-2]) if len(words) >= 3 else ("", "")
    cpu = next(
        (ln.split(":", 1)[1].strip() for ln in (text("lscpu.txt") or "").splitlines() if ln.startswith("Model name")),
        None,
    )
    return {
        "date": datetime.datetime.fromtimestamp(start, datetime.UTC).strftime("%Y-%m-%dT%H:%M"),
        "cpu": cpu,
        "cores": int(text("nproc.txt") or 0),
        "cuda": (text("gpu.txt") or "").split(" (UUID")[0].removeprefix("GPU 0: ") or None,
        "python": python or None,
        "torch": torch or None,
        "ray": RAY,
        "git_commit": (text("new_commit.txt") or "")[:7] or None,
    }


def _frame_path(log: Path) -> dict[str, float]:
    """The frame path rows central_inference.py printed before it stopped: agent steps/s per variant."""
    found = re.findall(r"round \d+ (\w+): ([\d,]+) agent steps/s", log.read_text()) if log.exists() else []
    return {name: float(rate.replace(",", "")) for name, rate in found}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out_dir")
    p.add_argument("--learner", action="append", default=[], help="a learner_step_cost JSON from another call")
    p.add_argument("--output", default="benchmarks/gpu_learner_ab.json")
    args = p.parse_args()
    out = Path(args.out_dir)
    smi, marks = _smi(out / "smi.csv"), _marks(out / "marks.txt")
    starts = {name.removesuffix("_start"): t for t, name in marks if name.endswith("_start")}
    exits = dict(line.rsplit(" exit ", 1) for line in (out / "exits.txt").read_text().splitlines())
    phases = {}
    for t_end, name in marks:
        if name.endswith("_end"):
            phase = name.removesuffix("_end")
            busy = [u for t, u in smi if starts[phase] + STARTUP_S <= t <= t_end]
            phases[phase] = {
                "seconds": t_end - starts[phase],
                "exit": int(exits.get(phase, -1)),
                "gpu_busy_median": _median(busy),
                "gpu_busy_p90": sorted(busy)[int(0.9 * (len(busy) - 1))] if busy else None,
            }
    files = {d.name.removeprefix("run_"): d / "metrics.jsonl" for d in sorted(out.glob("run_*"))}
    files |= {f.stem.removeprefix("metrics_"): f for f in sorted(out.glob("metrics_*.jsonl"))}  # as committed
    runs = {name: _run(f) for name, f in files.items() if f.exists()}
    learner = [
        json.loads(Path(f).read_text())
        for f in [*map(str, sorted(out.glob("learner_step_cost_*.json"))), *args.learner]
    ]
    text = lambda name: (out / name).read_text().strip() if (out / name).exists() else None  # noqa: E731
    report = {
        "benchmark": "gpu_learner_ab",
        "machine": _machine(text, marks[0][0]),
        "new_commit": text("new_commit.txt"),
        "env_limit": json.loads((out / "env_limit.json").read_text()) if (out / "env_limit.json").exists() else None,
        "phases": phases,
        "runs": runs,
        "frame_path_agent_steps_per_s": _frame_path(out / "frame_path.log") or _frame_path(out / "frame_path.txt"),
        "learner": [
            {"summary": d["summary"], "variants": d["variants"], "machine": d["machine"], "protocol": d["protocol"]}
            for d in learner
        ],
    }
    Path(args.output).write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps({k: {m: v for m, v in r.items() if m != "evals"} for k, r in runs.items()}, indent=1))
    print(json.dumps(phases, indent=1))


if __name__ == "__main__":
    main()

"""``topology.num_workers=auto`` against a sweep of worker counts, on this machine.

    make bench-autosize
    python benchmarks/autosize_sweep.py --workloads pong_appo cartpole_appo cartpole_ppo --workers 1 2 3 4 \\
        --rounds 2 --output benchmarks/autosize_sweep.json

For each workload (an experiment, its own envs per worker and everything else as it ships):

1. the probe: ``raylab.builders.autosize.fill`` with ``topology.num_workers=auto``, in a fresh process, as
   ``python -m raylab.train`` runs it before a run: what it measured (rollout and learner CPU seconds per env step
   on one core), what it chose and how long it took;
2. the sweep: ``python -m raylab.train +experiment=<workload> topology.num_workers=W`` for every W of
   ``--workers``, each a fresh process, training for ``--seconds`` (greedy evaluations off, the final one 1
   episode); the env frames/s of a run are read from its metrics.jsonl over the rows after ``--warmup`` seconds
   (Ray's start-up and the first chunks left out). Rounds alternate the worker counts (the order reverses every
   other round); medians over rounds.

The figure judged is ``auto's rate / the sweep's best rate`` (each the sweep's median for that W). Load averages
before and after every run are recorded.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
FRAMES = {"pong_appo": 4}
"""Env frames per env step (Atari's frame skip); 1 elsewhere."""
SECONDS = {"pong_appo": 45.0}
PROBE = """
import json, sys, time
from raylab.builders import autosize
from raylab.config.coerce import to_container
from raylab.train import compose
data = to_container(compose(sys.argv[1:]))
start = time.perf_counter()
filled, sizing = autosize.fill(data)
print("PROBE " + json.dumps({**sizing.to_dict(), "wall_s": time.perf_counter() - start}), flush=True)
"""


def probe(workload: str) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-c", PROBE, f"+experiment={workload}", "topology.num_workers=auto"],
        capture_output=True, text=True, check=True, env={**os.environ, "WANDB_MODE": "disabled"},
    )  # fmt: skip
    line = next(x for x in out.stdout.splitlines() if x.startswith("PROBE "))
    return json.loads(line.removeprefix("PROBE "))


def frames_per_s(rows: list[dict[str, Any]], warmup: float, frame_skip: int) -> float:
    rows = [r for r in rows if "env_steps" in r]
    first = next(r for r in rows if r["time_s"] >= warmup)
    last = rows[-1]
    return (last["env_steps"] - first["env_steps"]) * frame_skip / (last["time_s"] - first["time_s"])


def sweep_run(workload: str, workers: int, seconds: float, warmup: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="raylab-autosize-sweep-") as tmp:
        run_dir = Path(tmp) / "run"
        cmd = [sys.executable, "-m", "raylab.train", f"+experiment={workload}", f"topology.num_workers={workers}",
               f"stop.seconds={seconds:g}", "stop.env_steps=null", "stop.mean_return=null", "stop.train_return=null",
               "eval.every_seconds=null", "eval.final_episodes=1", "logger.console=false",
               "logger.report_every_seconds=2", f"hydra.run.dir={run_dir}"]  # fmt: skip
        load_before = os.getloadavg()
        out = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "WANDB_MODE": "disabled"})
        if out.returncode != 0:
            raise SystemExit(f"autosize_sweep: {workload} W={workers} failed: {out.stderr.strip()[-500:]}")
        rows = [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines() if x.strip()]
    rate = frames_per_s(rows, warmup, FRAMES.get(workload, 1))
    return {"workers": workers, "frames_per_s": round(rate, 1), "load_before": load_before,
            "load_after": os.getloadavg()}  # fmt: skip


def rescore(output: str) -> int:
    """Recompute auto's choice from each workload's recorded probe (its measured seconds per step and cpus) with
    today's rule, keeping the recorded choice under ``first_rule``: the sweep itself is not re-run."""
    from raylab.bench.machine import machine_info
    from raylab.builders.autosize import ALTERNATING, overlapped_workers

    report = json.loads(Path(output).read_text())
    for r in report["results"].values():
        p = r["probe"]
        if p["topology"] in ALTERNATING:
            auto = p["cpus"]
        else:
            auto = overlapped_workers(p["cpus"], p["rollout_s_per_step"], p["learner_s_per_step"])
        r.setdefault("first_rule", {"auto_workers": r["auto_workers"], "auto_over_best": r["auto_over_best"]})
        med = r["median_frames_per_s"]
        r["auto_workers"] = auto
        r["auto_over_best"] = round(med[str(auto)] / med[str(r["sweep_best_workers"])], 3) if str(auto) in med else None
    report["rescored_at"] = machine_info()["git_commit"]
    Path(output).write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps({k: (r["auto_workers"], r["auto_over_best"]) for k, r in report["results"].items()}))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workloads", nargs="+", default=["pong_appo", "cartpole_appo", "cartpole_ppo"])
    parser.add_argument("--workers", nargs="+", type=int, default=[1, 2, 3, 4])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=25.0, help="training seconds per run (pong_appo: 45)")
    parser.add_argument("--warmup", type=float, default=8.0)
    parser.add_argument("--output", default=str(HERE / "autosize_sweep.json"))
    parser.add_argument("--rescore", action="store_true", help="recompute auto's choice in --output; run nothing")
    args = parser.parse_args(argv)
    if args.rescore:
        return rescore(args.output)
    from raylab.bench.machine import machine_info, save_report

    results: dict[str, Any] = {}  # a workload re-run replaces its own entry; the others in --output stay
    if Path(args.output).is_file():
        results = json.loads(Path(args.output).read_text())["results"]
    for workload in args.workloads:
        started = time.time()
        chosen = probe(workload)
        runs = []
        for k in range(args.rounds):
            order = args.workers if k % 2 == 0 else list(reversed(args.workers))
            for w in order:
                seconds = SECONDS.get(workload, args.seconds)
                runs.append({"round": k, **sweep_run(workload, w, seconds, args.warmup)})
                print(f"{workload} W={w} round {k}: {runs[-1]['frames_per_s']:,.0f} frames/s", flush=True)
        medians = {w: statistics.median(r["frames_per_s"] for r in runs if r["workers"] == w) for w in args.workers}
        best = max(medians, key=lambda w: medians[w])
        auto = chosen["num_workers"]
        results[workload] = {
            "probe": chosen,
            "runs": runs,
            "median_frames_per_s": {str(w): round(v, 1) for w, v in medians.items()},
            "sweep_best_workers": best,
            "auto_workers": auto,
            "auto_over_best": round(medians[auto] / medians[best], 3) if auto in medians else None,
            "wall_s": round(time.time() - started, 1),
            "rounds": args.rounds,
            "measured_at": machine_info()["git_commit"],
        }
        print(f"{workload}: auto {auto}, sweep best {best}, auto/best {results[workload]['auto_over_best']}")
        command = "python benchmarks/autosize_sweep.py " + " ".join(argv if argv is not None else sys.argv[1:])
        save_report(args.output, "autosize_sweep", __doc__.split("\n\n", 2)[2], command, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())

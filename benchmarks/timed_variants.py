"""Throughput of config variants under ``bench timed``, alternating, repeated: medians and the ratio.

python benchmarks/timed_variants.py coinrun_appo_learner_threads.json --minutes 2 --repeats 2 \\
    --variant threads1=learner.num_threads=1 --variant threads2=learner.num_threads=2 +experiment=coinrun_appo

Each run is a fresh ``python -m raylab.bench timed --mode parallel`` process (Ray start-up excluded from the
training time). Writes benchmarks/<output> with every run's average FPS, CPU utilization and return.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from raylab.bench.machine import machine_info


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("output")
    parser.add_argument("--minutes", type=float, default=2.0)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--mode", default="parallel", choices=("parallel", "sequential"))
    parser.add_argument("--variant", action="append", required=True, metavar="NAME=OVERRIDES")
    args, overrides = parser.parse_known_args()
    args.overrides = [o for o in overrides if o != "--"]
    variants = [(v.partition("=")[0], v.partition("=")[2].split()) for v in args.variant]
    env = {**os.environ, "WANDB_MODE": "disabled"}
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        for repeat in range(args.repeats):
            for name, extra in variants:
                out = Path(tmp) / f"{name}_{repeat}"
                cmd = [sys.executable, "-m", "raylab.bench", "timed", "--duration-hours", str(args.minutes / 60),
                       "--mode", args.mode, "--output-dir", str(out), *args.overrides, *extra,
                       "logger.console=false", "eval.final_episodes=0"]  # fmt: skip
                subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL)
                bm = json.loads((out / "benchmark_metrics.json").read_text())
                run = {
                    "variant": name,
                    "repeat": repeat,
                    "average_fps": bm["average_fps"],
                    "total_timesteps": bm["total_timesteps"],
                    "total_updates": bm["total_updates"],
                    "cpu_utilization": bm["resource_usage"]["cpu_utilization"],
                    "average_reward_last_100_episodes": bm["performance"]["average_reward_last_100_episodes"],
                }
                runs.append(run)
                print(json.dumps(run), flush=True)
    medians = {name: statistics.median(r["average_fps"] for r in runs if r["variant"] == name) for name, _ in variants}
    first = variants[0][0]
    result = {
        "benchmark": "timed_variants",
        "overrides": args.overrides,
        "variants": {name: extra for name, extra in variants},
        "minutes": args.minutes,
        "mode": args.mode,
        "machine": machine_info(),
        "median_average_fps": medians,
        f"ratio_vs_{first}": {name: fps / medians[first] for name, fps in medians.items()},
        "runs": runs,
    }
    print(json.dumps({k: result[k] for k in ("median_average_fps", f"ratio_vs_{first}")}))
    (Path(__file__).parent / args.output).write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The frame path on image envs, stage by stage, against what one core allows: before and after each change.

    python benchmarks/frame_path.py --output benchmarks/frame_path.json

For each workload (Atari Pong through EnvPool, 16 envs per worker, the Nature CNN; Procgen CoinRun, 32 envs
per worker, the Nature CNN and the IMPALA CNN), in one process, alternating round by round:

    env only        the worker's vector env stepped with random actions: one core's limit
    in process      one rollout worker (the class the actors run) sampling chunks in this process, no Ray,
                    loading a new weights version before each chunk: env + inference (+ chunk assembly)
    W workers       W rollout actors on Ray feeding a sink that drops each chunk and publishes a new weights
                    version per round (raylab/bench/sink.py): the full path without a learner

each with the rollout precision of every variant (``model.rollout_precision``: fp32, the old path; bf16). The
ratio the frame path is judged by is ``full path / (W x in process)``: what transport and orchestration lose
against env + inference in one process. Medians over rounds; Ray's start-up and each measurement's first
second are not measured (raylab/bench/sampling.py).
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

WORKLOADS = {
    "pong": ["+experiment=breakout_appo", "env.id=Pong-v5"],
    "coinrun": ["+experiment=coinrun_appo"],
    "coinrun_impala": ["+experiment=coinrun_appo", "model=impala_cnn"],
}
PRECISIONS = ("fp32", "bf16")


def main() -> int:
    import dataclasses

    import torch

    from raylab.bench.machine import machine_info
    from raylab.bench.sampling import _env_only, _in_process, _sampling
    from raylab.config import resolve
    from raylab.envs.registry import env_spaces
    from raylab.remote.runtime import shutdown_ray, start_local_ray
    from raylab.train import compose

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workloads", nargs="+", default=list(WORKLOADS), choices=list(WORKLOADS))
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--output", default="benchmarks/frame_path.json")
    args = parser.parse_args()
    torch.set_num_threads(1)
    start_local_ray(math.ceil(max(args.workers)) + 1)
    results: dict[str, Any] = {}
    try:
        for name in args.workloads:
            overrides = WORKLOADS[name]
            base = resolve(compose([*overrides, "logger.console=false"]), run_dir=tempfile.mkdtemp())
            spaces = env_spaces(base.env)
            cfgs = {
                p: dataclasses.replace(base, model=dataclasses.replace(base.model, rollout_precision=p))
                for p in PRECISIONS
            }
            rows: dict[str, list[float]] = {"env_only": []}
            for p in PRECISIONS:
                rows[f"in_process/{p}"] = []
                for w in args.workers:
                    rows[f"{w}_workers/{p}"] = []
            shares: dict[str, list[dict[str, float]]] = {k: [] for k in rows if "workers" in k}
            for round_ in range(args.rounds):
                order = list(PRECISIONS) if round_ % 2 == 0 else list(reversed(PRECISIONS))
                rows["env_only"].append(_env_only(base, args.seconds))
                for p in order:
                    rows[f"in_process/{p}"].append(_in_process(cfgs[p], spaces, args.seconds))
                    for w in args.workers if round_ % 2 == 0 else reversed(args.workers):
                        out = _sampling(cfgs[p], spaces, w, args.seconds)
                        rows[f"{w}_workers/{p}"].append(out["agent_steps_per_s"])
                        shares[f"{w}_workers/{p}"].append({k: v for k, v in out.items() if k.endswith("share")})
                print(f"{name}: round {round_ + 1}/{args.rounds} done", flush=True)
            med = {k: statistics.median(v) for k, v in rows.items()}
            frames = base.env.frame_skip
            entry: dict[str, Any] = {
                "overrides": overrides,
                "envs_per_worker": base.topology.envs_per_worker,
                "model": base.model.encoder,
                "frame_skip": frames,
                "median_agent_steps_per_s": med,
                "median_frames_per_s": {k: v * frames for k, v in med.items()},
                "full_over_in_process": {
                    f"{w}_workers/{p}": med[f"{w}_workers/{p}"] / (w * med[f"in_process/{p}"])
                    for p in PRECISIONS
                    for w in args.workers
                },
                "in_process_over_env_only": {p: med[f"in_process/{p}"] / med["env_only"] for p in PRECISIONS},
                "bf16_over_fp32": {
                    k.split("/")[0]: med[k] / med[k.replace("bf16", "fp32")] for k in med if k.endswith("/bf16")
                },
                "worker_shares": {
                    k: {s: statistics.median(r[s] for r in v) for s in v[0]} for k, v in shares.items() if v
                },
                "rounds": rows,
            }
            results[name] = entry
            for k, v in med.items():
                ratio = entry["full_over_in_process"].get(k)
                extra = f", {ratio:.0%} of W x in process" if ratio is not None else ""
                print(f"  {name} {k}: {v:,.0f} agent steps/s ({v * frames:,.0f} frames/s){extra}", flush=True)
    finally:
        shutdown_ray()
    report = {
        "benchmark": "frame_path",
        "protocol": f"{args.rounds} rounds of {args.seconds:g} s per measurement, the variants alternating; W "
        f"rollout actors of 1 CPU each on an embedded Ray with {max(args.workers) + 1} CPUs; medians",
        "machine": machine_info(),
        "workers": args.workers,
        "results": results,
    }
    Path(args.output).write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The frame path with central inference against per-actor inference, on this machine.

    python benchmarks/central_inference.py --output benchmarks/central_inference.json

For each workload (Pong through EnvPool, 16 envs per worker, the Nature CNN: ``pong_appo``; CartPole, 32 envs
per worker, an MLP: ``cartpole_appo``), in one process and one Ray session, the variants alternating round by
round (the order reversed every other round):

    env only          the worker's vector env stepped with random actions: one core's limit
    in process        one rollout worker sampling in this process, acting with its own policy: env + inference
    W local           W rollout actors on Ray, each acting with its own policy (topology.inference=local),
                      feeding a sink that drops each chunk and publishes a new weights version per round
    W central         W rollout actors stepping their envs in topology.env_splits halves and one inference
                      actor acting for all of them (topology.inference=central), the same sink; the new
                      weights go to the inference actor

Each W-actor variant reports agent steps/s and frames/s, its ratio to W x in process, the rollout actors'
time split (env, inference: for central, time blocked on the inference actor), and for central the rows per
batch the inference actor acted on and its busy fraction. Medians over rounds; each measurement's first
second is not measured (raylab/bench/sink.py). Every actor reserves one logical CPU; the machine has the cores
``machine`` says, so W local and W central with W + 1 processes share them.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

WORKLOADS = {
    "pong": ["+experiment=pong_appo"],
    "cartpole": ["+experiment=cartpole_appo"],
}


def main() -> int:
    import torch

    from raylab.bench.machine import machine_info
    from raylab.bench.sampling import _env_only, _in_process, shares
    from raylab.bench.sink import sample_with_sink
    from raylab.builders import build_learner
    from raylab.config import resolve
    from raylab.envs.registry import env_spaces
    from raylab.remote.ray_backend import RayBackend
    from raylab.remote.runtime import shutdown_ray, start_local_ray
    from raylab.train import compose

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workloads", nargs="+", default=list(WORKLOADS), choices=list(WORKLOADS))
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--output", default="benchmarks/central_inference.json")
    args = parser.parse_args()
    torch.set_num_threads(1)
    start_local_ray(max(args.workers) + 2)
    results: dict[str, Any] = {}
    try:
        for name in args.workloads:
            base = resolve(compose([*WORKLOADS[name], "logger.console=false"]), run_dir=tempfile.mkdtemp())
            spaces = env_spaces(base.env)
            weights = build_learner(base, spaces).get_weights()
            torch.set_num_threads(1)

            def variant(inference: str, w: int, base: Any = base) -> Any:
                topo = dataclasses.replace(base.topology, inference=inference, num_workers=w)
                return dataclasses.replace(base, topology=topo)

            keys = [f"{w}_{mode}" for w in args.workers for mode in ("local", "central")]
            rows: dict[str, list[dict[str, float]]] = {k: [] for k in ["env_only", "in_process", *keys]}
            for round_ in range(args.rounds):
                rows["env_only"].append({"agent_steps_per_s": _env_only(base, args.seconds)})
                rows["in_process"].append({"agent_steps_per_s": _in_process(base, spaces, args.seconds)})
                for key in keys if round_ % 2 == 0 else list(reversed(keys)):
                    w, mode = int(key.split("_")[0]), key.split("_")[1]
                    cfg = variant(mode, w)
                    backend = RayBackend(cfg.ray, cfg.topology.max_actor_restarts)
                    steps, timings, wall = sample_with_sink(backend, cfg, spaces, w, args.seconds, weights)
                    out = {"agent_steps_per_s": steps / wall, **shares(timings, w, wall)}
                    out.update({k: v for k, v in timings.items() if k.startswith("inference_")})
                    rows[key].append(out)
                    print(f"{name} round {round_ + 1} {key}: {out['agent_steps_per_s']:,.0f} agent steps/s", flush=True)
            med = {k: {m: statistics.median(r[m] for r in v) for m in v[0]} for k, v in rows.items()}
            alone = med["in_process"]["agent_steps_per_s"]
            frames = base.env.frame_skip
            results[name] = {
                "overrides": WORKLOADS[name], "envs_per_worker": base.topology.envs_per_worker,
                "env_splits": dataclasses.replace(base.topology, inference="central").splits,
                "model": base.model.encoder, "frame_skip": frames, "median": med,
                "median_frames_per_s": {k: v["agent_steps_per_s"] * frames for k, v in med.items()},
                "over_in_process": {
                    k: med[k]["agent_steps_per_s"] / (int(k.split("_")[0]) * alone) for k in keys
                },
                "central_over_local": {
                    str(w): med[f"{w}_central"]["agent_steps_per_s"] / med[f"{w}_local"]["agent_steps_per_s"]
                    for w in args.workers
                },
                "rounds": rows,
            }  # fmt: skip
            for w in args.workers:
                print(
                    f"{name}: {w} central / {w} local = {results[name]['central_over_local'][str(w)]:.3f}", flush=True
                )
    finally:
        shutdown_ray()
    report = {
        "benchmark": "central_inference",
        "protocol": f"{args.rounds} rounds of {args.seconds:g} s per measurement, the variants alternating; rollout "
        f"and inference actors of 1 logical CPU each on an embedded Ray with {max(args.workers) + 2} CPUs; medians",
        "machine": machine_info(),
        "workers": args.workers,
        "results": results,
    }
    Path(args.output).write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The machine's env-only limit: P processes, each stepping one rollout worker's vector env with random actions
(no inference, no Ray), all at once; the sum of their agent steps/s is the most any number of P rollout actors
can sample here, the ceiling the frame path table's rows are read against.

    python benchmarks/env_limit.py +experiment=pong_appo --processes 1 14 16 --seconds 10 \\
        --output /tmp/env_limit.json

Each process builds the env as a rollout actor does (``make_vector_env`` with topology.envs_per_worker), takes
one step, waits for the others at a barrier, then steps for ``--seconds``. Frames/s are agent steps/s times the
env's frame skip (env.frame_skip; Atari: 4). Process counts run in the order given, once each.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import queue
import sys
import time
from pathlib import Path
from typing import Any


def _child(overrides: list[str], seconds: float, barrier: Any, results: Any) -> None:
    os.environ.setdefault("OMP_NUM_THREADS", "1")  # before numpy and torch load: one thread, as an actor
    import numpy as np

    from raylab.config import resolve
    from raylab.envs.registry import make_vector_env
    from raylab.train import compose

    cfg = resolve(compose(overrides), run_dir="/tmp/raylab-env-limit")
    venv = make_vector_env(cfg.env, cfg.topology.envs_per_worker, seed=cfg.seed + os.getpid())
    venv.reset()
    rng, n = np.random.default_rng(os.getpid()), int(venv.single_action_space.n)
    venv.step(rng.integers(0, n, venv.num_envs))
    barrier.wait()
    steps, start = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - start) < seconds:
        venv.step(rng.integers(0, n, venv.num_envs))
        steps += venv.num_envs
    venv.close()
    results.put((steps / elapsed, cfg.env.frame_skip))


def measure(overrides: list[str], processes: int, seconds: float) -> dict[str, Any]:
    ctx = mp.get_context("spawn")
    barrier, results = ctx.Barrier(processes), ctx.Queue()
    procs = [ctx.Process(target=_child, args=(overrides, seconds, barrier, results)) for _ in range(processes)]
    for p in procs:
        p.start()
    rates: list[tuple[float, int]] = []
    deadline = time.monotonic() + seconds + 180
    while len(rates) < processes:
        try:
            rates.append(results.get(timeout=1.0))
        except queue.Empty:
            failed = [p.exitcode for p in procs if p.exitcode not in (None, 0)]
            if failed or time.monotonic() > deadline:
                for p in procs:
                    p.terminate()
                raise SystemExit(f"env_limit: a child failed (exit codes {failed}) or ran past its time") from None
    for p in procs:
        p.join()
    steps = sum(rate for rate, _ in rates)
    return {"processes": processes, "agent_steps_per_s": steps, "frames_per_s": steps * rates[0][1],
            "frame_skip": rates[0][1], "per_process": sorted(rate for rate, _ in rates)}  # fmt: skip


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("overrides", nargs="*", default=["+experiment=pong_appo"])
    p.add_argument("--processes", type=int, nargs="+", default=[1, os.cpu_count() or 1])
    p.add_argument("--seconds", type=float, default=10.0)
    p.add_argument("--output", default="/tmp/env_limit.json")
    args = p.parse_args()
    report: dict[str, Any] = {
        "benchmark": "env_limit",
        "overrides": args.overrides,
        "cores": os.cpu_count(),
        "rows": [],
    }
    for count in args.processes:  # the file is written after each row: a later count's failure keeps the earlier
        row = measure(args.overrides, count, args.seconds)
        report["rows"].append(row)
        Path(args.output).write_text(json.dumps(report, indent=2) + "\n")
        print(f"{count:3d} processes: {row['frames_per_s']:,.0f} frames/s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""EnvPool's CartPole-v1 against raylab's own vector env of gymnasium CartPole-v1, stepped alone, in one process.

    python benchmarks/envpool_classic.py --output benchmarks/envpool_classic.json

Issue 20 asks whether EnvPool should be a backend for the classic-control envs it carries. Before building it,
this measures what it could win where raylab's rollout workers step their envs: E envs of one worker as one
batch, random actions, one thread. ``envpool`` is EnvPool's synchronous pool (num_threads=1, batch = all
envs; its next-step autoreset, so not raylab's contract); ``backend`` is ``env.backend=envpool``, the same pool
behind raylab's same-step contract (raylab/envs/classic_pool.py: a finished env's reset step is taken at once,
a second pool call on most steps of random play); ``serial`` is ``make_vector_env(env.id=CartPole-v1)``:
gymnasium's CartPole behind raylab's wrapper stack and same-step autoreset. Variants alternate round by round;
medians.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np


def rate(step, actions: np.ndarray) -> float:
    start = time.perf_counter()
    for row in actions:
        step(row)
    return actions.size / (time.perf_counter() - start)


def main() -> int:
    import envpool

    from raylab.bench.machine import machine_info
    from raylab.config import EnvConfig
    from raylab.envs.registry import make_vector_env

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--envs", type=int, nargs="+", default=[8, 64])
    parser.add_argument("--steps", type=int, default=3000, help="batched steps per measurement")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--output", default="benchmarks/envpool_classic.json")
    args = parser.parse_args()
    results: dict[str, dict[str, list[float]]] = {}
    for n in args.envs:
        pool = envpool.make("CartPole-v1", env_type="gymnasium", num_envs=n, seed=0, num_threads=1)
        pool.reset()
        venv = make_vector_env(EnvConfig(id="CartPole-v1"), n, seed=0)
        venv.reset()
        backend = make_vector_env(EnvConfig(id="CartPole-v1", backend="envpool"), n, seed=0)
        backend.reset()
        actions = np.random.default_rng(0).integers(0, 2, (args.steps, n))
        steps = {"envpool": pool.step, "backend": backend.step, "serial": venv.step}
        runs: dict[str, list[float]] = {name: [] for name in steps}
        for round_ in range(args.rounds):
            for name in list(steps) if round_ % 2 == 0 else reversed(list(steps)):
                runs[name].append(rate(steps[name], actions))
        results[str(n)] = runs
        med = {k: statistics.median(v) for k, v in runs.items()}
        print(f"{n} envs: envpool {med['envpool']:,.0f}  backend {med['backend']:,.0f}  serial {med['serial']:,.0f} "
              f"env steps/s  ratios {med['envpool'] / med['serial']:.2f} / {med['backend'] / med['serial']:.2f}",
              flush=True)  # fmt: skip
    report = {
        "benchmark": "envpool_classic",
        "protocol": f"CartPole-v1, random actions, {args.steps} batched steps per measurement, {args.rounds} "
        "alternating rounds, one process, one thread; medians",
        "machine": machine_info(),
        "median_env_steps_per_s": {
            n: {k: statistics.median(v) for k, v in runs.items()} for n, runs in results.items()
        },
        "envpool_over_serial": {
            n: statistics.median(runs["envpool"]) / statistics.median(runs["serial"]) for n, runs in results.items()
        },
        "backend_over_serial": {
            n: statistics.median(runs["backend"]) / statistics.median(runs["serial"]) for n, runs in results.items()
        },
        "runs": results,
    }
    Path(args.output).write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

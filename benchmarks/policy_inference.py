"""A rollout actor's act() for a small MLP actor-critic: torch against its NumPy copy (model.numpy_inference).

    python benchmarks/policy_inference.py --output benchmarks/policy_inference.json

The model of ``+experiment=cartpole_appo`` (64 x 64, ReLU, Categorical over 2 actions) and of
``+experiment=pendulum_ppo`` (a Gaussian head with observation normalization), acting on batches of 8, 32 and
64 observations with sampling and log-probabilities, as APPO's rollout actors do; one thread, as a rollout
actor runs. The two variants alternate round by round; medians of microseconds per call.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def per_call_us(act, obs: np.ndarray, calls: int) -> float:
    for _ in range(50):
        act(obs)
    start = time.perf_counter()
    for _ in range(calls):
        act(obs)
    return (time.perf_counter() - start) / calls * 1e6


def main() -> int:
    import torch

    from raylab.algos.actor_critic import ActorCriticPolicy
    from raylab.bench.machine import machine_info
    from raylab.config import resolve
    from raylab.envs.registry import env_spaces
    from raylab.models.factory import build_actor_critic
    from raylab.train import compose

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batches", type=int, nargs="+", default=[8, 32, 64])
    parser.add_argument("--calls", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--output", default="benchmarks/policy_inference.json")
    args = parser.parse_args()
    torch.set_num_threads(1)
    results: dict[str, dict[str, dict[str, list[float]]]] = {}
    for experiment in ("cartpole_appo", "pendulum_ppo"):
        cfg = resolve(compose([f"+experiment={experiment}", "logger.console=false"]), run_dir=tempfile.mkdtemp())
        spaces = env_spaces(cfg.env)
        policies = {
            "torch": ActorCriticPolicy(build_actor_critic(cfg.model, spaces), seed=0),
            "numpy": ActorCriticPolicy(build_actor_critic(cfg.model, spaces), seed=0, numpy_inference=True),
        }
        assert policies["numpy"].numpy is not None
        results[experiment] = {}
        for batch in args.batches:
            obs = np.random.default_rng(0).normal(0, 1, (batch, *spaces.obs_shape)).astype(np.float32)
            runs: dict[str, list[float]] = {name: [] for name in policies}
            for round_ in range(args.rounds):
                for name in list(policies) if round_ % 2 == 0 else reversed(list(policies)):
                    runs[name].append(per_call_us(policies[name].act, obs, args.calls))
            results[experiment][str(batch)] = runs
            med = {k: statistics.median(v) for k, v in runs.items()}
            print(f"{experiment} batch {batch}: torch {med['torch']:.1f} us, numpy {med['numpy']:.1f} us, "
                  f"{med['torch'] / med['numpy']:.2f}x", flush=True)  # fmt: skip
    report = {
        "benchmark": "policy_inference",
        "protocol": f"ActorCriticPolicy.act (sample + log-probs), {args.calls} calls per measurement, "
        f"{args.rounds} alternating rounds, one thread; medians of microseconds per call",
        "machine": machine_info(),
        "median_us": {
            e: {b: {k: statistics.median(v) for k, v in runs.items()} for b, runs in r.items()}
            for e, r in results.items()
        },
        "torch_over_numpy": {
            e: {b: statistics.median(runs["torch"]) / statistics.median(runs["numpy"]) for b, runs in r.items()}
            for e, r in results.items()
        },
        "runs": results,
    }
    Path(args.output).write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""A uniformly random policy on an experiment's training env: the baseline a learned policy is compared with.

python benchmarks/random_policy.py snake_a3c snake_random_policy.json --episodes 1000
python benchmarks/random_policy.py coinrun_ppo coinrun_random_policy.json --episodes 1000
    # writes benchmarks/<output>: mean/std return and length, plus the env family's episode extras
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

from raylab.bench.machine import machine_info
from raylab.config import resolve
from raylab.envs.registry import make_vector_env
from raylab.train import compose


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("experiment")
    parser.add_argument("output", help="file name under benchmarks/")
    parser.add_argument("--episodes", type=int, default=1000)
    parser.add_argument("--envs", type=int, default=10)
    args = parser.parse_args()
    cfg = resolve(compose([f"+experiment={args.experiment}"]), f"outputs/{args.experiment}_random")
    env = make_vector_env(cfg.env, args.envs, seed=123, worker_index=99)
    rng = np.random.default_rng(0)
    env.reset()
    returns, lengths = [], []
    extras: defaultdict[str, list[float]] = defaultdict(list)
    while len(returns) < args.episodes:
        step = env.step(rng.integers(env.single_action_space.n, size=env.num_envs))
        for _, stats in step.episodes:
            returns.append(stats["return"])
            lengths.append(stats["length"])
            for key, value in stats.items():
                if key not in ("return", "length"):
                    extras[key].append(float(value))
    result = {
        "experiment": args.experiment,
        "env": cfg.env.id,
        "episodes": len(returns),
        "return_mean": float(np.mean(returns)),
        "return_std": float(np.std(returns)),
        "episode_length_mean": float(np.mean(lengths)),
        **{f"{key}_mean": float(np.mean(values)) for key, values in sorted(extras.items())},
    }
    print(json.dumps(result))
    out = Path(__file__).parent / args.output
    out.write_text(json.dumps({"benchmark": "random_policy", "machine": machine_info(), **result}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

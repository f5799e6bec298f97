"""A uniformly random policy on snake_a3c's env (1000 episodes): the baseline snake_a3c is compared with.

python benchmarks/snake_random_policy.py      # writes benchmarks/snake_random_policy.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

from raylab.bench.machine import machine_info
from raylab.config import resolve
from raylab.envs.registry import make_vector_env
from raylab.train import compose


def main() -> int:
    cfg = resolve(compose(["+experiment=snake_a3c"]), "outputs/snake_random")
    env = make_vector_env(cfg.env, 10, seed=123, worker_index=99)
    rng = np.random.default_rng(0)
    env.reset()
    returns, lengths, snake = [], [], []
    while len(returns) < 1000:
        step = env.step(rng.integers(env.single_action_space.n, size=env.num_envs))
        for _, stats in step.episodes:
            returns.append(stats["return"])
            lengths.append(stats["length"])
            snake.append(stats["snake_length"])
    result = {
        "episodes": len(returns),
        "return_mean": float(np.mean(returns)),
        "return_std": float(np.std(returns)),
        "episode_length_mean": float(np.mean(lengths)),
        "snake_length_mean": float(np.mean(snake)),
    }
    print(json.dumps(result))
    out = Path(__file__).with_suffix(".json")
    out.write_text(
        json.dumps({"benchmark": "snake_random_policy", "machine": machine_info(), **result}, indent=2) + "\n"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

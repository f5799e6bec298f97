"""RLlib's DQN on CartPole for ``python -m raylab.bench e2e``; run as a script in a venv with ``ray[rllib]``.

    .venv-rllib/bin/python benchmarks/rllib_dqn.py SECONDS SEED TARGET

Imports only the standard library and Ray (RLlib pins an older gymnasium than raylab, so it lives in its own
virtualenv without raylab's dependencies) and prints one ``RESULT {json}`` line.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any


def rllib_dqn(seconds: float, seed: int, target: float) -> dict[str, Any]:
    """RLlib's tuned CartPole DQN example (rllib/examples/algorithms/dqn/cartpole_dqn.py) with 2 env runners."""
    import logging

    import ray
    from ray.rllib.algorithms.dqn import DQNConfig
    from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig

    ray.init(num_cpus=max(os.cpu_count() or 1, 3), include_dashboard=False, logging_level=logging.ERROR)
    config = (
        DQNConfig()
        .environment("CartPole-v1")
        .env_runners(num_env_runners=2)
        .training(
            lr=0.0005, train_batch_size_per_learner=32,
            replay_buffer_config={"type": "PrioritizedEpisodeReplayBuffer", "capacity": 50_000, "alpha": 0.6,
                                  "beta": 0.4},
            n_step=(2, 5), double_q=True, dueling=True, epsilon=[(0, 1.0), (25_000, 0.02)],
        )
        .rl_module(model_config=DefaultModelConfig(
            fcnet_hiddens=[256], fcnet_activation="tanh", fcnet_bias_initializer="zeros_", head_fcnet_hiddens=[256],
            head_fcnet_bias_initializer="zeros_",
        ))
        .debugging(seed=seed)
    )  # fmt: skip
    algo = config.build_algo()
    start = time.perf_counter()
    curve: list[dict[str, float]] = []
    reached_s = None
    sampled = trained = 0.0
    while time.perf_counter() - start < seconds:
        result = algo.train()
        elapsed = time.perf_counter() - start
        runners = result.get("env_runners", {})
        ret = float(runners.get("episode_return_mean", float("nan")))
        sampled = float(result.get("num_env_steps_sampled_lifetime", runners.get("num_env_steps_sampled_lifetime", 0)))
        learners = result.get("learners", {}).get("__all_modules__", {})
        trained = float(
            learners.get("num_module_steps_trained_lifetime", learners.get("num_env_steps_trained_lifetime", 0))
        )
        curve.append({"time_s": elapsed, "env_steps": sampled, "return_mean": ret})
        if reached_s is None and ret >= target:
            reached_s = elapsed
    elapsed = time.perf_counter() - start
    algo.stop()
    ray.shutdown()
    returns = [c["return_mean"] for c in curve if c["return_mean"] == c["return_mean"]]
    return {
        "framework": "rllib",
        "train_s": elapsed,
        "env_steps": sampled,
        "env_steps_per_s": sampled / elapsed,
        "samples_trained": trained,
        "updates_per_s": trained / 32 / elapsed,
        "samples_per_env_step": trained / max(sampled, 1.0),
        "target_reached_s": reached_s,
        "best_return_mean": max(returns) if returns else None,
        "curve": curve,
    }


if __name__ == "__main__":
    seconds, seed, target = float(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
    print("RESULT " + json.dumps(rllib_dqn(seconds, seed, target)), flush=True)

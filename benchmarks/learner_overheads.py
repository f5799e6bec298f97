"""Before/after, in one run: fused Adam and cached target-update parameter lists in the DQN learner; and
what raylab's default DQN update costs over seed 004's simpler one on the Snake network.

    python benchmarks/learner_overheads.py benchmarks/learner_overheads.json

"before" rebuilds what the learner did until this change: Adam's default (foreach) implementation, and the
online/target parameter lists walked from the module tree on every target update. "after" is the learner
as it is. Both learn from the same batch on the same initial weights; the variants alternate for 7 rounds
and the figures are medians of microseconds per update (torch on 1 thread, as learner.num_threads=1).

"update_work" times the learner as it is with raylab's default DQN update (double DQN, Polyak target update
every update, gradient clipping) against seed 004's (vanilla target, hard copy every 100 updates, no
clipping), on the Snake MLP: the difference is what raylab's defaults cost per update in seed 004's loop.
"""

from __future__ import annotations

import json
import statistics
import sys
import time

import numpy as np
import torch

from raylab.bench.machine import machine_info
from raylab.builders.algorithms import build_dqn
from raylab.config import DQNConfig, ModelConfig
from raylab.learner import Learner
from raylab.models import build_q_network
from raylab.types import Batch, EnvSpaces

NETWORKS = {
    "snake_mlp_128x128_b32": (
        EnvSpaces((11,), np.dtype(np.float32), 3, "Discrete(3)"),
        ModelConfig(hidden_sizes=(128, 128)),
    ),
    "mario_cnn_b32": (
        EnvSpaces((4, 84, 84), np.dtype(np.uint8), 7, "Discrete(7)"),
        ModelConfig(encoder="nature_cnn", hidden_sizes=(512,), dueling=True),
    ),
}


def make(spaces: EnvSpaces, model: ModelConfig, before: bool, seed_algo: bool = False) -> Learner:
    torch.manual_seed(0)
    algo = DQNConfig(double=False, target_update_every=100, target_tau=1.0) if seed_algo else DQNConfig()
    objective = build_dqn(build_q_network(model, spaces), algo)
    learner = Learner(objective, lr=1e-3, device="cpu", prefetch=False, max_grad_norm=None if seed_algo else 10.0)
    if before:
        learner.optimizer = torch.optim.Adam(learner.params, lr=1e-3)  # foreach, the default
        original = objective.after_update

        def walk_every_time(num_updates: int) -> None:
            objective._pairs = None
            original(num_updates)

        objective.after_update = walk_every_time  # type: ignore[method-assign]
    return learner


def batch(spaces: EnvSpaces, n: int = 32) -> Batch:
    rng = np.random.default_rng(0)
    if spaces.obs_dtype == np.uint8:
        obs = rng.integers(0, 256, (n, *spaces.obs_shape), dtype=np.uint8)
    else:
        obs = rng.standard_normal((n, *spaces.obs_shape)).astype(np.float32)
    return Batch(obs, rng.integers(0, spaces.num_actions, n), rng.standard_normal(n).astype(np.float32),
                 np.full(n, 0.97, np.float32), obs[::-1].copy())  # fmt: skip


def per_update_us(learner: Learner, b: Batch, seconds: float = 1.5) -> float:
    learner.update(b)
    count, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        learner.update(b)
        count += 1
    return (time.perf_counter() - start) / count * 1e6


def main(output: str) -> None:
    torch.set_num_threads(1)
    results = {}
    for name, (spaces, model) in NETWORKS.items():
        b = batch(spaces)
        learners = {"before": make(spaces, model, True), "after": make(spaces, model, False)}
        samples: dict[str, list[float]] = {"before": [], "after": []}
        for round_ in range(7):
            for variant in ("before", "after") if round_ % 2 == 0 else ("after", "before"):
                samples[variant].append(per_update_us(learners[variant], b))
        medians = {k: statistics.median(v) for k, v in samples.items()}
        results[name] = {"us_per_update": medians, "speedup": medians["before"] / medians["after"], "rounds": samples}
        print(f"{name}: before {medians['before']:.0f} us, after {medians['after']:.0f} us, "
              f"{medians['before'] / medians['after']:.2f}x", flush=True)  # fmt: skip
    spaces, model = NETWORKS["snake_mlp_128x128_b32"]
    b = batch(spaces)
    work = {"raylab_default": make(spaces, model, False), "seed004_update": make(spaces, model, False, True)}
    work_samples: dict[str, list[float]] = {k: [] for k in work}
    for round_ in range(7):
        for name in list(work) if round_ % 2 == 0 else list(reversed(work)):
            work_samples[name].append(per_update_us(work[name], b))
    work_medians = {k: statistics.median(v) for k, v in work_samples.items()}
    results["update_work_snake_mlp_b32"] = {
        "us_per_update": work_medians,
        "rounds": work_samples,
        "extra_us": work_medians["raylab_default"] - work_medians["seed004_update"],
    }
    print(f"update work: raylab default {work_medians['raylab_default']:.0f} us, seed 004's "
          f"{work_medians['seed004_update']:.0f} us", flush=True)  # fmt: skip
    report = {"benchmark": "learner_overheads", "machine": machine_info(), "results": results,
              "protocol": "7 alternating rounds of 1.5 s per variant; medians; torch 1 thread"}  # fmt: skip
    with open(output, "w") as f:
        json.dump(report, f, indent=2)
        f.write("\n")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "benchmarks/learner_overheads.json")

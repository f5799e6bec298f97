"""learner.fused for PPO and APPO before/after, in one run: milliseconds per learner call through autograd
(``learner.fused=false``, torch's fused Adam) and through the fused NumPy step (raylab/learner/fused/ppo.py), on
the actor-critic experiments raylab ships with a plain MLP.

    python benchmarks/ppo_fused_update.py benchmarks/ppo_fused_update.json

Each case composes the experiment's own config (its model, algorithm and topology shape), builds both learners
from the same initial weights, and feeds them chunks a real rollout worker of that experiment sampled: one call
is what the topology hands the learner (APPO: ``chunks_per_update`` chunks; PPO: a round, one chunk per worker),
so its time holds the round's value pass, GAE or V-trace and ``epochs x minibatches`` optimizer steps. The
variants alternate for 7 rounds of 2 s each; the figures are medians, both on one thread (torch's, and NumPy's
BLAS for the fused step), as learner.num_threads=1 runs them. Parity of the two paths is
tests/unit/test_ppo_fused.py's job; this measures speed only.
"""

from __future__ import annotations

import dataclasses
import statistics
import sys
import tempfile
import time
from typing import Any

import torch

from raylab.bench.machine import save_report
from raylab.builders import build_learner, build_rollout_worker, limit_blas_threads
from raylab.config import APPOConfig, resolve
from raylab.envs.registry import env_spaces
from raylab.learner import Learner
from raylab.train import compose
from raylab.types import Chunk

CASES = {
    "cartpole_appo": ["+experiment=cartpole_appo"],
    "cartpole_appo_2x8": ["+experiment=cartpole_appo", "topology.envs_per_worker=8", "topology.rollout_length=64"],
    "cartpole_ppo": ["+experiment=cartpole_ppo"],
    "pendulum_ppo": ["+experiment=pendulum_ppo"],
}
ROUNDS, SECONDS, CALLS = 7, 2.0, 4


def calls_of(cfg: Any, spaces: Any, learner: Learner) -> list[list[Chunk]]:
    """``CALLS`` distinct learner inputs from a real rollout worker of the experiment."""
    worker = build_rollout_worker(cfg, spaces, 0)
    worker.set_weights(learner.get_weights())
    per_call = cfg.algo.chunks_per_update if isinstance(cfg.algo, APPOConfig) else cfg.topology.num_workers
    chunks = [worker.sample()[0] for _ in range(CALLS * per_call)]
    worker.env.close()
    return [chunks[k * per_call : (k + 1) * per_call] for k in range(CALLS)]


def per_call_ms(learner: Learner, calls: list[list[Chunk]]) -> tuple[float, int]:
    """Milliseconds per call, and optimizer steps per call. Each call's chunks are stamped with the learner's
    version (APPO would drop chunks older than max_policy_lag)."""

    def one(k: int) -> int:
        data = [dataclasses.replace(c, policy_version=learner.version) for c in calls[k % len(calls)]]
        return learner.update_many(data).updates

    updates = one(0)
    n, start = 0, time.perf_counter()
    while time.perf_counter() - start < SECONDS:
        one(n)
        n += 1
    return (time.perf_counter() - start) / n * 1e3, updates


def main(output: str) -> None:
    torch.set_num_threads(1)
    limit_blas_threads(1)  # both paths on one thread: torch's, and NumPy's BLAS for the fused step
    results = {}
    for name, overrides in CASES.items():
        cfg = resolve(compose([*overrides, "logger.console=false"]), run_dir=tempfile.mkdtemp(prefix="raylab-bench-"))
        spaces = env_spaces(cfg.env)
        learners = {}
        for variant, fused in (("autograd", False), ("fused", True)):
            torch.manual_seed(0)
            learners[variant] = build_learner(
                dataclasses.replace(cfg, learner=dataclasses.replace(cfg.learner, fused=fused)), spaces
            )
            assert learners[variant].fused == fused, learners[variant].fused_reason
        calls = calls_of(cfg, spaces, learners["autograd"])
        samples: dict[str, list[float]] = {k: [] for k in learners}
        updates = 0
        for round_ in range(ROUNDS):
            for variant in ("autograd", "fused") if round_ % 2 == 0 else ("fused", "autograd"):
                ms, updates = per_call_ms(learners[variant], calls)
                samples[variant].append(ms)
        medians = {k: statistics.median(v) for k, v in samples.items()}
        size = sum(c.size for c in calls[0])
        results[name] = {
            "overrides": overrides, "hidden_sizes": list(cfg.model.hidden_sizes), "samples_per_call": size,
            "updates_per_call": updates, "epochs": cfg.algo.epochs, "minibatches": cfg.algo.minibatches,
            "ms_per_call": medians, "speedup": medians["autograd"] / medians["fused"], "rounds": samples,
        }  # fmt: skip
        ratio = medians["autograd"] / medians["fused"]
        print(f"{name}: {size} samples, {updates} updates per call: autograd {medians['autograd']:.2f} ms, "
              f"fused {medians['fused']:.2f} ms, {ratio:.2f}x", flush=True)  # fmt: skip
    save_report(
        output,
        "ppo_fused_update",
        (
            f"Learner.update_many on a call as the topology makes it (chunks of a real rollout worker); {ROUNDS} "
            f"alternating rounds of {SECONDS} s per variant; medians of milliseconds per call (value pass, GAE or "
            "V-trace, epochs x minibatches optimizer steps); one thread (torch's and NumPy's BLAS)"
        ),
        "python benchmarks/ppo_fused_update.py benchmarks/ppo_fused_update.json",
        results,
    )


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "benchmarks/ppo_fused_update.json")

"""learner.fused before/after, in one run: microseconds per DQN update through autograd (``learner.fused=false``,
torch's fused Adam) and through the fused NumPy step (raylab/learner/fused/dqn.py), on the MLP Q networks raylab's
DQN experiments train.

    python benchmarks/dqn_fused_update.py benchmarks/dqn_fused_update.json

Each case builds both learners from the same initial weights (raylab's default DQN: double DQN, Polyak target
update every update, gradient clipping at 10) and times ``Learner.update_many`` on calls of 16 replay batches,
as the apex_dqn flow makes them (learner.updates_per_call). The variants alternate for 7 rounds of 1.5 s each;
the figures are medians of microseconds per update, both on one thread (torch's, and NumPy's BLAS for the fused
step), as learner.num_threads=1 runs them. Parity of the two paths is tests/unit/test_dqn_fused.py's job; this
measures speed only.
"""

from __future__ import annotations

import statistics
import sys
import time

import numpy as np
import torch

from raylab.bench.machine import save_report
from raylab.builders import limit_blas_threads
from raylab.builders.algorithms import build_dqn
from raylab.config import DQNConfig, ModelConfig
from raylab.learner import Learner
from raylab.models import build_q_network
from raylab.types import Batch, EnvSpaces

CASES = {
    "snake_mlp_128x128_b32": ((11,), 3, (128, 128), 32),  # seed 004's loop: batch 32
    "snake_mlp_128x128_b128": ((11,), 3, (128, 128), 128),  # snake_dqn
    "cartpole_mlp_128x128_b128": ((4,), 2, (128, 128), 128),  # cartpole_dqn
    "snake_arena_mlp_256x256_b128": ((11,), 3, (256, 256), 128),  # snake_arena_dqn's network
}
UPDATES_PER_CALL, ROUNDS, SECONDS = 16, 7, 1.5


def make(spaces: EnvSpaces, hidden: tuple[int, ...], fused: bool) -> Learner:
    torch.manual_seed(0)
    objective = build_dqn(build_q_network(ModelConfig(hidden_sizes=hidden), spaces), DQNConfig())
    learner = Learner(objective, lr=5e-4, device="cpu", prefetch=False, fused=fused)
    assert learner.fused == fused, learner.fused_reason
    return learner


def batches(spaces: EnvSpaces, n: int) -> list[Batch]:
    rng = np.random.default_rng(0)
    out = []
    for _ in range(UPDATES_PER_CALL):
        obs = rng.standard_normal((n, *spaces.obs_shape)).astype(np.float32)
        nxt = rng.standard_normal((n, *spaces.obs_shape)).astype(np.float32)
        assert spaces.num_actions is not None
        out.append(Batch(obs, rng.integers(0, spaces.num_actions, n), rng.standard_normal(n).astype(np.float32),
                         np.full(n, 0.97, np.float32), nxt))  # fmt: skip
    return out


def per_update_us(learner: Learner, data: list[Batch]) -> float:
    learner.update_many(data)
    calls, start = 0, time.perf_counter()
    while time.perf_counter() - start < SECONDS:
        learner.update_many(data)
        calls += 1
    return (time.perf_counter() - start) / (calls * len(data)) * 1e6


def main(output: str) -> None:
    torch.set_num_threads(1)
    limit_blas_threads(1)  # both paths on one thread: torch's, and NumPy's BLAS for the fused step
    results = {}
    for name, (obs_shape, actions, hidden, n) in CASES.items():
        spaces = EnvSpaces(obs_shape, np.dtype(np.float32), actions, f"Discrete({actions})")
        data = batches(spaces, n)
        learners = {"autograd": make(spaces, hidden, False), "fused": make(spaces, hidden, True)}
        samples: dict[str, list[float]] = {k: [] for k in learners}
        for round_ in range(ROUNDS):
            for variant in ("autograd", "fused") if round_ % 2 == 0 else ("fused", "autograd"):
                samples[variant].append(per_update_us(learners[variant], data))
        medians = {k: statistics.median(v) for k, v in samples.items()}
        results[name] = {
            "obs_shape": list(obs_shape), "hidden_sizes": list(hidden), "batch_size": n,
            "us_per_update": medians, "speedup": medians["autograd"] / medians["fused"], "rounds": samples,
        }  # fmt: skip
        print(f"{name}: autograd {medians['autograd']:.0f} us, fused {medians['fused']:.0f} us, "
              f"{medians['autograd'] / medians['fused']:.2f}x", flush=True)  # fmt: skip
    save_report(
        output,
        "dqn_fused_update",
        (
            f"Learner.update_many on calls of {UPDATES_PER_CALL} batches; {ROUNDS} alternating rounds of {SECONDS} s "
            "per variant; medians of microseconds per update; one thread (torch's and NumPy's BLAS); raylab's "
            "default DQN (double, Polyak, clipping at 10)"
        ),
        "python benchmarks/dqn_fused_update.py benchmarks/dqn_fused_update.json",
        results,
    )


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "benchmarks/dqn_fused_update.json")

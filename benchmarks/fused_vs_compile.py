"""Should the Learner's fused NumPy update (raylab/learner/fused) give way to differentiating the one torch loss
with ``torch.compile``? One run, three variants of the same learner on the CPU, alternating:

- ``autograd``: eager torch, torch's fused Adam (``learner.fused=false``);
- ``compiled``: the same, with ``learner.compile=true`` (Inductor compiles the loss, its backward through
  AOTAutograd, and the clip-and-step; ``compile_mode=default``);
- ``fused``: the hand-written NumPy step (``learner.fused=true``).

    python benchmarks/fused_vs_compile.py benchmarks/fused_vs_compile.json

PPO and APPO: calls as ``benchmarks/ppo_fused_update.py`` makes them (chunks of a real rollout worker of the
shipped experiment); DQN: calls of 16 replay batches on cartpole_dqn's Q network, as
``benchmarks/dqn_fused_update.py``. Each variant is warmed up (Inductor compiles on its first calls) before
the alternating rounds; the compile time is reported. One thread (torch's and NumPy's BLAS), as
learner.num_threads=1 runs them. Medians of milliseconds per call.
"""

from __future__ import annotations

import dataclasses
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

from dqn_fused_update import batches as dqn_batches
from ppo_fused_update import calls_of

from raylab.bench.machine import save_report
from raylab.builders import build_learner, limit_blas_threads
from raylab.builders.algorithms import build_dqn
from raylab.config import DQNConfig, ModelConfig, resolve
from raylab.envs.registry import env_spaces
from raylab.learner import Learner
from raylab.models import build_q_network
from raylab.train import compose
from raylab.types import EnvSpaces

VARIANTS = {"autograd": (False, False), "compiled": (False, True), "fused": (True, False)}
"""name: (learner.fused, learner.compile)."""
ROUNDS, SECONDS, WARMUP_CALLS = 5, 2.0, 5


def ppo_case(overrides: list[str]) -> tuple[dict[str, Learner], list[Any]]:
    cfg = resolve(compose([*overrides, "logger.console=false"]), run_dir=tempfile.mkdtemp(prefix="raylab-bench-"))
    spaces = env_spaces(cfg.env)
    learners = {}
    for name, (fused, compiled) in VARIANTS.items():
        torch.manual_seed(0)
        opt = dataclasses.replace(cfg.learner, fused=fused, compile=compiled)
        learners[name] = build_learner(dataclasses.replace(cfg, learner=opt), spaces)
    return learners, calls_of(cfg, spaces, learners["autograd"])


def dqn_case() -> tuple[dict[str, Learner], list[Any]]:
    spaces = EnvSpaces(obs_shape=(4,), obs_dtype=np.dtype(np.float32), num_actions=2, action_space="Discrete(2)")
    learners = {}
    for name, (fused, compiled) in VARIANTS.items():
        torch.manual_seed(0)
        objective = build_dqn(build_q_network(ModelConfig(hidden_sizes=(128, 128)), spaces), DQNConfig())
        learners[name] = Learner(objective, lr=5e-4, device="cpu", prefetch=False, fused=fused, compile=compiled)
    return learners, [dqn_batches(spaces, 128)]


def call(learner: Learner, data: list[Any], k: int) -> None:
    """One learner call on input ``k``; chunks get the learner's version (APPO drops over-lagged ones)."""
    item = data[k % len(data)]
    if item and hasattr(item[0], "policy_version"):
        item = [dataclasses.replace(c, policy_version=learner.version) for c in item]
    learner.update_many(item)


def per_call_ms(learner: Learner, data: list[Any]) -> float:
    n, start = 0, time.perf_counter()
    while time.perf_counter() - start < SECONDS:
        call(learner, data, n)
        n += 1
    return (time.perf_counter() - start) / n * 1e3


def measure(learners: dict[str, Learner], data: list[Any]) -> dict[str, Any]:
    warmup = {}
    for name, learner in learners.items():
        start = time.perf_counter()
        for k in range(WARMUP_CALLS):
            call(learner, data, k)
        warmup[name] = time.perf_counter() - start
    samples: dict[str, list[float]] = {name: [] for name in learners}
    order = list(learners)
    for round_ in range(ROUNDS):
        for name in order if round_ % 2 == 0 else reversed(order):
            samples[name].append(per_call_ms(learners[name], data))
    medians = {name: statistics.median(v) for name, v in samples.items()}
    return {
        "ms_per_call": medians,
        "fused_over_compiled": medians["compiled"] / medians["fused"],
        "compiled_over_autograd": medians["autograd"] / medians["compiled"],
        "warmup_s": warmup,
        "rounds": samples,
    }


def main(output: str) -> None:
    torch.set_num_threads(1)
    limit_blas_threads(1)
    cases = {
        "cartpole_ppo": lambda: ppo_case(["+experiment=cartpole_ppo"]),
        "cartpole_appo": lambda: ppo_case(["+experiment=cartpole_appo"]),
        "cartpole_dqn_b128": dqn_case,
    }
    results = {}
    for name, make in cases.items():
        learners, data = make()
        results[name] = measure(learners, data)
        ms = results[name]["ms_per_call"]
        print(
            f"{name}: autograd {ms['autograd']:.2f} ms, compiled {ms['compiled']:.2f} ms, fused {ms['fused']:.2f} "
            f"ms per call; fused {results[name]['fused_over_compiled']:.2f}x compiled",
            flush=True,
        )
    save_report(
        output,
        "fused_vs_compile",
        f"Learner.update_many per call on the CPU, one thread; {ROUNDS} alternating rounds of {SECONDS} s per "
        f"variant after {WARMUP_CALLS} warm-up calls; medians of milliseconds per call",
        "python benchmarks/fused_vs_compile.py benchmarks/fused_vs_compile.json",
        results,
    )


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "benchmarks/fused_vs_compile.json")

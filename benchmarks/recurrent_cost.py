"""What memory costs: a rollout worker and a PPO learner with an LSTM or GRU core against the feed-forward network.

    python benchmarks/recurrent_cost.py --output benchmarks/recurrent_cost.json     # make bench-recurrent

Both halves run in this process, one thread, without Ray (the throughput a rollout actor and a CPU learner have):

- **Rollout**: ``RolloutWorker.sample`` on StatelessCartPole-v1 (gymnasium, stepped in turn) at 8 and 32 envs
  per worker, 64 steps per chunk, agent steps per second. Variants: the MLP of ``stateless_cartpole_ppo`` and the
  recurrent network of ``stateless_cartpole_ppo_lstm`` (a 64-unit layer, then an LSTM or a GRU of 64 or 256
  units), each acting through its NumPy copy (model.numpy_inference, the default for an MLP encoder) and through
  torch.
- **Learner**: ``Learner.update_many`` of PPO on one round of chunks acted by that policy (2 workers x 8 envs x 64
  steps = 1,024 steps; 2 epochs x 8 minibatches, as ``cartpole_ppo``), steps trained per second. Recurrent
  variants train whole sequences: ``algo.bptt`` 16 (64 sequences, 8 a minibatch) and 64 (the whole chunk), their
  unroll packed into one call (the default) or stepped in a Python loop (``/loop``: before the packed unroll).

Variants alternate round by round (``--rounds``); medians, and each variant's ratio to the MLP's acting the same
way (NumPy or torch), so the core's cost is not mixed with the NumPy copy's gain.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ENV_ID = "raylab.envs.memory_tasks:StatelessCartPole-v1"
ROLLOUT_VARIANTS: dict[str, dict[str, Any]] = {
    "mlp_numpy": {"recurrent": "none", "numpy": True},
    "mlp_torch": {"recurrent": "none", "numpy": False},
    "lstm_64_numpy": {"recurrent": "lstm", "size": 64, "numpy": True},
    "lstm_64_torch": {"recurrent": "lstm", "size": 64, "numpy": False},
    "gru_64_numpy": {"recurrent": "gru", "size": 64, "numpy": True},
    "gru_64_torch": {"recurrent": "gru", "size": 64, "numpy": False},
    "lstm_256_numpy": {"recurrent": "lstm", "size": 256, "numpy": True},
    "lstm_256_torch": {"recurrent": "lstm", "size": 256, "numpy": False},
}
LEARNER_VARIANTS: dict[str, dict[str, Any]] = {
    "mlp": {"recurrent": "none"},
    "lstm_64/bptt_16": {"recurrent": "lstm", "size": 64, "bptt": 16},
    "lstm_64/bptt_16/loop": {"recurrent": "lstm", "size": 64, "bptt": 16, "packed": False},
    "lstm_64/bptt_64": {"recurrent": "lstm", "size": 64, "bptt": 64},
    "lstm_64/bptt_64/loop": {"recurrent": "lstm", "size": 64, "bptt": 64, "packed": False},
    "gru_64/bptt_16": {"recurrent": "gru", "size": 64, "bptt": 16},
    "lstm_256/bptt_16": {"recurrent": "lstm", "size": 256, "bptt": 16},
    "lstm_256/bptt_16/loop": {"recurrent": "lstm", "size": 256, "bptt": 16, "packed": False},
    "mlp/bf16": {"recurrent": "none", "precision": "bf16"},
    "lstm_64/bptt_16/bf16": {"recurrent": "lstm", "size": 64, "bptt": 16, "precision": "bf16"},
    "lstm_256/bptt_16/bf16": {"recurrent": "lstm", "size": 256, "bptt": 16, "precision": "bf16"},
}
"""``loop``: the unroll steps through the sequences in a Python loop (RecurrentCore.packed=False), as before the
packed unroll; the others pack the pieces between episode starts into one call. ``bf16``: learner.precision=bf16
(autocast: the matrix products in bfloat16, which this CPU's AVX-512 BF16 runs natively)."""
STEPS = 64


def _model(spec: dict[str, Any]) -> Any:
    from raylab.config import ModelConfig

    numpy = spec.get("numpy", False)
    if spec["recurrent"] == "none":
        return ModelConfig(hidden_sizes=(64, 64), numpy_inference=numpy)
    return ModelConfig(
        hidden_sizes=(64,), recurrent=spec["recurrent"], recurrent_size=spec["size"], numpy_inference=numpy
    )


def _worker(spec: dict[str, Any], envs: int, seed: int) -> Any:
    from raylab.algos.actor_critic import ActorCriticPolicy
    from raylab.envs.config import EnvConfig
    from raylab.envs.registry import env_spaces, make_vector_env
    from raylab.models.factory import build_actor_critic
    from raylab.rollout.worker import RolloutWorker

    env_cfg = EnvConfig(family="gymnasium", id=ENV_ID)
    cfg = _model(spec)
    net = build_actor_critic(cfg, env_spaces(env_cfg))
    policy = ActorCriticPolicy(net, seed=seed, numpy_inference=cfg.numpy_inference)
    return RolloutWorker(make_vector_env(env_cfg, envs, seed), policy, worker_id=0, rollout_length=STEPS), net


def rollout_rate(spec: dict[str, Any], envs: int, seconds: float) -> float:
    """Agent steps per second of ``sample`` over ``seconds`` (after one warm-up chunk)."""
    worker, _ = _worker(spec, envs, seed=0)
    worker.sample()
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        chunk, _ = worker.sample()
        steps += chunk.size
    return steps / (time.perf_counter() - start)


def learner_rate(spec: dict[str, Any], calls: int) -> tuple[float, int]:
    """Steps trained per second by ``Learner.update_many`` on a round of 2 x 8 envs x 64 steps, and the
    network's weight count."""
    import torch

    from raylab.builders.algorithms import build_ppo
    from raylab.config import PPOConfig
    from raylab.envs.config import EnvConfig
    from raylab.envs.registry import env_spaces
    from raylab.learner import Learner
    from raylab.models.factory import build_actor_critic

    chunks = [_worker({**spec, "numpy": False}, 8, seed=w)[0].sample()[0] for w in range(2)]
    torch.manual_seed(0)
    net = build_actor_critic(_model(spec), env_spaces(EnvConfig(family="gymnasium", id=ENV_ID)))
    objective = build_ppo(net, PPOConfig(epochs=2, minibatches=8, bptt=spec.get("bptt")))
    learner = Learner(
        objective, lr=3e-4, adam_eps=1e-5, max_grad_norm=0.5, device="cpu", precision=spec.get("precision", "fp32")
    )
    from raylab.models.recurrent import RecurrentCore

    RecurrentCore.packed = spec.get("packed", True)
    try:
        learner.update_many(chunks)  # warm-up
        start = time.perf_counter()
        for _ in range(calls):
            learner.update_many(chunks)
        seconds = time.perf_counter() - start
    finally:
        RecurrentCore.packed = True
    weights = sum(p.numel() for p in net.parameters())
    return calls * sum(c.size for c in chunks) * 2 / seconds, weights  # 2 epochs: each step trained twice


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=4.0, help="per rollout measurement")
    parser.add_argument("--calls", type=int, default=5, help="learner calls per measurement")
    parser.add_argument("--envs", type=int, nargs="+", default=[8, 32])
    parser.add_argument("--output", default="benchmarks/recurrent_cost.json")
    args = parser.parse_args()

    import torch

    from raylab.bench.machine import machine_info

    torch.set_num_threads(1)
    rollout: dict[str, dict[str, list[float]]] = {str(e): {v: [] for v in ROLLOUT_VARIANTS} for e in args.envs}
    learner: dict[str, list[float]] = {v: [] for v in LEARNER_VARIANTS}
    weights: dict[str, int] = {}
    loads = [os.getloadavg()[0]]
    for k in range(args.rounds):
        order = list(ROLLOUT_VARIANTS) if k % 2 == 0 else list(reversed(ROLLOUT_VARIANTS))
        for envs in args.envs:
            for name in order:
                rate = rollout_rate(ROLLOUT_VARIANTS[name], envs, args.seconds)
                rollout[str(envs)][name].append(rate)
                print(f"round {k} rollout {envs:3d} envs {name:10s} {rate:9,.0f} steps/s", flush=True)
        for name in list(LEARNER_VARIANTS) if k % 2 == 0 else list(reversed(LEARNER_VARIANTS)):
            rate, weights[name] = learner_rate(LEARNER_VARIANTS[name], args.calls)
            learner[name].append(rate)
            print(f"round {k} learner {name:18s} {rate:9,.0f} steps trained/s", flush=True)
        loads.append(os.getloadavg()[0])
    med_rollout = {e: {v: statistics.median(r) for v, r in by.items()} for e, by in rollout.items()}
    med_learner = {v: statistics.median(r) for v, r in learner.items()}
    report = {
        "benchmark": "recurrent_cost",
        "env": ENV_ID,
        "protocol": (
            f"{args.rounds} rounds alternating variants; rollout: {args.seconds:g} s of RolloutWorker.sample per "
            f"measurement, {STEPS} steps per chunk, one thread; learner: {args.calls} PPO calls on 2 x 8 x {STEPS} "
            "steps, 2 epochs x 8 minibatches, one thread; medians"
        ),
        "machine": machine_info(),
        "load_1min": loads,
        "torch": torch.__version__,
        "rollout_steps_per_s": med_rollout,
        "rollout_vs_mlp_torch": {e: {v: r / by["mlp_torch"] for v, r in by.items()} for e, by in med_rollout.items()},
        "rollout_vs_mlp_numpy": {e: {v: r / by["mlp_numpy"] for v, r in by.items()} for e, by in med_rollout.items()},
        "learner_steps_per_s": med_learner,
        "learner_vs_mlp": {v: r / med_learner["mlp"] for v, r in med_learner.items()},
        "learner_weights": weights,
        # a weight is used once per step forward (a multiply and an add) and about twice backward: ~6 flops per
        # weight per step trained, so what the CPU sustains shows whether a variant is bound by arithmetic or by
        # per-call overhead
        "learner_gflops": {v: 6 * weights[v] * r / 1e9 for v, r in med_learner.items()},
        "runs": {"rollout": rollout, "learner": learner},
    }
    Path(args.output).write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps({"rollout": report["rollout_vs_mlp_torch"], "learner": report["learner_vs_mlp"]}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

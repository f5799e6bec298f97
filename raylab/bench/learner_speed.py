"""``learner``: DQN learner updates/s for eager fp32, AMP, torch.compile and AMP + compile.

    python -m raylab.bench learner --output benchmarks/learner_cpu.json [--device cuda] [--batch-sizes 32 512]

The network is ``mario_dqn``'s (dueling Nature CNN on 4 x 84 x 84 uint8 frames, 7 actions, double DQN with
the Huber loss, gradient clipping, fused Adam). Each variant gets its own Learner with the same initial
weights; batches are random uint8 frames already in memory, so the figure is the learner alone (host to
device copies included, replay excluded). Compilation happens in a warm-up outside the timing and is
reported separately. Variants alternate round by round and each figure is the median over rounds.

Before timing, each variant's first update on a shared batch is compared with eager fp32's: the loss's
relative difference is recorded (the parity test in tests/unit/test_learner_speed.py bounds it).
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np

from raylab.bench import plots
from raylab.bench.machine import machine_info
from raylab.driver.outputs import atomic_write

VARIANTS: dict[str, dict[str, Any]] = {
    "eager_fp32": {},
    "amp": {"precision": "auto"},  # bf16 on CPU, fp16 (GradScaler) on CUDA
    "compile": {"compile": True},
    "amp_compile": {"precision": "auto", "compile": True},
}


def add_parser(commands: Any) -> None:
    p = commands.add_parser("learner", help="DQN learner updates/s: eager fp32, AMP, compile, AMP + compile")
    p.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    p.add_argument("--batch-sizes", type=int, nargs="+", default=[32, 512])
    p.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--seconds", type=float, default=4.0, help="timed seconds per variant per round")
    p.add_argument("--threads", type=int, default=1, help="torch threads (learner.num_threads)")
    p.add_argument("--compile-mode", default="default")
    p.add_argument("--output", required=True, help="JSON to write; the PNG goes next to it")
    p.set_defaults(func=run)


def _learner(variant: str, device: str, compile_mode: str) -> Any:
    import torch

    from raylab.algos.dqn import DQN
    from raylab.config import DQNConfig, ModelConfig
    from raylab.learner import Learner
    from raylab.learner.learner import resolve_device
    from raylab.models import build_q_network
    from raylab.types import EnvSpaces

    opts = dict(VARIANTS[variant])
    resolved = resolve_device(device)
    if opts.get("precision") == "auto":
        opts["precision"] = "fp16" if resolved.type == "cuda" else "bf16"
    spaces = EnvSpaces((4, 84, 84), np.dtype(np.uint8), 7, "Discrete(7)")
    torch.manual_seed(0)
    model = ModelConfig(encoder="nature_cnn", hidden_sizes=(512,), dueling=True)
    objective = DQN(build_q_network(model, spaces), DQNConfig(target_update_every=2000, target_tau=1.0))
    return Learner(
        objective, lr=1e-4, adam_eps=1.5e-4, device=str(resolved), compile_mode=compile_mode, prefetch=True, **opts
    )


def _batches(batch_size: int, count: int = 4) -> list[Any]:
    from raylab.types import Batch

    rng = np.random.default_rng(batch_size)
    return [
        Batch(
            obs=rng.integers(0, 256, (batch_size, 4, 84, 84), dtype=np.uint8),
            actions=rng.integers(0, 7, batch_size),
            rewards=rng.standard_normal(batch_size).astype(np.float32),
            discounts=np.full(batch_size, 0.99**3, np.float32),
            next_obs=rng.integers(0, 256, (batch_size, 4, 84, 84), dtype=np.uint8),
        )
        for _ in range(count)
    ]


def _updates_per_s(learner: Any, batches: list[Any], seconds: float) -> float:
    """Calls of len(batches) updates until ``seconds`` pass; metrics are synced once per call (as in a run)."""
    updates, start = 0, time.perf_counter()
    while True:
        stats = learner.update_many(batches)
        updates += stats.updates
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            return updates / elapsed


def run(args: argparse.Namespace, overrides: list[str]) -> int:
    import torch

    if overrides:
        raise SystemExit(f"raylab bench learner: error: unexpected arguments {overrides}")
    torch.set_num_threads(args.threads)
    results: dict[str, Any] = {}
    for batch_size in args.batch_sizes:
        batches = _batches(batch_size)
        learners, warmup, parity = {}, {}, {}
        reference = None
        for variant in args.variants:
            start = time.perf_counter()
            learner = _learner(variant, args.device, args.compile_mode)
            loss = learner.update(batches[0])["loss"]  # first update: the compile happens here
            learner.update_many(batches)
            warmup[variant] = time.perf_counter() - start
            if variant == "eager_fp32":
                reference = loss
            parity[variant] = loss
            learners[variant] = learner
            print(f"batch {batch_size}: {variant} ready in {warmup[variant]:.1f} s", flush=True)
        samples: dict[str, list[float]] = {v: [] for v in args.variants}
        for round_ in range(args.rounds):
            order = args.variants if round_ % 2 == 0 else list(reversed(args.variants))
            for variant in order:
                samples[variant].append(_updates_per_s(learners[variant], batches, args.seconds))
            print(f"batch {batch_size}: round {round_ + 1}/{args.rounds} done", flush=True)
        medians = {v: statistics.median(s) for v, s in samples.items()}
        base = medians.get("eager_fp32")
        results[str(batch_size)] = {
            "updates_per_s": medians,
            "samples_per_s": {v: m * batch_size for v, m in medians.items()},
            "ratio_vs_eager_fp32": {v: m / base for v, m in medians.items()} if base else None,
            "rounds": samples,
            "warmup_seconds": warmup,
            "first_update_loss": parity,
            "loss_rel_diff_vs_eager_fp32": (
                {v: abs(x - reference) / max(abs(reference), 1e-12) for v, x in parity.items()}
                if reference is not None
                else None
            ),
            "precision": {v: learners[v].precision for v in args.variants},
        }
        for v, m in medians.items():
            ratio = f" ({m / base:.2f}x eager fp32)" if base else ""
            print(f"batch {batch_size:4d} {v:12s} {m:8.1f} updates/s{ratio}", flush=True)
    device = next(iter(learners.values())).device
    report = {
        "benchmark": "learner",
        "network": "mario_dqn: dueling Nature CNN, 4x84x84 uint8, 7 actions; double DQN, Huber, clip 10, fused Adam",
        "device": str(device),
        "gpu": torch.cuda.get_device_name(0) if device.type == "cuda" else None,
        "torch_threads": args.threads,
        "compile_mode": args.compile_mode,
        "protocol": f"{args.rounds} alternating rounds of {args.seconds:g} s per variant; medians; 4 batches per call",
        "machine": machine_info(),
        "batch_sizes": results,
    }
    output = Path(args.output)
    atomic_write(output, _dump(report))
    _plot(results, args.variants, str(device), output.with_suffix(".png"))
    print(f"wrote {output} and {output.with_suffix('.png')}")
    return 0


def _dump(report: dict[str, Any]) -> str:
    import json

    return json.dumps(report, indent=2) + "\n"


def _plot(results: dict[str, Any], variants: list[str], device: str, path: Path) -> None:
    fig, axes = plots.figure(4.0 * len(results), 3.6, 1, len(results))
    row = [axes] if len(results) == 1 else list(axes[0])
    for ax, (batch_size, r) in zip(row, results.items(), strict=True):
        values = [r["updates_per_s"][v] for v in variants]
        bars = ax.bar(variants, values, color=["tab:gray", "tab:blue", "tab:orange", "tab:green"][: len(variants)])
        for bar, v in zip(bars, variants, strict=True):
            ratio = r["ratio_vs_eager_fp32"][v] if r["ratio_vs_eager_fp32"] else None
            if ratio is not None:
                ax.annotate(f"{ratio:.2f}x", (bar.get_x() + bar.get_width() / 2, bar.get_height()), ha="center",
                            va="bottom", fontsize=8)  # fmt: skip
        ax.set_title(f"batch {batch_size} on {device}")
        ax.set_ylabel("updates / s")
        ax.tick_params(axis="x", labelsize=8, rotation=15)
    plots.save(fig, path)

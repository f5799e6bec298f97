"""``learner``: learner updates/s for eager fp32, AMP, torch.compile and AMP + compile, DQN or PPO; on CUDA
also TF32, bf16, fp16 + GradScaler and compile_mode=reduce-overhead (CUDA graphs), each by name (``--variants``).

    python -m raylab.bench learner --output benchmarks/learner_cpu.json [--device cuda] [--batch-sizes 32 512]
    python -m raylab.bench learner --algo ppo --output benchmarks/learner_ppo_cpu.json [--batch-sizes 32 64]

DQN (``--algo dqn``): ``mario_dqn``'s network (dueling Nature CNN on 4 x 84 x 84 uint8 frames, 7 actions,
double DQN with the Huber loss, gradient clipping, fused Adam); a call is 4 replay batches. The ``frames64``
variant is the same on 4 x 64 x 64 frames (``env.resize=[64,64]``), on inputs of its own; ``frames64_narrow``
adds convolutions of 16, 32 and 32 channels (``model.conv_channels=[16,32,32]``).
PPO (``--algo ppo``): CoinRun's IMPALA CNN (3 x 64 x 64 uint8 frames, 15 actions, model=impala_cnn: 16/32/32
channels, hidden 256) with coinrun_ppo's objective (clip 0.2, value clip 0.2, entropy 0.01, grad norm 0.5,
Adam 5e-4); a call is one round of ``--minibatches`` x batch steps: the value pass over the round, GAE, then
``--epochs`` x ``--minibatches`` optimizer steps of one batch each (the batch size is the minibatch's).

Each variant gets its own Learner (the one Learner of every algorithm) with the same initial weights;
inputs are random uint8 frames already in memory, so the figure is the learner alone (host to device copies
included, replay and rollouts excluded). Updates/s counts optimizer steps, a PPO round's value pass
included in the time. Compilation happens in a warm-up outside the timing and is reported separately.
Variants alternate round by round and each figure is the median over rounds.

Before timing, each variant's first call on a shared input is compared with eager fp32's: the loss's
relative difference is recorded (the parity tests in tests/unit/test_learner_speed.py and
test_learner_objectives.py bound it).
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
from raylab.errors import RaylabError

VARIANTS: dict[str, dict[str, Any]] = {
    "eager_fp32": {"tf32": False},  # strict fp32 (on CUDA: TF32 matmuls and convolutions off)
    "amp": {"precision": "auto"},  # bf16 on CPU, fp16 (GradScaler) on CUDA
    "compile": {"compile": True},
    "amp_compile": {"precision": "auto", "compile": True},
    # the rest name each choice; on CUDA the learner's default tf32=true applies to every one but eager_fp32
    "tf32": {},
    "bf16": {"precision": "bf16"},
    "fp16": {"precision": "fp16"},
    "compile_ro": {"compile": True, "compile_mode": "reduce-overhead"},  # CUDA graphs
    "bf16_compile": {"precision": "bf16", "compile": True},
    "bf16_compile_ro": {"precision": "bf16", "compile": True, "compile_mode": "reduce-overhead"},
    "fp16_compile_ro": {"precision": "fp16", "compile": True, "compile_mode": "reduce-overhead"},
    # DQN only: eager fp32 on smaller frames (mario_dqn with env.resize=[64,64]): its inputs are its own, so its
    # first loss is not compared with eager fp32's
    "frames64": {"tf32": False, "frame": 64},
    # and narrower convolutions (model.conv_channels): 0.39x the FLOPs of frames64's forward pass
    "frames64_narrow": {"tf32": False, "frame": 64, "conv_channels": (16, 32, 32)},
}
DEFAULT_VARIANTS = ["eager_fp32", "amp", "compile", "amp_compile"]


NETWORKS = {
    "dqn": "mario_dqn: dueling Nature CNN, 4x84x84 uint8, 7 actions; double DQN, Huber, clip 10, fused Adam",
    "ppo": "coinrun_ppo with model=impala_cnn: IMPALA CNN (16/32/32, hidden 256), 3x64x64 uint8, 15 actions; "
    "PPO clip 0.2, value clip 0.2, entropy 0.01, clip 0.5, fused Adam",
}
DEFAULT_BATCH_SIZES = {"dqn": [32, 512], "ppo": [32, 64]}
FRAME = 84
"""DQN: the frames' height and width (mario_dqn's), unless a variant names its own."""
ROUND_STEPS = 16
"""PPO: time steps per chunk of the round (its envs make up the rest)."""


def add_parser(commands: Any) -> None:
    p = commands.add_parser("learner", help="learner updates/s (DQN or PPO): eager fp32, AMP, compile, AMP + compile")
    p.add_argument("--algo", default="dqn", choices=list(NETWORKS), help="dqn: mario_dqn; ppo: CoinRun IMPALA CNN")
    p.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    p.add_argument(
        "--batch-sizes", type=int, nargs="+", help="DQN batch / PPO minibatch (default: dqn 32 512, ppo 32 64)"
    )
    p.add_argument("--epochs", type=int, default=2, help="PPO: epochs per round")
    p.add_argument("--minibatches", type=int, default=4, help="PPO: minibatches per epoch")
    p.add_argument("--variants", nargs="+", default=DEFAULT_VARIANTS, choices=list(VARIANTS))
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--seconds", type=float, default=4.0, help="timed seconds per variant per round")
    p.add_argument("--threads", type=int, default=1, help="torch threads (learner.num_threads)")
    p.add_argument("--compile-mode", default="default")
    p.add_argument("--output", required=True, help="JSON to write; the PNG goes next to it")
    p.set_defaults(func=run)


def _learner(algo: str, variant: str, device: str, compile_mode: str, epochs: int, minibatches: int) -> Any:
    import torch

    from raylab.builders.algorithms import build_dqn, build_ppo
    from raylab.config import DQNConfig, ModelConfig, PPOConfig
    from raylab.learner import Learner, resolve_device
    from raylab.models import build_actor_critic, build_q_network
    from raylab.types import EnvSpaces

    opts = dict(VARIANTS[variant])
    compile_mode = opts.pop("compile_mode", compile_mode)
    frame = opts.pop("frame", FRAME)
    conv_channels = opts.pop("conv_channels", ModelConfig.conv_channels)
    resolved = resolve_device(device)
    if opts.get("precision") == "auto":
        opts["precision"] = "fp16" if resolved.type == "cuda" else "bf16"
    torch.manual_seed(0)
    if algo == "ppo":
        spaces = EnvSpaces((3, 64, 64), np.dtype(np.uint8), 15, "Discrete(15)")
        model = ModelConfig(encoder="impala_cnn", hidden_sizes=(256,))
        cfg = PPOConfig(gamma=0.999, gae_lambda=0.95, clip=0.2, value_clip=0.2, entropy_coef=0.01, epochs=epochs,
                        minibatches=minibatches)  # fmt: skip
        return Learner(
            build_ppo(build_actor_critic(model, spaces), cfg), lr=5e-4, adam_eps=1e-5, max_grad_norm=0.5,
            device=str(resolved), compile_mode=compile_mode, prefetch=True, **opts,
        )  # fmt: skip
    spaces = EnvSpaces((4, frame, frame), np.dtype(np.uint8), 7, "Discrete(7)")
    model = ModelConfig(encoder="nature_cnn", hidden_sizes=(512,), dueling=True, conv_channels=conv_channels)
    objective = build_dqn(build_q_network(model, spaces), DQNConfig(target_update_every=2000, target_tau=1.0))
    return Learner(
        objective, lr=1e-4, adam_eps=1.5e-4, device=str(resolved), compile_mode=compile_mode, prefetch=True, **opts
    )


def shares_eager_network(variant: str) -> bool:
    """Whether ``variant`` trains eager fp32's network on its inputs (its first loss is then comparable)."""
    return not {"frame", "conv_channels"} & VARIANTS[variant].keys()


def _inputs(algo: str, batch_size: int, minibatches: int, frame: int = FRAME) -> list[Any]:
    """One call's input: 4 replay batches of ``frame`` x ``frame`` frames (DQN) or a round of 2 chunks of
    ``minibatches`` x batch steps (PPO)."""
    return _round(batch_size * minibatches) if algo == "ppo" else _batches(batch_size, frame)


def _round(steps: int, workers: int = 2) -> list[Any]:
    """A round of CoinRun-shaped chunks from ``workers`` workers, ``steps`` steps in all: random frames and
    actions, a few episode ends (a coin now and then, some time limits with their last frame)."""
    from raylab.types import Chunk

    rng = np.random.default_rng(steps)
    envs = steps // (ROUND_STEPS * workers)
    chunks = []
    for worker in range(workers):
        terminated = rng.random((ROUND_STEPS, envs)) < 0.02
        truncated = (rng.random((ROUND_STEPS, envs)) < 0.01) & ~terminated
        final_index = np.argwhere(truncated)
        chunk = Chunk(
            obs=rng.integers(0, 256, (ROUND_STEPS + 1, envs, 3, 64, 64), dtype=np.uint8),
            actions=rng.integers(0, 15, (ROUND_STEPS, envs)), rewards=np.where(terminated, 1.0, 0.0).astype(np.float32),
            terminated=terminated, truncated=truncated,
            final_obs=rng.integers(0, 256, (len(final_index), 3, 64, 64), dtype=np.uint8),
            final_index=final_index, policy_version=0, worker_id=worker, seq=0,
        )  # fmt: skip
        chunks.append(chunk)
    return chunks


def _batches(batch_size: int, frame: int = FRAME, count: int = 4) -> list[Any]:
    from raylab.types import Batch

    rng = np.random.default_rng(batch_size)
    return [
        Batch(
            obs=rng.integers(0, 256, (batch_size, 4, frame, frame), dtype=np.uint8),
            actions=rng.integers(0, 7, batch_size),
            rewards=rng.standard_normal(batch_size).astype(np.float32),
            discounts=np.full(batch_size, 0.99**3, np.float32),
            next_obs=rng.integers(0, 256, (batch_size, 4, frame, frame), dtype=np.uint8),
        )
        for _ in range(count)
    ]


def _updates_per_s(learner: Any, inputs: list[Any], seconds: float) -> float:
    """Calls on ``inputs`` until ``seconds`` pass; metrics are synced once per call (as in a run)."""
    updates, start = 0, time.perf_counter()
    while True:
        stats = learner.update_many(inputs)
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
    batch_sizes = args.batch_sizes or DEFAULT_BATCH_SIZES[args.algo]
    if args.algo == "ppo" and any(b * args.minibatches % (2 * ROUND_STEPS) for b in batch_sizes):
        raise RaylabError(
            f"a PPO round is 2 chunks of {ROUND_STEPS} steps: pick --batch-sizes whose product with --minibatches "
            f"is a multiple of {2 * ROUND_STEPS}"
        )
    own_network = [v for v in args.variants if not shares_eager_network(v)]
    if args.algo == "ppo" and own_network:
        raise RaylabError(f"{', '.join(own_network)}: a DQN variant (mario_dqn's network); drop it with --algo ppo")
    frames = {v: VARIANTS[v].get("frame", FRAME) for v in args.variants}
    for batch_size in batch_sizes:
        by_frame = {f: _inputs(args.algo, batch_size, args.minibatches, f) for f in set(frames.values())}
        inputs_of = {v: by_frame[frames[v]] for v in args.variants}
        learners, warmup, parity = {}, {}, {}
        reference = None
        for variant in args.variants:
            start = time.perf_counter()
            learner = _learner(args.algo, variant, args.device, args.compile_mode, args.epochs, args.minibatches)
            # first call on the input its frame size shares (DQN: one batch; PPO: the round, loss averaged over
            # its steps), where the compile happens; then one more call
            inputs = inputs_of[variant]
            if args.algo == "ppo":
                loss = learner.update_many(inputs).metrics["loss"]
            else:
                loss = learner.update(inputs[0])["loss"]
            learner.update_many(inputs)
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
                samples[variant].append(_updates_per_s(learners[variant], inputs_of[variant], args.seconds))
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
                {
                    v: abs(x - reference) / max(abs(reference), 1e-12) if shares_eager_network(v) else None
                    for v, x in parity.items()
                }
                if reference is not None
                else None
            ),
            "precision": {v: learners[v].precision for v in args.variants},
        }
        for v, m in medians.items():
            ratio = f" ({m / base:.2f}x eager fp32)" if base else ""
            print(f"batch {batch_size:4d} {v:12s} {m:8.1f} updates/s{ratio}", flush=True)
    device = next(iter(learners.values())).device
    call = "4 batches per call"
    if args.algo == "ppo":
        call = (
            f"a call: a round of 2 chunks x {ROUND_STEPS} steps, {args.epochs} epochs x {args.minibatches} minibatches"
        )
    report = {
        "benchmark": "learner",
        "algo": args.algo,
        "network": NETWORKS[args.algo],
        "device": str(device),
        "gpu": torch.cuda.get_device_name(0) if device.type == "cuda" else None,
        "torch_threads": args.threads,
        "compile_mode": args.compile_mode,
        "variant_options": {v: VARIANTS[v] for v in args.variants},
        "protocol": f"{args.rounds} alternating rounds of {args.seconds:g} s per variant; medians; {call}",
        "machine": machine_info(),
        "batch_sizes": results,
    }
    output = Path(args.output)
    atomic_write(output, _dump(report))
    _plot(results, args.variants, plot_title(report), output.with_suffix(".png"))
    print(f"wrote {output} and {output.with_suffix('.png')}")
    return 0


def _dump(report: dict[str, Any]) -> str:
    import json

    return json.dumps(report, indent=2) + "\n"


def _plot(results: dict[str, Any], variants: list[str], title: str, path: Path) -> None:
    """Updates/s per variant, one panel per batch size, each bar labelled with its ratio to eager fp32."""
    fig, axes = plots.figure(4.6 * len(results), 4.2, 1, len(results))
    row = [axes] if len(results) == 1 else list(axes[0])
    for ax, (batch_size, r) in zip(row, results.items(), strict=True):
        values = [r["updates_per_s"][v] for v in variants]
        bars = ax.bar(range(len(variants)), values, color=[f"C{i % 10}" for i in range(len(variants))])
        for bar, v in zip(bars, variants, strict=True):
            ratio = r["ratio_vs_eager_fp32"][v] if r["ratio_vs_eager_fp32"] else None
            if ratio is not None:
                ax.annotate(f"{ratio:.2f}x", (bar.get_x() + bar.get_width() / 2, bar.get_height()), ha="center",
                            va="bottom", fontsize=7)  # fmt: skip
        ax.margins(y=0.12)
        ax.set_title(f"batch {batch_size}", fontsize=10)
        ax.set_ylabel("updates / s (label: x eager fp32)")
        plots.slanted_labels(ax, variants)
    fig.suptitle(title, fontsize=11)
    plots.save(fig, path)


def plot_title(report: dict[str, Any]) -> str:
    """What a learner report measured: the objective and the device it ran on."""
    device = report.get("gpu") or report["device"]
    return f"{report.get('algo', 'dqn').upper()} learner updates/s per speed option, {device}"

"""A rollout actor's act() for the image networks on the CPU: what makes a CNN's inference cheaper.

    python benchmarks/cnn_inference.py --output benchmarks/cnn_inference.json

The actor-critic of ``+experiment=pong_ppo`` (the Nature CNN on (4, 84, 84) uint8 frames, 6 actions) and of
``+experiment=coinrun_ppo`` with ``model=impala_cnn`` ((3, 64, 64), 15 actions), acting on batches of 8, 16 and
32 observations (a worker's envs) with sampling and log-probabilities, one thread, as a rollout actor runs.
Variants, alternating round by round (medians of milliseconds per call):

    fp32            the network as the learner publishes it (torch eager)
    bf16            model.rollout_precision=bf16: the encoder in bfloat16 (cast at each weights load), heads fp32
    autocast_bf16   fp32 weights under torch.autocast(bfloat16): every call casts the weights again
    channels_last   fp32 in channels-last memory format (oneDNN's preferred layout), weights and input
    channels_last_weights  the same with the weights only (the input as the env gives it)
    bf16_channels_last     both (weights only): what the IMPALA CNN acts with under rollout_precision=bf16
    compile         torch.compile of the fp32 network (inductor, CPU)
    int8_linear     torch.ao dynamic int8 quantization of the Linear layers (the convolutions stay fp32)

Each variant's action distribution is compared with fp32's on the same batch (a policy head drawn away from its
near-uniform start): ``max_prob_diff`` is the largest difference of an action's probability.
"""

from __future__ import annotations

import argparse
import copy
import json
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

EXPERIMENTS = {"pong_ppo": [], "coinrun_ppo": ["model=impala_cnn"]}


def per_call_ms(act: Callable[[Any], Any], obs: Any, seconds: float) -> float:
    for _ in range(10):
        act(obs)
    times = []
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        start = time.perf_counter()
        act(obs)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def variants(net: Any, example: Any) -> dict[str, Callable[[Any], Any]]:
    """name -> a function of a uint8 batch returning the policy's logits (fp32)."""
    import torch

    def bf16_encoder(module: Any) -> Any:
        module.encoder.to(torch.bfloat16)  # model.rollout_precision=bf16: the heads stay fp32
        return module

    bf16 = bf16_encoder(copy.deepcopy(net))
    last = copy.deepcopy(net).to(memory_format=torch.channels_last)
    bf16_last = bf16_encoder(copy.deepcopy(net)).to(memory_format=torch.channels_last)
    compiled = torch.compile(copy.deepcopy(net))
    int8 = torch.ao.quantization.quantize_dynamic(copy.deepcopy(net), {torch.nn.Linear}, dtype=torch.qint8)

    def autocast(x: Any) -> Any:
        with torch.autocast("cpu", dtype=torch.bfloat16):
            return net(x)[0].float()

    return {
        "fp32": lambda x: net(x)[0],
        "bf16": lambda x: bf16(x)[0],
        "autocast_bf16": autocast,
        "channels_last": lambda x: last(x.contiguous(memory_format=torch.channels_last))[0],
        "channels_last_weights": lambda x: last(x)[0],
        "bf16_channels_last": lambda x: bf16_last(x)[0],
        "compile": lambda x: compiled(x)[0],
        "int8_linear": lambda x: int8(x)[0],
    }


def act(logits_of: Callable[[Any], Any], generator: Any) -> Callable[[Any], Any]:
    """A rollout actor's act(): logits, then a sample and its log-probability (ActorCriticPolicy's work)."""
    import torch

    def run(x: Any) -> Any:
        with torch.inference_mode():
            logits = logits_of(torch.from_numpy(x))
            log_probs = torch.log_softmax(logits, -1)
            actions = torch.multinomial(log_probs.exp(), 1, generator=generator).squeeze(1)
            return actions.numpy(), log_probs.gather(1, actions[:, None]).squeeze(1).numpy()

    return run


def main() -> int:
    import torch

    from raylab.bench.machine import machine_info
    from raylab.config import resolve
    from raylab.envs.registry import env_spaces
    from raylab.models.factory import build_actor_critic
    from raylab.train import compose

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batches", type=int, nargs="+", default=[8, 16, 32])
    parser.add_argument("--seconds", type=float, default=1.0, help="per measurement")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--output", default="benchmarks/cnn_inference.json")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    torch.set_num_threads(1)
    torch.manual_seed(0)
    results: dict[str, Any] = {}
    for experiment, overrides in EXPERIMENTS.items():
        cfg = resolve(
            compose([f"+experiment={experiment}", *overrides, "logger.console=false"]), run_dir=tempfile.mkdtemp()
        )
        spaces = env_spaces(cfg.env)
        net = build_actor_critic(cfg.model, spaces).eval().requires_grad_(False)
        with torch.no_grad():
            net.policy.weight.normal_(0.0, 0.5)  # a head away from its near-uniform start, for the comparison
        results[experiment] = {"model": cfg.model.encoder, "obs_shape": list(spaces.obs_shape), "batches": {}}
        for batch in args.batches:
            obs = np.random.default_rng(batch).integers(0, 256, (batch, *spaces.obs_shape), dtype=np.uint8)
            logits = variants(net, torch.from_numpy(obs))
            with torch.inference_mode():
                ref = torch.softmax(logits["fp32"](torch.from_numpy(obs)), -1)
                diff = {
                    k: float((torch.softmax(f(torch.from_numpy(obs)).float(), -1) - ref).abs().max())
                    for k, f in logits.items()
                }
            acts = {k: act(f, torch.Generator().manual_seed(0)) for k, f in logits.items()}
            runs: dict[str, list[float]] = {k: [] for k in acts}
            for round_ in range(args.rounds):
                for name in list(acts) if round_ % 2 == 0 else reversed(list(acts)):
                    runs[name].append(per_call_ms(acts[name], obs, args.seconds))
            med = {k: statistics.median(v) for k, v in runs.items()}
            results[experiment]["batches"][str(batch)] = {
                "median_ms": med,
                "vs_fp32": {k: v / med["fp32"] for k, v in med.items()},
                "max_prob_diff": diff,
                "runs_ms": runs,
            }
            print(
                f"{experiment} batch {batch}: "
                + ", ".join(f"{k} {v:.2f} ms ({v / med['fp32']:.2f}x)" for k, v in med.items()),
                flush=True,
            )
    report = {
        "benchmark": "cnn_inference",
        "protocol": f"a rollout actor's act() (logits, a sample, its log-probability) on random uint8 frames, one "
        f"thread, {args.rounds} alternating rounds of {args.seconds:g} s per variant; medians of milliseconds per "
        f"call",
        "machine": machine_info(),
        "torch": torch.__version__,
        "results": results,
    }
    Path(args.output).write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""uint8 frames into a CNN on the CPU: converting them to float and laying them out channels-last in one step
(``before``: ``obs.to(dtype, memory_format=channels_last)``), against laying the bytes out first and converting
after (``after``: ``raylab.models.factory.scaled_frames``), alone and inside ``mario_dqn``'s learner update.

python benchmarks/frame_conversion.py frame_conversion.json [--rounds 5] [--seconds 3]

One torch thread, as the recipes' learners and rollout actors run. Part one times the conversion alone on the
shapes the CNNs see: learner batches of Mario frames (4 x 64 x 64 and 4 x 84 x 84), a rollout actor's batch
of 4 envs, and Procgen's 3 x 64 x 64 for the IMPALA CNN; in fp32, and in bf16 where a rollout actor acts in it.
Part two times ``mario_dqn``'s learner (``raylab.bench learner``'s: dueling Nature CNN, double DQN, batch 32,
4 batches a call) with each conversion patched into ``raylab.models.factory``. The two alternate round by
round; each figure is the median over rounds, and the ratio is after / before (time: below 1 is faster;
updates/s: above 1 is faster). Both conversions give the same values (checked before timing).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import torch

import raylab.models.factory as factory
from raylab.bench.learner_speed import _batches, _learner, _updates_per_s
from raylab.bench.machine import machine_info

Convert = Callable[[torch.Tensor, torch.dtype, torch.memory_format], torch.Tensor]


def before(obs: torch.Tensor, dtype: torch.dtype, layout: torch.memory_format) -> torch.Tensor:
    """The conversion as raylab.models.factory.encode did it until this benchmark: one step."""
    return obs.to(dtype, memory_format=layout).div_(255.0)


VERSIONS: dict[str, Convert] = {"before": before, "after": factory.scaled_frames}

SHAPES: list[tuple[str, tuple[int, ...], torch.dtype]] = [
    ("learner batch, Mario 64x64", (32, 4, 64, 64), torch.float32),
    ("learner batch, Mario 84x84", (32, 4, 84, 84), torch.float32),
    ("learner batch 256, Mario 84x84", (256, 4, 84, 84), torch.float32),
    ("rollout actor, 4 envs, 84x84", (4, 4, 84, 84), torch.float32),
    ("rollout actor, 4 envs, 84x84, bf16", (4, 4, 84, 84), torch.bfloat16),
    ("learner batch, Procgen 64x64 RGB", (32, 3, 64, 64), torch.float32),
    ("learner batch 256, Procgen 64x64 RGB", (256, 3, 64, 64), torch.float32),
]


def conversion_us(convert: Convert, obs: torch.Tensor, dtype: torch.dtype, seconds: float) -> float:
    """Mean microseconds per conversion over calls that fill ``seconds``."""
    convert(obs, dtype, torch.channels_last)
    calls, start = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - start) < seconds:
        for _ in range(20):
            convert(obs, dtype, torch.channels_last)
        calls += 20
    return elapsed / calls * 1e6


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("output")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=3.0, help="per learner timing (a conversion: a fifth)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    generator = torch.Generator().manual_seed(0)
    frames = {name: torch.randint(0, 256, shape, dtype=torch.uint8, generator=generator) for name, shape, _ in SHAPES}
    for name, _, dtype in SHAPES:
        out = {v: f(frames[name], dtype, torch.channels_last) for v, f in VERSIONS.items()}
        assert torch.equal(out["before"], out["after"]), name
        assert out["before"].stride() == out["after"].stride(), name

    conversion: dict[str, dict[str, list[float]]] = {name: {v: [] for v in VERSIONS} for name, _, _ in SHAPES}
    variant = {64: "frames64", 84: "eager_fp32"}  # raylab.bench learner's variants of those frame sizes
    learners = {
        (frame, v): (_learner("dqn", variant[frame], "cpu", "default", 2, 4), _batches(32, frame))
        for frame in (64, 84)
        for v in VERSIONS
    }
    updates: dict[str, dict[str, list[float]]] = {str(frame): {v: [] for v in VERSIONS} for frame in (64, 84)}
    try:
        for key, (learner, batches) in learners.items():  # warm-up: oneDNN's kernels, the optimizer's state
            factory.scaled_frames = VERSIONS[key[1]]  # type: ignore[assignment]
            learner.update_many(batches)
        for r in range(args.rounds):
            for v, convert in VERSIONS.items():
                for name, _, dtype in SHAPES:
                    conversion[name][v].append(conversion_us(convert, frames[name], dtype, args.seconds / 5))
                factory.scaled_frames = convert  # type: ignore[assignment]
                for frame in (64, 84):
                    learner, batches = learners[(frame, v)]
                    updates[str(frame)][v].append(_updates_per_s(learner, batches, args.seconds))
            print(f"round {r + 1}/{args.rounds}: " + ", ".join(
                f"{frame}x{frame} {v} {updates[str(frame)][v][-1]:.1f}" for frame in (64, 84) for v in VERSIONS
            ))  # fmt: skip
    finally:
        factory.scaled_frames = VERSIONS["after"]  # type: ignore[assignment]

    def summary(samples: dict[str, list[float]]) -> dict[str, float]:
        medians = {v: statistics.median(s) for v, s in samples.items()}
        return {**medians, "ratio": medians["after"] / medians["before"]}

    result = {
        "benchmark": "frame_conversion", "torch_threads": 1, "rounds": args.rounds, "seconds": args.seconds,
        "machine": machine_info(), "shapes": {name: list(shape) for name, shape, _ in SHAPES},
        "dtypes": {name: str(dtype).removeprefix("torch.") for name, _, dtype in SHAPES},
        "conversion_us": {name: summary(s) for name, s in conversion.items()},
        "conversion_us_rounds": conversion,
        "learner_batch": 32, "learner_updates_per_s": {f: summary(s) for f, s in updates.items()},
        "learner_updates_per_s_rounds": updates,
    }  # fmt: skip
    for name, s in result["conversion_us"].items():
        print(f"{name:38s} before {s['before']:8.1f} us  after {s['after']:8.1f} us  {s['ratio']:.2f}x")
    for frame, s in result["learner_updates_per_s"].items():
        print(f"learner {frame}x{frame}: before {s['before']:.1f}  after {s['after']:.1f} updates/s  {s['ratio']:.2f}x")
    path = Path(__file__).parent / args.output
    path.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

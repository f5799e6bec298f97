"""Where a CPU learner's update time goes: each layer of the Nature CNN (channels-last, fp32, one torch thread),
forward alone and forward + backward, at the given batch sizes, with the GFLOP/s each reaches.

python benchmarks/nature_cnn_layers.py nature_cnn_layers.json --batch-sizes 32 256

A double DQN update (``mario_dqn``) runs the network forward and backward on the batch and forward twice more
without gradients (the online and the target network on the next observations); the JSON's ``dqn_update_ms``
adds those layer times up, to set beside ``python -m raylab.bench learner``'s measured updates/s. The head after
the 512 features (a few thousand multiply-adds) is left out.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from raylab.bench.machine import machine_info

LAYERS: list[tuple[str, Callable[[], nn.Module], tuple[int, ...]]] = [
    ("conv1 8x8/4, 4->32", lambda: nn.Conv2d(4, 32, 8, 4), (4, 84, 84)),
    ("conv2 4x4/2, 32->64", lambda: nn.Conv2d(32, 64, 4, 2), (32, 20, 20)),
    ("conv3 3x3/1, 64->64", lambda: nn.Conv2d(64, 64, 3, 1), (64, 9, 9)),
    ("fc 3136->512", lambda: nn.Linear(3136, 512), (3136,)),
]


def timed_ms(fn: Callable[[], object], repeats: int) -> float:
    """Median milliseconds of ``fn`` over ``repeats`` timings of 10 calls each, after 3 warm-up calls."""
    for _ in range(3):
        fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(10):
            fn()
        times.append((time.perf_counter() - start) / 10 * 1e3)
    return statistics.median(times)


def macs(layer: nn.Module, shape: tuple[int, ...]) -> int:
    """Multiply-adds of one sample through ``layer``."""
    out = layer(torch.zeros(1, *shape))
    weight = layer.weight
    per_output = weight[0].numel()
    return int(out[0].numel() * per_output)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("output")
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[32, 256])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    result: dict[str, object] = {
        "benchmark": "nature_cnn_layers", "torch_threads": 1, "dtype": "fp32", "layout": "channels_last",
        "repeats": args.repeats, "machine": machine_info(), "batch_sizes": {},
    }  # fmt: skip
    for batch in args.batch_sizes:
        rows = {}
        for name, make, shape in LAYERS:
            layer = make()
            x = torch.rand(batch, *shape)
            if x.dim() == 4:
                x = x.contiguous(memory_format=torch.channels_last)
            x.requires_grad_(not name.startswith("conv1"))  # the frames need no gradient

            def forward(layer: nn.Module = layer, x: torch.Tensor = x) -> None:
                with torch.no_grad():
                    F.relu(layer(x))

            def forward_backward(layer: nn.Module = layer, x: torch.Tensor = x) -> None:
                F.relu(layer(x)).sum().backward()

            flop = 2 * macs(layer, shape) * batch
            fwd, both = timed_ms(forward, args.repeats), timed_ms(forward_backward, args.repeats)
            rows[name] = {
                "forward_ms": fwd, "forward_backward_ms": both, "forward_gflop_per_s": flop / fwd / 1e6,
                "forward_backward_gflop_per_s": (3 if x.requires_grad else 2) * flop / both / 1e6,
            }  # fmt: skip
            print(f"batch {batch:4d} {name:22s} forward {fwd:7.2f} ms   forward+backward {both:7.2f} ms")
        update = sum(r["forward_backward_ms"] + 2 * r["forward_ms"] for r in rows.values())
        result["batch_sizes"][str(batch)] = {"layers": rows, "dqn_update_ms": update}  # type: ignore[index]
        print(f"batch {batch:4d} a double DQN update's layers: {update:.1f} ms ({1e3 / update:.1f} updates/s)")
    path = Path(__file__).parent / args.output
    path.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

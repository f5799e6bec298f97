"""Parameter-server apply time per push: torch.optim.RMSprop (before) vs the written-out update (after).

    python benchmarks/param_server_apply.py            # writes benchmarks/param_server_apply.json

Both variants run ``ParameterServer.push`` (apply + copy of the new weights for the reply) on one thread,
on flat vectors of three model sizes, alternating variant by variant over repeats; medians are reported.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch

from raylab.bench.machine import machine_info
from raylab.params.server import ParameterServer

SIZES = {"cartpole_a3c mlp 64x64": 4_675, "snake_a3c mlp 128x128": 18_564, "nature_cnn actor-critic (mario)": 1_688_232}


class TorchOptimizerServer(ParameterServer):
    """The previous implementation: torch.optim.RMSprop over one flat Parameter."""

    def __init__(self, params: np.ndarray, **kwargs: float):
        super().__init__(params, **kwargs)
        self.param = torch.nn.Parameter(self.flat)
        self.flat = self.param.data
        self.optimizer = torch.optim.RMSprop([self.param], lr=self.lr, alpha=self.alpha, eps=self.eps, foreach=False)

    def _rmsprop_step(self, grad: torch.Tensor) -> None:
        self.param.grad = grad
        self.optimizer.step()
        self.param.grad = None


def time_pushes(cls: type[ParameterServer], size: int, pushes: int, seed: int) -> float:
    rng = np.random.default_rng(seed)
    server = cls(rng.normal(size=size).astype(np.float32), lr=7e-4, alpha=0.99, eps=1e-5)
    grads = [rng.normal(size=size).astype(np.float32) for _ in range(8)]
    start = time.perf_counter()
    for k in range(pushes):
        server.push(grads[k % 8], version=k)
    return (time.perf_counter() - start) / pushes * 1e6


def main() -> int:
    torch.set_num_threads(1)
    repeats = 7
    results = {}
    for name, size in SIZES.items():
        pushes = 2000 if size < 100_000 else 100
        samples: dict[str, list[float]] = {"torch_optim": [], "written_out": []}
        for r in range(repeats):
            order = [("torch_optim", TorchOptimizerServer), ("written_out", ParameterServer)]
            for label, cls in order if r % 2 == 0 else reversed(order):
                samples[label].append(time_pushes(cls, size, pushes, r))
        before, after = statistics.median(samples["torch_optim"]), statistics.median(samples["written_out"])
        results[name] = {
            "params": size,
            "us_per_push_torch_optim": before,
            "us_per_push_written_out": after,
            "speedup": before / after,
            "samples_us": samples,
        }
        print(f"{name:26s} {size:>9,} params: {before:8.1f} -> {after:8.1f} us/push ({before / after:.2f}x)")
    out = Path(__file__).with_suffix(".json")
    out.write_text(json.dumps({"benchmark": "param_server_apply", "repeats": repeats, "machine": machine_info(),
                               "results": results}, indent=2) + "\n")  # fmt: skip
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

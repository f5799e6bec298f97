"""Which precision pays on this machine: ``auto`` resolved where the network runs.

A convolution in bfloat16 pays only on a CPU that computes it natively (AVX512-BF16 or AMX): there the Nature
CNN trains 1.8x and acts 1.7-1.9x faster than in fp32. On a CPU without it (AVX2 alone) PyTorch emulates bf16
and the same convolution ran 18x slower than fp32 (benchmarks/learner_cpu_avx2.json). On a GPU these small
CNNs are launch-bound and AMP ran at 0.76-0.92x fp32 (benchmarks/learner_cuda_dqn.json). So ``auto`` means
bf16 on a CPU with native bf16 and fp32 everywhere else; an experiment that sets it runs fast on the machine it
finds instead of on the one it was tuned on.
"""

from __future__ import annotations

import functools

import torch


@functools.cache
def native_bf16() -> bool:
    """Whether this CPU computes bfloat16 natively (AVX512-BF16 or AMX tiles)."""
    cpu = torch.cpu
    checks = ("_is_avx512_bf16_supported", "_is_amx_tile_supported")
    return any(bool(getattr(cpu, name, lambda: False)()) for name in checks)


def resolve_precision(precision: str, device: torch.device | str = "cpu") -> str:
    """``precision`` with ``auto`` made concrete for ``device``: bf16 on a CPU with native bf16, else fp32."""
    if precision != "auto":
        return precision
    return "bf16" if torch.device(device).type == "cpu" and native_bf16() else "fp32"

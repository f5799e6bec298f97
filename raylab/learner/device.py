"""The learner's device and precision: device resolution, precision checks, CUDA math settings, and host to
device copies (through reused pinned buffers on CUDA)."""

from __future__ import annotations

import contextlib
from contextlib import AbstractContextManager
from typing import Any

import numpy as np
import torch

from raylab.errors import ConfigError
from raylab.params.flat import readonly_tensor

PRECISIONS = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


def resolve_device(name: str) -> torch.device:
    """auto -> cuda when available, else cpu; cuda without CUDA is a user error."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise ConfigError("learner.device=cuda but CUDA is not available here: use learner.device=auto or cpu")
    return torch.device(name)


def check_precision(precision: str, device: torch.device) -> torch.dtype:
    """The autocast dtype of ``precision`` (already resolved: raylab.models.precision.resolve_precision) on
    ``device``; a ConfigError naming the fix where it cannot run there."""
    if precision not in PRECISIONS:
        raise ConfigError(f"learner.precision={precision} is unknown: choose one of {', '.join(PRECISIONS)}")
    if precision == "fp16" and device.type != "cuda":
        raise ConfigError("learner.precision=fp16 needs CUDA (GradScaler): use learner.precision=bf16 on CPU")
    if precision == "bf16" and device.type == "cuda" and not torch.cuda.is_bf16_supported():
        raise ConfigError("learner.precision=bf16 is not supported by this GPU: use learner.precision=fp16")
    return PRECISIONS[precision]


def enable_fast_cuda_math() -> None:
    """TF32 for matmuls and convolutions, and cudnn's autotuner (input shapes are fixed per run)."""
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    torch.backends.cudnn.benchmark = True


class PinnedStaging:
    """Host to device copies through a ring of pinned host buffers that are reused (pinning memory per batch
    costs more than the copy). Each copy is asynchronous on the current CUDA stream; a buffer is refilled
    only after the copy that last read it completed (its event), so ``slots`` bounds the copies in flight."""

    def __init__(self, device: torch.device, slots: int):
        self.device = device
        self._buffers: list[dict[str, torch.Tensor]] = [{} for _ in range(slots)]
        self._copied: list[torch.cuda.Event | None] = [None] * slots
        self._next = 0

    def copy(self, arrays: dict[str, np.ndarray]) -> dict[str, torch.Tensor]:
        slot = self._next
        self._next = (slot + 1) % len(self._buffers)
        copied = self._copied[slot]
        if copied is not None:
            copied.synchronize()  # the device has read this slot's buffers: they may be overwritten
        buffers = self._buffers[slot]
        out = {}
        for name, array in arrays.items():
            host = readonly_tensor(np.ascontiguousarray(array))
            buf = buffers.get(name)
            if buf is None or buf.shape != host.shape or buf.dtype != host.dtype:
                buf = buffers[name] = torch.empty(host.shape, dtype=host.dtype, pin_memory=True)
            buf.copy_(host)
            out[name] = buf.to(self.device, non_blocking=True)
        event = torch.cuda.Event()
        event.record(torch.cuda.current_stream(self.device))
        self._copied[slot] = event
        return out


class Placement:
    """The Learner's device and precision: arrays onto the device (through reused pinned buffers on CUDA,
    copied asynchronously on the current stream) and the autocast context of its precision."""

    def __init__(self, device: torch.device, amp_dtype: torch.dtype, staging_slots: int):
        self.device = device
        self.amp_dtype = amp_dtype
        self._staging = PinnedStaging(device, staging_slots) if device.type == "cuda" else None

    def tensor(self, array: np.ndarray) -> torch.Tensor:
        return readonly_tensor(array).to(self.device)

    def tensors(self, arrays: dict[str, np.ndarray]) -> dict[str, torch.Tensor]:
        if self._staging is not None:
            return self._staging.copy(arrays)
        return {name: readonly_tensor(array) for name, array in arrays.items()}  # views: nothing to copy

    def autocast(self) -> AbstractContextManager[Any]:
        if self.amp_dtype == torch.float32:
            return contextlib.nullcontext()  # a disabled torch.autocast still costs microseconds per step
        return torch.autocast(self.device.type, dtype=self.amp_dtype)

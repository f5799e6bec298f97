"""Inference weights published from the learner's flat parameter buffer (raylab.learner.flat).

The policy's parameters are one slice of that buffer, so a publish is one device-to-host copy of the slice
(into reused pinned host memory, non-blocking, on CUDA; issued at the end of a learner call, before the call's
one host sync, so it overlaps the metrics' wait) and one host copy into the arrays that leave the process. The
few tensors outside it (running statistics, BatchNorm buffers) are copied one by one. Each ``Weights`` owns its
memory: a later publish never changes weights already handed out (in one process they are shared by
reference).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from raylab.errors import ConfigError
from raylab.learner.flat import FlatParams
from raylab.types import Weights


@dataclass(frozen=True)
class _Entry:
    name: str
    shape: tuple[int, ...]
    offset: int
    """Where the entry starts in the published flat array (float32 entries), or -1 (copied apart)."""


class WeightsPublisher:
    """``stage()`` issues the copy of the policy's weights; ``weights(version)`` returns them."""

    def __init__(self, policy: nn.Module, flat: FlatParams):
        self.policy = policy
        self.flat = flat
        state = policy.state_dict(keep_vars=True)
        slices = {name: flat.slice_of(t) for name, t in state.items()}
        inside = sorted((s.start, s.stop) for s in slices.values() if s is not None)
        self.span = slice(inside[0][0], inside[-1][1]) if inside else slice(0, 0)
        if sum(b - a for a, b in inside) != self.span.stop - self.span.start:
            self.span = slice(0, 0)  # the policy's parameters are not one slice: copy each
            slices = dict.fromkeys(slices)
        self.entries = [_Entry(name, tuple(t.shape), self._offset(slices[name])) for name, t in state.items()]
        self.cuda = flat.device.type == "cuda"
        size = self.span.stop - self.span.start
        self._pinned = torch.empty(size, pin_memory=True) if self.cuda and size else None
        self._staged: torch.cuda.Event | None = None

    def _offset(self, where: slice | None) -> int:
        return -1 if where is None else where.start - self.span.start

    def stage(self) -> None:
        """Issue the device-to-host copy of the parameters' slice (CUDA; nothing to do on the CPU)."""
        if self._pinned is None:
            return
        self._pinned.copy_(self.flat.flat[self.span], non_blocking=True)
        self._staged = torch.cuda.Event()
        self._staged.record()

    def weights(self, version: int) -> Weights:
        """The policy's state as CPU NumPy arrays of their own, tagged ``version``."""
        span = self.span.stop - self.span.start
        if self._pinned is not None:
            if self._staged is None:
                self.stage()
            assert self._staged is not None
            self._staged.synchronize()
            self._staged = None
            host = self._pinned.numpy().copy()
        else:
            host = self.flat.flat[self.span].detach().numpy().copy() if span else np.empty(0, np.float32)
        return Weights(version, self.assemble(host))

    def assemble(self, host: np.ndarray) -> dict[str, np.ndarray]:
        """The policy's state from ``host`` (a copy of the slice), the entries outside it as they are now."""
        state = self.policy.state_dict()
        out: dict[str, np.ndarray] = {}
        for entry in self.entries:
            if entry.offset >= 0:
                size = int(np.prod(entry.shape, dtype=np.int64))
                out[entry.name] = host[entry.offset : entry.offset + size].reshape(entry.shape)
            else:
                out[entry.name] = state[entry.name].detach().cpu().numpy().copy()
        return out


class PolicyAverage:
    """An exponential moving average of the policy's parameters (``learner.average_rate``): ``update(steps)``
    after a call of ``steps`` optimizer steps moves it toward the flat buffer's policy slice by
    1 - (1 - rate)^steps (the average of every step's weights, sampled at the call's end: one pass over the
    slice a call); ``weights(version)`` publishes it as the publisher publishes the newest, any non-float tensor
    outside the slice taken as it is now (a network with float running statistics is refused here)."""

    def __init__(self, publisher: WeightsPublisher, rate: float):
        span = publisher.span
        if span.stop == span.start:
            raise ConfigError(
                "learner.average_rate needs the policy's parameters in one slice of the flat buffer, and this "
                "network's are not: remove learner.average_rate"
            )
        state = publisher.policy.state_dict()
        statistics = [e.name for e in publisher.entries if e.offset < 0 and state[e.name].is_floating_point()]
        if statistics:  # running statistics belong to the newest weights, not to their average
            raise ConfigError(
                f"learner.average_rate averages parameters, and this network also keeps running statistics "
                f"({statistics[0]}: model.norm=batch): remove learner.average_rate or model.norm"
            )
        self.publisher = publisher
        self.rate = float(rate)
        self.average = publisher.flat.flat[span].detach().clone()

    def update(self, steps: int) -> None:
        if steps > 0:
            self.average.lerp_(self.publisher.flat.flat[self.publisher.span], 1.0 - (1.0 - self.rate) ** steps)

    def weights(self, version: int) -> Weights:
        return Weights(version, self.publisher.assemble(self.average.detach().cpu().numpy().copy()))

    def state(self) -> dict[str, torch.Tensor]:
        """The average as the policy's named state (a checkpoint's ``policy_average``: raylab.evaluate scores it
        with ``weights=average``), the tensors outside the slice as they are now."""
        return {name: torch.from_numpy(array) for name, array in self.weights(0).params.items()}

    def load(self, named: dict[str, Any] | None) -> None:
        """A checkpoint's average; None (one saved without it): start again from the weights as they are."""
        if named is None:
            self.average.copy_(self.publisher.flat.flat[self.publisher.span])
            return
        for entry in self.publisher.entries:
            if entry.offset >= 0:
                size = int(np.prod(entry.shape, dtype=np.int64))
                value = torch.as_tensor(named[entry.name]).reshape(-1)
                self.average[entry.offset : entry.offset + size].copy_(value)

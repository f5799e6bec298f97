"""ParameterServer: one shard of A3C's shared weights and shared RMSProp (plain Python, no Ray).

Seed 000 applies every worker's gradient to one RMSPropAsync under one mutex, so a worker waits while any
other applies; at 16 threads that wait was 45 % of the run. raylab removes the wait in three ways, each
measured by ``python -m raylab.bench scaling`` (benchmarks/a3c_scaling.json):

1. **No lock, one writer per shard.** A shard is a Ray actor: it applies pushes one at a time in arrival
   order, so there is nothing to lock, and a worker never stalls inside the server.
2. **Pipelined pushes with bounded staleness.** A worker sends its gradient and starts the next segment at
   once; the reply (the shard's new weights) is collected before the segment after that. It blocks only
   when ``pushes_in_flight`` replies are still outstanding, i.e. when the server is the bottleneck.
3. **Sharding.** With ``params.num_shards = S`` each shard owns a contiguous slice of the flat parameter
   vector and its RMSProp statistics. RMSProp is elementwise, so S shards compute exactly what one server
   computes, in 1/S of the time per push, in parallel.

Batching pending gradients into one apply was rejected: summing k gradients before one RMSProp step is a
different optimizer (one mean-square update instead of k), which would break the exactness test against a
single-process RMSProp and change A3C's learning dynamics as workers are added.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import torch

from raylab.params.flat import readonly_tensor


@dataclass
class PushReply:
    """A shard's answer to one push: its weights right after applying it."""

    shard: int
    version: int
    """Pushes this shard has applied, this one included."""
    params: np.ndarray
    """The shard's slice of the flat parameter vector after the apply (a copy)."""
    lag: int
    """Pushes applied between the weights the gradient was computed on and this one (policy lag)."""
    queue_s: float
    """Seconds between the worker sending the push and the shard starting it (same-host clocks)."""
    apply_s: float
    """Seconds the shard spent applying it."""


@dataclass
class ServerStats:
    """Running totals since the last reset: constant size however long the run."""

    shard: int
    version: int
    pushes: int = 0
    apply_s: float = 0.0
    queue_s: float = 0.0
    lag_sum: int = 0
    lag_max: int = 0

    @property
    def lag_mean(self) -> float:
        return self.lag_sum / self.pushes if self.pushes else 0.0


class ParameterServer:
    """Holds one slice of the flat weights and applies pushed gradients with an RMSProp whose statistics
    every worker shares (Mnih et al. 2016's shared RMSProp: one mean square per parameter, not per worker).

    The update is torch's RMSprop (``_rmsprop_step``): ``mean_sq = alpha * mean_sq + (1 - alpha) * g**2``,
    ``theta -= lr * g / (sqrt(mean_sq) + eps)``.
    """

    def __init__(self, params: np.ndarray, *, lr: float, alpha: float, eps: float, shard: int = 0):
        self.shard = shard
        self.flat = torch.tensor(np.asarray(params, np.float32))
        self.mean_sq = torch.zeros_like(self.flat)
        self.lr, self.alpha, self.eps = lr, alpha, eps
        self.version = 0
        self._stats = ServerStats(shard, 0)

    def _rmsprop_step(self, grad: torch.Tensor) -> None:
        """torch.optim.RMSprop's update (no momentum, not centered), op for op, on one flat tensor.

        Written out because the optimizer's per-step Python overhead (param groups, state lookup, hooks) cost
        more than the arithmetic on models of A3C's size: benchmarks/param_server_apply.json.
        """
        self.mean_sq.mul_(self.alpha).addcmul_(grad, grad, value=1 - self.alpha)
        self.flat.addcdiv_(grad, self.mean_sq.sqrt().add_(self.eps), value=-self.lr)

    def push(self, grad: np.ndarray, version: int, sent_at: float | None = None) -> PushReply:
        """Apply one gradient computed on weights of ``version``; returns the new weights."""
        start = time.time()
        queue_s = max(0.0, start - sent_at) if sent_at is not None else 0.0
        t0 = time.perf_counter()
        grad_t = readonly_tensor(np.asarray(grad, np.float32))  # only read
        if grad_t.shape != self.flat.shape:
            raise ValueError(
                f"shard {self.shard} holds {self.flat.numel()} parameters, got a gradient of {grad_t.numel()}"
            )
        self._rmsprop_step(grad_t)
        lag = self.version - version
        self.version += 1
        params = self.flat.numpy().copy()
        apply_s = time.perf_counter() - t0
        stats = self._stats
        stats.pushes += 1
        stats.apply_s += apply_s
        stats.queue_s += queue_s
        stats.lag_sum += lag
        stats.lag_max = max(stats.lag_max, lag)
        return PushReply(self.shard, self.version, params, lag, queue_s, apply_s)

    def pull(self, known_version: int = -1) -> PushReply | None:
        """The current weights, or None when the caller already holds ``known_version`` or newer."""
        if known_version >= self.version:
            return None
        return PushReply(self.shard, self.version, self.flat.numpy().copy(), 0, 0.0, 0.0)

    def load(self, params: np.ndarray, version: int = 0) -> None:
        """Replace the weights and start a fresh RMSProp (benchmarks restart from a checkpoint this way)."""
        self.flat = torch.tensor(np.asarray(params, np.float32))
        self.mean_sq = torch.zeros_like(self.flat)
        self.version = version
        self._stats = ServerStats(self.shard, version)

    def load_state_dict(self, state: dict, min_version: int = 0) -> None:
        """Resume from ``state_dict()``: weights, RMSProp statistics and version (at least ``min_version``: a
        shard restored after a crash moves its version on past every version the workers have seen)."""
        if int(state["shard"]) != self.shard or state["params"].numel() != self.flat.numel():
            raise ValueError(f"shard {self.shard} cannot load the state of shard {state['shard']}")
        self.flat = state["params"].clone()
        self.mean_sq = state["mean_sq"].clone()
        self.version = max(int(state["version"]), min_version)
        self._stats = ServerStats(self.shard, self.version)

    def stats(self, reset: bool = False) -> ServerStats:
        out = self._stats
        out.version = self.version
        if reset:
            self._stats = ServerStats(self.shard, self.version)
        return out

    def state_dict(self) -> dict:
        return {
            "shard": self.shard,
            "version": self.version,
            "params": self.flat.clone(),
            "mean_sq": self.mean_sq.clone(),
            "hyper": {"lr": self.lr, "alpha": self.alpha, "eps": self.eps},
        }

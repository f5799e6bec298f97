"""Learner: turns batches into optimizer steps and publishes versioned inference weights.

The version is the number of updates applied, so policy lag (learner version minus the version that acted)
is measured in updates everywhere.
"""

from __future__ import annotations

import time
import warnings
from typing import Any

import numpy as np
import torch

from raylab.algos.dqn.objective import DQN, TensorBatch
from raylab.errors import ConfigError
from raylab.types import Batch, LearnerStats, Weights


def resolve_device(name: str) -> torch.device:
    """auto -> cuda when available, else cpu; cuda without CUDA is a user error."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise ConfigError("learner.device=cuda but CUDA is not available here: use learner.device=auto or cpu")
    return torch.device(name)


class Learner:
    """Owns the objective's modules and the Adam optimizer; ``update(batch)`` applies one step."""

    def __init__(
        self,
        objective: DQN,
        *,
        lr: float,
        adam_eps: float = 1e-8,
        max_grad_norm: float | None = 10.0,
        device: str = "auto",
        publish_every: int = 1,
    ):
        self.device = resolve_device(device)
        self.objective = objective.to(self.device)
        self.params = list(objective.parameters())
        self.optimizer = torch.optim.Adam(self.params, lr=lr, eps=adam_eps)
        self.max_grad_norm = max_grad_norm
        self.publish_every = publish_every
        self.version = 0

    # -- updates -------------------------------------------------------------------------------------------
    def update(self, batch: Batch) -> dict[str, float]:
        """One optimizer step on ``batch``; returns its metrics."""
        return {k: float(v) for k, v in self._step(batch).items()}

    def update_many(self, batches: list[Batch]) -> LearnerStats:
        """One step per batch; metrics are averaged and synced to the host once, at the end."""
        start = time.perf_counter()
        before = self.version
        sums: dict[str, torch.Tensor] = {}
        for batch in batches:
            for key, value in self._step(batch).items():
                sums[key] = sums[key] + value if key in sums else value
        metrics = {k: float(v) / max(1, len(batches)) for k, v in sums.items()}
        published = self.version // self.publish_every > before // self.publish_every
        return LearnerStats(
            updates=len(batches),
            samples=sum(len(b) for b in batches),
            version=self.version,
            metrics=metrics,
            seconds=time.perf_counter() - start,
            published=published,
        )

    def _step(self, batch: Batch) -> dict[str, torch.Tensor]:
        out = self.objective.loss(self._to_device(batch))
        self.optimizer.zero_grad(set_to_none=True)
        out.loss.backward()
        metrics = {"loss": out.loss.detach(), "td_error": out.td_error.abs().mean(), "q": out.q_taken.mean()}
        if self.max_grad_norm is not None:
            metrics["grad_norm"] = torch.nn.utils.clip_grad_norm_(self.params, self.max_grad_norm)
        self.optimizer.step()
        self.version += 1
        self.objective.after_update(self.version)
        return metrics

    def _to_device(self, batch: Batch) -> TensorBatch:
        with warnings.catch_warnings():
            # Batches arriving through Ray are read-only views of the object store; the learner never writes them.
            warnings.filterwarnings("ignore", message="The given NumPy array is not writable")

            def tensor(a: np.ndarray) -> torch.Tensor:
                return torch.from_numpy(a).to(self.device, non_blocking=True)

            return TensorBatch(
                obs=tensor(batch.obs),
                actions=tensor(batch.actions),
                rewards=tensor(batch.rewards),
                discounts=tensor(batch.discounts),
                next_obs=tensor(batch.next_obs),
                weights=tensor(batch.weights) if batch.weights is not None else None,
            )

    # -- weights and state ---------------------------------------------------------------------------------
    def get_weights(self) -> Weights:
        """Inference weights as CPU numpy arrays, tagged with the current version."""
        state = self.objective.policy_module().state_dict()
        return Weights(self.version, {k: v.detach().cpu().numpy().copy() for k, v in state.items()})

    def state_dict(self) -> dict[str, Any]:
        """Everything to resume training: modules, optimizer, version (CPU tensors)."""
        modules = {name: _cpu(m.state_dict()) for name, m in self.objective.modules().items()}
        return {"version": self.version, "modules": modules, "optimizer": _cpu(self.optimizer.state_dict())}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        for name, module in self.objective.modules().items():
            module.load_state_dict(state["modules"][name])
        self.optimizer.load_state_dict(state["optimizer"])
        self.version = int(state["version"])


def _cpu(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return value.detach().cpu()
    if isinstance(value, dict):
        return {k: _cpu(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_cpu(v) for v in value]
    return value

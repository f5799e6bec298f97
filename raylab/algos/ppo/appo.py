"""The APPO objective: PPO's clipped surrogate on chunks acted by older policies, corrected with V-trace (no
Ray, no optimizer: the Learner runs every step).

Each chunk carries the behaviour policy's log-probabilities. A call drops the chunks acted more than
``max_policy_lag`` versions ago (and counts them), computes V-trace targets per chunk with the current
weights, then runs the clipped surrogate on the ratio pi / mu with the V-trace advantages
``r + gamma v_{s+1} - V(x_s)`` and regresses V on ``v_s`` (Sample Factory's APPO objective), for
``epochs x minibatches`` steps.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from raylab.algos.objective import DeviceIO, Plan, StepInput
from raylab.algos.ppo.objective import ClippedObjective, join_chunks, round_values
from raylab.algos.returns import vtrace
from raylab.config import APPOConfig
from raylab.models.factory import ActorCritic
from raylab.types import Chunk


class APPO(ClippedObjective):
    def __init__(self, model: ActorCritic, cfg: APPOConfig, seed: int = 0):
        super().__init__(model, cfg, seed, value_clip=None, normalize_advantages=True)
        self.appo = cfg
        self.dropped_chunks = 0
        """Chunks dropped so far for being more than max_policy_lag versions old."""

    def plan(self, data: list[Chunk], version: int, io: DeviceIO) -> Plan:
        cfg = self.appo
        chunks = list(data)
        fresh = [c for c in chunks if version - c.policy_version <= cfg.max_policy_lag]
        self.dropped_chunks += len(chunks) - len(fresh)
        lags = [version - c.policy_version for c in chunks]
        metrics: dict[str, float] = {"dropped_chunks": float(self.dropped_chunks), "lag_mean": float(np.mean(lags))}
        if not fresh:
            return Plan(steps=(), prepare=StepInput, metrics=metrics, version_per_call=True)
        if any(c.log_probs is None for c in fresh):
            raise ValueError("APPO needs the behaviour policy's log-probabilities in every chunk")
        chunk = join_chunks(fresh)
        assert chunk.log_probs is not None
        self.update_obs_norm(chunk, io)
        r = round_values(self.model, chunk, io)
        targets = vtrace(
            chunk.log_probs, r.log_probs, chunk.rewards, r.values, r.next_values, r.terminated, r.truncated,
            cfg.gamma, rho_bar=cfg.rho_bar, c_bar=cfg.c_bar,
        )  # fmt: skip
        metrics["rho_mean"] = float(targets.rhos.mean())
        return self._minibatch_plan(r, chunk.log_probs, targets.advantages, targets.vs, io, metrics)

    def state_dict(self) -> dict[str, Any]:
        return {"dropped_chunks": self.dropped_chunks}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.dropped_chunks = int(state.get("dropped_chunks", 0))

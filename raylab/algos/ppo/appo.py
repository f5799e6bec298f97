"""APPOLearner: PPO's clipped surrogate on chunks acted by older policies, corrected with V-trace (no Ray).

Each chunk carries the behaviour policy's log-probabilities. A call drops the chunks acted more than
``max_policy_lag`` updates ago (and counts them), computes V-trace targets per chunk with the current
weights, then runs the clipped surrogate on the ratio pi / mu with the V-trace advantages
``r + gamma v_{s+1} - V(x_s)`` and regresses V on ``v_s`` (Sample Factory's APPO objective).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import torch

from raylab.algos.ppo.learner import ActorCriticLearner, join_chunks
from raylab.algos.ppo.loss import PPOLoss, ppo_loss
from raylab.algos.returns import vtrace
from raylab.config import APPOConfig
from raylab.models.factory import ActorCritic
from raylab.types import Chunk, LearnerStats


class APPOLearner(ActorCriticLearner):
    def __init__(self, model: ActorCritic, cfg: APPOConfig, **kwargs: Any):
        super().__init__(model, **kwargs)
        self.cfg = cfg
        self.dropped_chunks = 0
        """Chunks dropped so far for being more than max_policy_lag updates old."""

    def _update(self, chunks: list[Chunk]) -> LearnerStats:
        start = time.perf_counter()
        cfg = self.cfg
        fresh = [c for c in chunks if self.version - c.policy_version <= cfg.max_policy_lag]
        self.dropped_chunks += len(chunks) - len(fresh)
        lags = [self.version - c.policy_version for c in chunks]
        metrics: dict[str, float] = {"dropped_chunks": float(self.dropped_chunks), "lag_mean": float(np.mean(lags))}
        if not fresh:
            return LearnerStats(0, 0, self.version, metrics, time.perf_counter() - start, published=False)
        if any(c.log_probs is None for c in fresh):
            raise ValueError("APPO needs the behaviour policy's log-probabilities in every chunk")
        chunk = join_chunks(fresh)
        assert chunk.log_probs is not None
        r = self._round_values(chunk)
        targets = vtrace(
            chunk.log_probs, r.log_probs, chunk.rewards, r.values, r.next_values, r.terminated, r.truncated,
            cfg.gamma, rho_bar=cfg.rho_bar, c_bar=cfg.c_bar,
        )  # fmt: skip
        keep = r.keep
        data = {
            "obs": r.flat_obs[keep],
            "actions": r.actions[keep],
            "behaviour": self._tensor(chunk.log_probs.reshape(-1)[keep]),
            "values": self._tensor(r.values.reshape(-1)[keep]),
            "advantages": self._tensor(targets.advantages.reshape(-1)[keep]),
            "vs": self._tensor(targets.vs.reshape(-1)[keep]),
        }

        def loss(mb: dict[str, torch.Tensor]) -> PPOLoss:
            logits, values = self.model(mb["obs"])
            return ppo_loss(
                logits, values, mb["actions"], mb["behaviour"], mb["values"], mb["advantages"], mb["vs"],
                clip=cfg.clip, value_clip=None, value_coef=cfg.value_coef, entropy_coef=cfg.entropy_coef,
            )  # fmt: skip

        updates, epoch_metrics = self._epochs(data, cfg.epochs, cfg.minibatches, loss)
        self.version += 1
        metrics.update(epoch_metrics)
        metrics["rho_mean"] = float(targets.rhos.mean())
        return LearnerStats(
            updates=updates,
            samples=len(keep) * cfg.epochs,
            version=self.version,
            metrics=metrics,
            seconds=time.perf_counter() - start,
            published=True,
        )

    def state_dict(self) -> dict[str, Any]:
        return {**super().state_dict(), "dropped_chunks": self.dropped_chunks}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        super().load_state_dict(state)
        self.dropped_chunks = int(state.get("dropped_chunks", 0))

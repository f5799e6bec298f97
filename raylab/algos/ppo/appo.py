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

from raylab.algos.a3c.worker import bootstrap_before_crashes
from raylab.algos.ppo.learner import join_chunks
from raylab.algos.ppo.loss import ppo_loss
from raylab.algos.returns import vtrace
from raylab.config import APPOConfig
from raylab.learner.learner import resolve_device
from raylab.models.factory import ActorCritic
from raylab.params.flat import readonly_tensor
from raylab.types import Chunk, LearnerStats, Weights


class APPOLearner:
    def __init__(
        self,
        model: ActorCritic,
        cfg: APPOConfig,
        *,
        lr: float,
        adam_eps: float,
        max_grad_norm: float | None,
        device: str = "auto",
        seed: int = 0,
    ):
        self.device = resolve_device(device)
        self.model = model.to(self.device)
        self.cfg = cfg
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=lr, eps=adam_eps)
        self.max_grad_norm = max_grad_norm
        self.generator = np.random.default_rng(seed)
        self.version = 0
        self.dropped_chunks = 0
        """Chunks dropped so far for being more than max_policy_lag updates old."""

    def _tensor(self, array: np.ndarray) -> torch.Tensor:
        return readonly_tensor(array).to(self.device)

    def update(self, chunks: list[Chunk]) -> LearnerStats:
        start = time.perf_counter()
        cfg = self.cfg
        fresh = [c for c in chunks if self.version - c.policy_version <= cfg.max_policy_lag]
        dropped = len(chunks) - len(fresh)
        self.dropped_chunks += dropped
        lags = [self.version - c.policy_version for c in chunks]
        metrics: dict[str, float] = {"dropped_chunks": float(self.dropped_chunks), "lag_mean": float(np.mean(lags))}
        if not fresh:
            return LearnerStats(0, 0, self.version, metrics, time.perf_counter() - start, published=False)
        if any(c.log_probs is None for c in fresh):
            raise ValueError("APPO needs the behaviour policy's log-probabilities in every chunk")
        chunk = join_chunks(fresh)
        steps, envs = chunk.num_steps, chunk.num_envs
        obs = self._tensor(chunk.obs)
        flat_obs = obs.reshape(-1, *obs.shape[2:])
        actions = self._tensor(chunk.actions.reshape(-1))
        assert chunk.log_probs is not None
        behaviour = chunk.log_probs
        with torch.no_grad():
            logits, values_all = self.model(flat_obs)
            target = torch.log_softmax(logits[: steps * envs], -1).gather(1, actions.long()[:, None])[:, 0]
            final_values = (
                self.model(self._tensor(chunk.final_obs))[1].cpu().numpy()
                if len(chunk.final_obs)
                else np.zeros(0, np.float32)
            )
        values_np = values_all.reshape(steps + 1, envs).cpu().numpy()
        values, next_values = values_np[:steps].copy(), values_np[1:].copy()
        terminated, truncated = chunk.terminated.copy(), chunk.truncated.copy()
        for (t, e), v in zip(chunk.final_index, final_values, strict=True):
            next_values[t, e] = v
        valid = np.ones((steps, envs), bool) if chunk.restarted is None else ~chunk.restarted
        if not valid.all():
            bootstrap_before_crashes(valid, terminated, truncated, next_values, values)
        targets = vtrace(
            behaviour, target.cpu().numpy().reshape(steps, envs), chunk.rewards, values, next_values,
            terminated, truncated, cfg.gamma, rho_bar=cfg.rho_bar, c_bar=cfg.c_bar,
        )  # fmt: skip
        keep = np.flatnonzero(valid.reshape(-1))
        data = {
            "obs": flat_obs[: steps * envs][keep],
            "actions": actions[keep],
            "behaviour": self._tensor(behaviour.reshape(-1)[keep]),
            "values": self._tensor(values.reshape(-1)[keep]),
            "advantages": self._tensor(targets.advantages.reshape(-1)[keep]),
            "vs": self._tensor(targets.vs.reshape(-1)[keep]),
        }
        samples = len(keep)
        size = max(1, samples // cfg.minibatches)
        sums: dict[str, float] = {}
        updates = 0
        for _ in range(cfg.epochs):
            order = torch.from_numpy(self.generator.permutation(samples)).to(self.device)
            for k in range(cfg.minibatches):
                idx = order[k * size : (k + 1) * size] if k < cfg.minibatches - 1 else order[k * size :]
                mb = {name: value[idx] for name, value in data.items()}
                mb_logits, mb_values = self.model(mb["obs"])
                out = ppo_loss(
                    mb_logits, mb_values, mb["actions"], mb["behaviour"], mb["values"], mb["advantages"], mb["vs"],
                    clip=cfg.clip, value_clip=None, value_coef=cfg.value_coef, entropy_coef=cfg.entropy_coef,
                )  # fmt: skip
                self.optimizer.zero_grad(set_to_none=True)
                out.loss.backward()
                grad_norm = (
                    float(torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.max_grad_norm))
                    if self.max_grad_norm is not None
                    else 0.0
                )
                self.optimizer.step()
                updates += 1
                row = {
                    "loss": out.loss.item(),
                    "policy_loss": out.policy_loss.item(),
                    "value_loss": out.value_loss.item(),
                    "entropy": out.entropy.item(),
                    "clip_fraction": out.clip_fraction.item(),
                    "grad_norm": grad_norm,
                }
                for key, value in row.items():
                    sums[key] = sums.get(key, 0.0) + value
        self.version += 1
        metrics.update({k: v / updates for k, v in sums.items()})
        metrics["rho_mean"] = float(targets.rhos.mean())
        return LearnerStats(
            updates=updates,
            samples=samples * cfg.epochs,
            version=self.version,
            metrics=metrics,
            seconds=time.perf_counter() - start,
            published=True,
        )

    def get_weights(self) -> Weights:
        state = self.model.state_dict()
        return Weights(self.version, {k: v.detach().cpu().numpy().copy() for k, v in state.items()})

    def state_dict(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "dropped_chunks": self.dropped_chunks,
            "modules": {"model": {k: v.detach().cpu() for k, v in self.model.state_dict().items()}},
            "optimizer": self.optimizer.state_dict(),
        }

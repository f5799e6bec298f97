"""PPOLearner: a round of rollouts in, minibatch epochs of the clipped objective, new weights out (no Ray).

The rollouts of a synchronous round were all collected with the learner's current weights, so the old
log-probabilities and values are computed here, once per round, instead of travelling with every chunk.
Chunks of several workers are joined along the env axis; GAE runs per env over the time axis, bootstrapping
from the real last observation of truncated episodes and from V(obs_T) at the end of the round.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from raylab.algos.a3c.worker import bootstrap_before_crashes
from raylab.algos.ppo.loss import PPOLoss, ppo_loss
from raylab.algos.returns import gae
from raylab.config import PPOConfig
from raylab.learner.learner import resolve_device
from raylab.metrics.timing import GapTimer
from raylab.models.factory import ActorCritic
from raylab.params.flat import readonly_tensor
from raylab.types import Chunk, LearnerStats, Weights


def join_chunks(chunks: list[Chunk]) -> Chunk:
    """Chunks of equal length from several workers as one chunk with all their envs side by side."""
    if len(chunks) == 1:
        return chunks[0]
    lengths = {c.num_steps for c in chunks}
    if len(lengths) != 1:
        raise ValueError(f"chunks of one round must have the same length, got {sorted(lengths)}")
    offsets = np.cumsum([0] + [c.num_envs for c in chunks[:-1]])
    final_index = [c.final_index + np.array([0, off]) for c, off in zip(chunks, offsets, strict=True)]
    restarted = None
    if any(c.restarted is not None for c in chunks):
        restarted = np.concatenate(
            [c.restarted if c.restarted is not None else np.zeros(c.actions.shape, bool) for c in chunks], axis=1
        )
    return Chunk(
        obs=np.concatenate([c.obs for c in chunks], axis=1),
        actions=np.concatenate([c.actions for c in chunks], axis=1),
        rewards=np.concatenate([c.rewards for c in chunks], axis=1),
        terminated=np.concatenate([c.terminated for c in chunks], axis=1),
        truncated=np.concatenate([c.truncated for c in chunks], axis=1),
        final_obs=np.concatenate([c.final_obs for c in chunks]),
        final_index=np.concatenate(final_index).reshape(-1, 2),
        policy_version=min(c.policy_version for c in chunks),
        worker_id=-1,
        seq=-1,
        restarted=restarted,
        log_probs=None
        if any(c.log_probs is None for c in chunks)
        else np.concatenate([c.log_probs for c in chunks if c.log_probs is not None], axis=1),
    )


@dataclass
class RoundValues:
    """A joined chunk seen through the current weights, once, without gradients."""

    flat_obs: torch.Tensor
    """obs[:T] flattened to [T * E, ...] (on the learner's device)."""
    actions: torch.Tensor
    log_probs: np.ndarray
    """[T, E] log-probabilities of the actions taken, under the current weights."""
    values: np.ndarray
    """[T, E] V(obs_t)."""
    next_values: np.ndarray
    """[T, E] value of what followed each step: V(obs_{t+1}), V(final obs) where the episode was truncated."""
    terminated: np.ndarray
    truncated: np.ndarray
    """Truncation flags, plus the steps before a crash (they bootstrap from the crash state)."""
    keep: np.ndarray
    """Flat indices of the steps with a real outcome (crashed steps left out)."""


class ActorCriticLearner:
    """What PPO's and APPO's learners share: Adam on an actor-critic, the batched value pass over a round,
    minibatch epochs of the clipped objective, versioned weights. Subclasses choose the targets."""

    def __init__(
        self,
        model: ActorCritic,
        *,
        lr: float,
        adam_eps: float,
        max_grad_norm: float | None,
        device: str = "auto",
        seed: int = 0,
    ):
        self.device = resolve_device(device)
        self.model = model.to(self.device)
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=lr, eps=adam_eps)
        self.max_grad_norm = max_grad_norm
        self.generator = np.random.default_rng(seed)
        self.version = 0
        self._gap = GapTimer()

    def update(self, chunks: list[Chunk]) -> LearnerStats:
        """One update on a round of rollouts; its timings hold ``wait_s``, the time since the previous
        update returned (waiting for the round's rollouts, in the synchronous topology)."""
        waited = self._gap.begin()
        stats = self._update(chunks)
        stats.timings = {**(stats.timings or {}), "wait_s": waited}
        self._gap.end()
        return stats

    def _update(self, chunks: list[Chunk]) -> LearnerStats:
        raise NotImplementedError

    def _tensor(self, array: np.ndarray) -> torch.Tensor:
        return readonly_tensor(array).to(self.device)

    def _round_values(self, chunk: Chunk) -> RoundValues:
        steps, envs = chunk.num_steps, chunk.num_envs
        obs = self._tensor(chunk.obs)
        flat_obs = obs.reshape(-1, *obs.shape[2:])
        actions = self._tensor(chunk.actions.reshape(-1))
        with torch.no_grad():
            logits, values_all = self.model(flat_obs)
            log_probs = torch.log_softmax(logits[: steps * envs], -1).gather(1, actions.long()[:, None])[:, 0]
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
        return RoundValues(
            flat_obs=flat_obs[: steps * envs],
            actions=actions,
            log_probs=log_probs.cpu().numpy().reshape(steps, envs),
            values=values,
            next_values=next_values,
            terminated=terminated,
            truncated=truncated,
            keep=np.flatnonzero(valid.reshape(-1)),
        )

    def _epochs(
        self, data: dict[str, torch.Tensor], epochs: int, minibatches: int, loss: Callable[[dict], PPOLoss]
    ) -> tuple[int, dict[str, float]]:
        """``epochs`` shuffled passes of ``minibatches`` optimizer steps; returns (steps, mean metrics)."""
        samples = len(next(iter(data.values())))
        size = max(1, samples // minibatches)
        sums: dict[str, float] = {}
        updates = 0
        for _ in range(epochs):
            order = torch.from_numpy(self.generator.permutation(samples)).to(self.device)
            for k in range(minibatches):
                idx = order[k * size : (k + 1) * size] if k < minibatches - 1 else order[k * size :]
                out = loss({name: value[idx] for name, value in data.items()})
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
                    "approx_kl": out.approx_kl.item(),
                    "clip_fraction": out.clip_fraction.item(),
                    "grad_norm": grad_norm,
                }
                for key, value in row.items():
                    sums[key] = sums.get(key, 0.0) + value
        return updates, {k: v / updates for k, v in sums.items()}

    def get_weights(self) -> Weights:
        state = self.model.state_dict()
        return Weights(self.version, {k: v.detach().cpu().numpy().copy() for k, v in state.items()})

    def state_dict(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "modules": {"model": {k: v.detach().cpu() for k, v in self.model.state_dict().items()}},
            "optimizer": self.optimizer.state_dict(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Resume from ``state_dict()``."""
        self.model.load_state_dict(state["modules"]["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.version = int(state["version"])


class PPOLearner(ActorCriticLearner):
    def __init__(self, model: ActorCritic, cfg: PPOConfig, **kwargs: Any):
        super().__init__(model, **kwargs)
        self.cfg = cfg

    def _update(self, chunks: list[Chunk]) -> LearnerStats:
        """One PPO update on a round of rollouts; the new weights are always published (version + 1)."""
        start = time.perf_counter()
        cfg = self.cfg
        chunk = join_chunks(chunks)
        r = self._round_values(chunk)
        advantages, returns = gae(
            chunk.rewards, r.values, r.next_values, r.terminated, r.truncated, cfg.gamma, cfg.gae_lambda
        )
        keep = r.keep
        data = {
            "obs": r.flat_obs[keep],
            "actions": r.actions[keep],
            "old_log_probs": self._tensor(r.log_probs.reshape(-1)[keep]),
            "old_values": self._tensor(r.values.reshape(-1)[keep]),
            "advantages": self._tensor(advantages.reshape(-1)[keep]),
            "returns": self._tensor(returns.reshape(-1)[keep]),
        }

        def loss(mb: dict[str, torch.Tensor]) -> PPOLoss:
            logits, values = self.model(mb["obs"])
            return ppo_loss(
                logits, values, mb["actions"], mb["old_log_probs"], mb["old_values"], mb["advantages"],
                mb["returns"], clip=cfg.clip, value_clip=cfg.value_clip, value_coef=cfg.value_coef,
                entropy_coef=cfg.entropy_coef, normalize_advantages=cfg.normalize_advantages,
            )  # fmt: skip

        updates, metrics = self._epochs(data, cfg.epochs, cfg.minibatches, loss)
        self.version += 1
        metrics["explained_variance"] = 1.0 - float(np.var(returns - r.values)) / max(float(np.var(returns)), 1e-8)
        return LearnerStats(
            updates=updates,
            samples=len(keep) * cfg.epochs,
            version=self.version,
            metrics=metrics,
            seconds=time.perf_counter() - start,
            published=True,
        )

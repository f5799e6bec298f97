"""The APPO objective: PPO's clipped surrogate on chunks acted by older policies, corrected with V-trace (no
Ray, no optimizer, no data path: the Learner runs every step).

Each chunk carries the behaviour policy's log-probabilities. A call drops the chunks acted more than
``max_policy_lag`` versions ago (and counts them); the Learner joins the rest into a round, whose V-trace
targets come from the current weights; then the clipped surrogate on the ratio pi / mu with the V-trace
advantages ``r + gamma q_s - V(x_s)``, regressing V on ``v_s`` (Sample Factory's APPO objective), for
``epochs x minibatches`` steps. ``q_s = lam v_{s+1} + (1 - lam) V(x_{s+1})``: ``lam`` < 1 is V-trace's lambda,
whose targets and advantages are GAE(lam)'s on-policy; at 1, q_s = v_{s+1}.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from raylab.algos.advantages import vtrace
from raylab.algos.objective import Round, Targets
from raylab.algos.ppo.objective import ClippedObjective, round_values
from raylab.models.factory import ActorCritic
from raylab.types import Chunk


class APPO(ClippedObjective):
    def __init__(
        self,
        model: ActorCritic,
        *,
        gamma: float,
        max_policy_lag: int,
        rho_bar: float = 1.0,
        c_bar: float = 1.0,
        lam: float = 1.0,
        **clipped: Any,
    ):
        super().__init__(model, value_clip=None, normalize_advantages=True, **clipped)
        self.gamma = gamma
        self.max_policy_lag = max_policy_lag
        self.rho_bar = rho_bar
        self.c_bar = c_bar
        self.lam = lam
        self.dropped_chunks = 0
        """Chunks dropped so far for being more than max_policy_lag versions old."""

    def accept(self, chunks: Sequence[Chunk], version: int) -> tuple[list[Chunk], dict[str, float]]:
        """The chunks at most ``max_policy_lag`` versions old; the ones dropped are counted."""
        fresh = [c for c in chunks if version - c.policy_version <= self.max_policy_lag]
        self.dropped_chunks += len(chunks) - len(fresh)
        lags = [version - c.policy_version for c in chunks]
        if any(c.log_probs is None for c in fresh):
            raise ValueError("APPO needs the behaviour policy's log-probabilities in every chunk")
        return fresh, {"dropped_chunks": float(self.dropped_chunks), "lag_mean": float(np.mean(lags))}

    def targets(self, r: Round) -> Targets:
        assert r.log_probs is not None
        self.update_obs_norm(r)
        v = round_values(self.model, r)
        targets = vtrace(
            r.log_probs, v.log_probs, r.rewards, v.values, v.next_values, v.terminated, v.truncated, self.gamma,
            rho_bar=self.rho_bar, c_bar=self.c_bar, lam=self.lam,
        )  # fmt: skip
        return self._targets(v, r.log_probs, targets.advantages, targets.vs, {"rho_mean": targets.rhos.mean()})

    def state_dict(self) -> dict[str, Any]:
        return {"dropped_chunks": self.dropped_chunks}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.dropped_chunks = int(state.get("dropped_chunks", 0))

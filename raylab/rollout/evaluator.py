"""Greedy evaluation of a policy version on its own envs (seeded apart from the training envs)."""

from __future__ import annotations

import numpy as np

from raylab.envs.vector import VectorEnv
from raylab.rollout.worker import Policy
from raylab.types import EvalResult, Weights


class Evaluator:
    """Runs exactly ``episodes`` fresh episodes, spread evenly over its envs.

    Each env gets a quota of episodes fixed up front, so short episodes are not over-counted (collecting
    the first N episodes to finish would bias the mean towards failures).
    """

    def __init__(self, env: VectorEnv, policy: Policy):
        self.env = env
        self.policy = policy

    def evaluate(
        self, weights: Weights | None, episodes: int, confirm_target: float | None = None, confirm_episodes: int = 0
    ) -> EvalResult:
        """Mean over ``episodes``; if that reaches ``confirm_target``, ``confirm_episodes`` more of the same
        weights are run and the result holds all of them, so a lucky handful of episodes cannot stop a run."""
        if weights is not None:
            self.policy.set_weights(weights)
        returns, lengths = self._episodes(episodes)
        if confirm_target is not None and confirm_episodes > 0 and returns.mean() >= confirm_target:
            more_returns, more_lengths = self._episodes(confirm_episodes)
            returns, lengths = np.concatenate([returns, more_returns]), np.concatenate([lengths, more_lengths])
        return EvalResult(self.policy.version, returns, lengths)

    def _episodes(self, episodes: int) -> tuple[np.ndarray, np.ndarray]:
        num_envs = self.env.num_envs
        quota = np.full(num_envs, episodes // num_envs)
        quota[: episodes % num_envs] += 1
        returns: list[float] = []
        lengths: list[int] = []
        obs = self.env.reset()
        while quota.any():
            step = self.env.step(self.policy.act(obs))
            obs = step.obs
            for i, stats in step.episodes:  # raw game returns (before reward clipping/scaling)
                if quota[i] > 0:
                    quota[i] -= 1
                    returns.append(float(stats["return"]))
                    lengths.append(int(stats["length"]))
        return np.array(returns), np.array(lengths)

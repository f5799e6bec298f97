"""The learners and learner inputs the learner tests train: one factory each, seeded, the same every call.

- ``replay_batch``: a DQN replay batch (vector or uint8 observations, optional importance weights and terminals);
- ``rollout_chunk`` / ``rollout_rounds``: a rollout worker's chunk for PPO/APPO (discrete or Gaussian actions,
  vector or uint8 observations, behaviour log-probabilities a set spread from the policy's);
- ``dqn_learner`` and ``actor_critic_learner``: a Learner over a small network from torch seed 0.

Each test module names its own sizes and spreads; the draw order is fixed here, so data depends on the
arguments alone.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from raylab.builders.algorithms import build_appo, build_dqn, build_ppo
from raylab.config import APPOConfig, DQNConfig, ModelConfig, PPOConfig
from raylab.learner import Learner
from raylab.models import build_q_network
from raylab.models.distributions import DiagGaussian
from raylab.models.encoders import MLPEncoder
from raylab.models.factory import ActorCritic
from raylab.models.normalize import RunningNorm
from raylab.types import Batch, Chunk, EnvSpaces


def discrete_spaces(obs: int, actions: int) -> EnvSpaces:
    """Float vector observations of ``obs`` values, ``actions`` discrete actions."""
    return EnvSpaces((obs,), np.dtype(np.float32), actions, f"Discrete({actions})")


def frame_spaces(shape: tuple[int, ...], actions: int) -> EnvSpaces:
    """uint8 frames of ``shape``, ``actions`` discrete actions."""
    return EnvSpaces(shape, np.dtype(np.uint8), actions, f"Discrete({actions})")


def _observations(rng: np.random.Generator, shape: tuple[int, ...], uint8: bool, loc: float, scale: float):
    if uint8:
        return rng.integers(0, 256, shape, dtype=np.uint8)
    return rng.normal(loc, scale, shape).astype(np.float32)


def replay_batch(
    spaces: EnvSpaces,
    n: int = 32,
    seed: int = 0,
    *,
    weights: bool = False,
    obs_scale: float = 1.0,
    reward_scale: float = 1.0,
    discount: float = 0.97,
    terminal_share: float = 0.0,
    first_index: int | None = None,
) -> Batch:
    """``n`` random transitions: observations N(0, obs_scale) (uniform bytes for uint8 spaces), rewards
    N(0, reward_scale), ``discount`` or 0 for a ``terminal_share`` of them, replay indices from ``first_index``
    (1000 x seed unless given), and importance weights in [0.2, 1) with ``weights``."""
    rng = np.random.default_rng(seed)
    uint8 = spaces.obs_dtype == np.uint8
    obs, next_obs = (_observations(rng, (n, *spaces.obs_shape), uint8, 0.0, obs_scale) for _ in range(2))
    actions = rng.integers(0, spaces.num_actions, n)
    rewards = rng.normal(0, reward_scale, n).astype(np.float32)
    discounts = np.where(rng.random(n) < terminal_share, 0.0, discount).astype(np.float32)
    first = 1000 * seed if first_index is None else first_index
    return Batch(
        obs=obs, actions=actions, rewards=rewards, discounts=discounts, next_obs=next_obs,
        indices=np.arange(n) + first, weights=rng.uniform(0.2, 1.0, n).astype(np.float32) if weights else None,
    )  # fmt: skip


def rollout_chunk(
    seed: int,
    version: int = 0,
    *,
    obs_shape: tuple[int, ...] = (6,),
    steps: int = 16,
    envs: int = 8,
    actions: int = 4,
    gaussian_dim: int = 0,
    frames: bool = False,
    obs_loc: float = 0.0,
    obs_scale: float = 1.0,
    reward_scale: float = 1.0,
    spread: float = 0.1,
    outliers: bool = False,
) -> Chunk:
    """A worker's chunk of ``steps`` x ``envs`` random steps, about 5 % terminated and 5 % truncated.

    Observations N(obs_loc, obs_scale) of ``obs_shape`` (uint8 bytes with ``frames``), with ``outliers`` one
    value at 400 (far enough out that model.normalize_obs clips it); ``actions`` discrete actions, or Gaussian ones
    of ``gaussian_dim`` dimensions; behaviour log-probabilities ``spread`` (standard deviations) from a uniform
    or unit-Gaussian policy's, so that ratios leave the clip range when it is large."""
    rng = np.random.default_rng(seed)
    obs = _observations(rng, (steps + 1, envs, *obs_shape), frames, obs_loc, obs_scale)
    if outliers:
        obs[rng.integers(0, steps), rng.integers(0, envs), 0] = 400.0  # ~12 standard deviations out
    terminated = rng.random((steps, envs)) < 0.05
    truncated = (rng.random((steps, envs)) < 0.05) & ~terminated
    final_index = np.argwhere(truncated)
    action_values: np.ndarray
    if gaussian_dim:
        action_values = rng.normal(0, 1, (steps, envs, gaussian_dim)).astype(np.float32)
        base = -gaussian_dim * (0.5 + 0.5 * np.log(2 * np.pi))
    else:
        action_values = rng.integers(0, actions, (steps, envs))
        base = float(np.log(1 / actions))
    return Chunk(
        obs=obs, actions=action_values,
        rewards=rng.normal(0, reward_scale, (steps, envs)).astype(np.float32), terminated=terminated,
        truncated=truncated, final_obs=obs[1 : 1 + len(final_index), 0].reshape(-1, *obs_shape).copy(),
        final_index=final_index, policy_version=version, worker_id=0, seq=seed,
        log_probs=(base + spread * rng.standard_normal((steps, envs))).astype(np.float32),
    )  # fmt: skip


def rollout_rounds(calls: int, workers: int = 2, lag: int = 1, **chunk: Any) -> list[list[Chunk]]:
    """``workers`` chunks per learner call; call c's are of policy version max(c - lag, 0)."""
    return [[rollout_chunk(workers * c + k, max(c - lag, 0), **chunk) for k in range(workers)] for c in range(calls)]


def dqn_learner(
    spaces: EnvSpaces,
    *,
    hidden: tuple[int, ...] = (32, 32),
    model: ModelConfig | None = None,
    algo: DQNConfig | None = None,
    lr: float = 1e-3,
    device: str = "cpu",
    **opts: Any,
) -> Learner:
    """A DQN (or, with ``algo.loss="quantile"``, QR-DQN) learner over an MLP of ``hidden`` (or ``model``)."""
    torch.manual_seed(0)
    algo = algo or DQNConfig()
    atoms = algo.num_quantiles if algo.loss == "quantile" else 1
    network = build_q_network(model or ModelConfig(hidden_sizes=hidden), spaces, atoms=atoms)
    return Learner(build_dqn(network, algo), lr=lr, device=device, **opts)


def actor_critic_learner(
    algo: str,
    obs_shape: tuple[int, ...],
    actions: int,
    *,
    hidden: tuple[int, ...] = (32, 32),
    gaussian_dim: int = 0,
    norm: bool = False,
    settings: dict[str, Any] | None = None,
    model: torch.nn.Module | None = None,
    lr: float = 1e-3,
    device: str = "cpu",
    **opts: Any,
) -> Learner:
    """A PPO or APPO (``algo``) learner over an MLP actor-critic of ``hidden`` (or ``model``), with a running
    observation norm with ``norm``; ``settings`` are the algorithm config's."""
    torch.manual_seed(0)
    if model is None:
        dist = DiagGaussian(gaussian_dim) if gaussian_dim else actions
        model = ActorCritic(MLPEncoder(obs_shape, hidden), dist, obs_norm=RunningNorm(obs_shape) if norm else None)
    settings = settings or {}
    objective = build_ppo(model, PPOConfig(**settings)) if algo == "ppo" else build_appo(model, APPOConfig(**settings))
    return Learner(objective, lr=lr, device=device, **opts)

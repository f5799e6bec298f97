"""The n-step advantage actor-critic loss (Mnih et al. 2016), shared by every topology that uses it."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from raylab.algos.advantages import bootstrap_before_crashes
from raylab.algos.returns import bootstrapped_returns
from raylab.models.factory import ActorCritic, RecurrentActorCritic
from raylab.types import Chunk


@dataclass
class ActorCriticLoss:
    loss: torch.Tensor
    """policy_loss + value_coef * value_loss - entropy_coef * entropy: what to differentiate."""
    policy_loss: torch.Tensor
    value_loss: torch.Tensor
    entropy: torch.Tensor


def actor_critic_loss(
    log_probs: torch.Tensor,
    entropies: torch.Tensor,
    values: torch.Tensor,
    returns: torch.Tensor,
    value_coef: float,
    entropy_coef: float,
    mask: torch.Tensor | None = None,
) -> ActorCriticLoss:
    """Policy gradient with advantage ``returns - V(s)`` (no gradient through the advantage), half squared
    value error, and the policy's entropy; all averaged over the (unmasked) steps.

    Shapes: all ``[N]``: the log-probabilities of the actions taken and the policy's entropies (from the
    action distribution, raylab/models/distributions.py), values, returns, mask. ``mask`` drops steps
    without a real outcome (an env crashed there).
    """
    advantages = (returns - values).detach()
    value_errors = 0.5 * (returns - values).pow(2)
    policy_terms = -log_probs * advantages
    if mask is None:
        policy_loss, value_loss, entropy = policy_terms.mean(), value_errors.mean(), entropies.mean()
    else:
        weight = mask.float() / mask.float().sum().clamp(min=1.0)
        policy_loss = (policy_terms * weight).sum()
        value_loss = (value_errors * weight).sum()
        entropy = (entropies * weight).sum()
    loss = policy_loss + value_coef * value_loss - entropy_coef * entropy
    return ActorCriticLoss(loss, policy_loss, value_loss, entropy)


def chunk_loss(
    model: ActorCritic, chunk: Chunk, gamma: float, value_coef: float, entropy_coef: float
) -> ActorCriticLoss:
    """A3C's loss on one segment (with gradients through ``model``): n-step returns bootstrapped from V(obs_T)
    at the segment's end and from V(last observation) where an episode was truncated, none past a terminal;
    steps where an env crashed leave the loss, the step before one bootstraps from the crash state."""
    steps, num_envs = chunk.num_steps, chunk.num_envs
    bootstrap = np.zeros((steps, num_envs), np.float32)
    if isinstance(model, RecurrentActorCritic):
        params, values = _recurrent_outputs(model, chunk, bootstrap)
    else:
        with torch.no_grad():
            _, tail_values = model(torch.from_numpy(np.concatenate([chunk.obs[steps], chunk.final_obs])))
        bootstrap[steps - 1] = tail_values[:num_envs].numpy()
        for k, (t, e) in enumerate(chunk.final_index):
            bootstrap[t, e] = float(tail_values[num_envs + k])
        obs = torch.from_numpy(chunk.obs[:steps])
        params, values = model(obs.reshape(steps * num_envs, *obs.shape[2:]))
    terminated, truncated = chunk.terminated, chunk.truncated
    valid = None if chunk.restarted is None or not chunk.restarted.any() else ~chunk.restarted
    if valid is not None:
        state_values = values.detach().reshape(steps, num_envs)
        fixed, fixed_bootstrap = bootstrap_before_crashes(valid, terminated, truncated, bootstrap, state_values)
        truncated, bootstrap = fixed.numpy(), fixed_bootstrap.numpy()
    returns = bootstrapped_returns(chunk.rewards, terminated, truncated, bootstrap, gamma)
    actions = torch.from_numpy(chunk.actions.reshape(steps * num_envs, *chunk.actions.shape[2:]))
    log_probs, entropies = model.dist.log_prob_and_entropy(params, actions)
    return actor_critic_loss(
        log_probs,
        entropies,
        values,
        torch.from_numpy(returns.reshape(-1)),
        value_coef,
        entropy_coef,
        mask=None if valid is None else torch.from_numpy(valid.reshape(-1)),
    )


def _recurrent_outputs(
    model: RecurrentActorCritic, chunk: Chunk, bootstrap: np.ndarray
) -> tuple[torch.Tensor, torch.Tensor]:
    """A recurrent model's distribution parameters and values over the segment ``[T * E]``, unrolled (with
    gradients) from the chunk's ``initial_state`` with the state zeroed after each episode's end; fills
    ``bootstrap`` from V(obs_T) and, for truncated episodes, V(final obs) from the state that saw its last step."""
    if chunk.initial_state is None:
        raise ValueError("a recurrent model trains on chunks that carry initial_state (acted by a recurrent policy)")
    steps, num_envs = chunk.num_steps, chunk.num_envs
    reset_before = np.zeros((steps + 1, num_envs), bool)
    reset_before[1:] = chunk.terminated | chunk.truncated
    params, values, _, after = model.unroll(
        torch.from_numpy(chunk.obs), torch.from_numpy(chunk.initial_state), torch.from_numpy(reset_before), keep=True
    )
    assert after is not None
    bootstrap[steps - 1] = values[steps * num_envs :].detach().numpy()
    if len(chunk.final_obs):
        t, e = torch.from_numpy(chunk.final_index[:, 0]), torch.from_numpy(chunk.final_index[:, 1])
        with torch.no_grad():
            _, final, _ = model.step(torch.from_numpy(chunk.final_obs), after[t, e].detach())
        bootstrap[chunk.final_index[:, 0], chunk.final_index[:, 1]] = final.numpy()
    return params[: steps * num_envs], values[: steps * num_envs]

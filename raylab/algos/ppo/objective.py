"""The PPO objective a Learner optimizes: a round's targets (one value pass, GAE) and the clipped objective, as
math on the learner's device (no Ray, no optimizer, no data path: the Learner joins the chunks into a Round,
draws the minibatches and runs every step).

The rollouts of a synchronous round were all collected with the learner's current weights, so the old
log-probabilities and values are computed here, once per round, instead of travelling with every chunk.
GAE runs per env over the time axis, bootstrapping from the real last observation of truncated episodes and
from V(obs_T) at the end of the round. APPO (raylab.algos.ppo.appo) shares the value pass, the minibatch rows
and the loss, with V-trace targets.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from raylab.algos.advantages import bootstrap_before_crashes, gae
from raylab.algos.objective import LossOutput, Round, Targets
from raylab.algos.ppo.loss import ppo_loss
from raylab.models.factory import ActorCritic, RecurrentActorCritic
from raylab.types import Chunk


@dataclass
class RoundValues:
    """A round seen through the current weights, once, without gradients (tensors on the learner's device)."""

    flat_obs: torch.Tensor
    """obs[:T] flattened to [T * E, ...]."""
    actions: torch.Tensor
    """[T * E, ...] the actions taken."""
    log_probs: torch.Tensor
    """[T, E] log-probabilities of the actions taken, under the current weights."""
    values: torch.Tensor
    """[T, E] V(obs_t)."""
    next_values: torch.Tensor
    """[T, E] value of what followed each step: V(obs_{t+1}), V(final obs) where the episode was truncated."""
    terminated: torch.Tensor
    truncated: torch.Tensor
    """Truncation flags, plus the steps before a crash (they bootstrap from the crash state)."""
    keep: torch.Tensor | None
    """Flat indices of the steps with a real outcome (crashed steps left out); None: every step."""
    sequences: Sequences | None = None
    """A recurrent model's round, which trains on whole sequences rather than on steps."""


@dataclass
class Sequences:
    """What a recurrent model's round adds: the steps in time-major order and the state each acted from."""

    obs: torch.Tensor
    """[T, E, ...] obs[:T] of the round."""
    states: torch.Tensor
    """[T, E, S] the state each step acted from (zeros at an episode's first step)."""
    reset_before: torch.Tensor
    """[T, E] the step starts an episode (after a step that ended one)."""
    valid: torch.Tensor
    """[T, E] the step has a real outcome (not a crashed env's)."""


def round_values(model: ActorCritic, r: Round) -> RoundValues:
    """One batched forward pass over a round (run under the learner's precision; outputs in fp32)."""
    if isinstance(model, RecurrentActorCritic):
        return _recurrent_round_values(model, r)
    steps, envs = r.num_steps, r.num_envs
    flat_obs = r.obs.reshape(-1, *r.obs.shape[2:])
    actions = r.actions.reshape(steps * envs, *r.actions.shape[2:])
    params, values_all = model(flat_obs)
    log_probs = model.dist.log_prob(params[: steps * envs].float(), actions)
    final_values = model(r.final_obs)[1].float() if len(r.final_obs) else values_all.new_zeros(0)
    return _round(r, flat_obs[: steps * envs], actions, log_probs, values_all, final_values)


def _round(
    r: Round,
    flat_obs: torch.Tensor,
    actions: torch.Tensor,
    log_probs: torch.Tensor,
    values_all: torch.Tensor,
    final_values: torch.Tensor,
    sequences: Sequences | None = None,
) -> RoundValues:
    """The round's values ``[T + 1, E]`` (and the final observations' values) as the targets' inputs: V(obs_t),
    the value of what followed each step, and the steps before a crash bootstrapping from the crash state."""
    steps, envs = r.num_steps, r.num_envs
    values_all = values_all.float().reshape(steps + 1, envs)
    values, next_values = values_all[:steps], values_all[1:].clone()
    if len(final_values):
        next_values[r.final_index[:, 0], r.final_index[:, 1]] = final_values.float()
    terminated, truncated, keep = r.terminated, r.truncated, None
    if r.crashed is not None:
        valid = torch.from_numpy(~r.crashed).to(values.device, non_blocking=True)
        truncated, next_values = bootstrap_before_crashes(valid, terminated, truncated, next_values, values)
        keep = torch.from_numpy((~r.crashed).reshape(-1).nonzero()[0]).to(values.device, non_blocking=True)
    return RoundValues(
        flat_obs=flat_obs, actions=actions, log_probs=log_probs.float().reshape(steps, envs), values=values,
        next_values=next_values, terminated=terminated, truncated=truncated, keep=keep, sequences=sequences,
    )  # fmt: skip


def _recurrent_round_values(model: RecurrentActorCritic, r: Round) -> RoundValues:
    """``round_values`` of a recurrent model: the round unrolled from each slot's ``initial_state``, the state
    zeroed after every step that ended an episode; a truncated episode's final observation is valued from the
    state that saw its last step."""
    if r.initial_state is None:
        raise ValueError("a recurrent model trains on chunks that carry initial_state (acted by a recurrent policy)")
    steps, envs = r.num_steps, r.num_envs
    ended = r.terminated | r.truncated  # a crash sets truncated too
    reset_before = torch.zeros((steps + 1, envs), dtype=torch.bool, device=ended.device)
    reset_before[1:] = ended
    actions = r.actions.reshape(steps * envs, *r.actions.shape[2:])
    state0 = r.initial_state.float()
    params, values_all, _, after = model.unroll(r.obs, state0, reset_before, keep=True)
    assert after is not None
    log_probs = model.dist.log_prob(params[: steps * envs].float(), actions)
    final_values = values_all.new_zeros(0)
    if len(r.final_obs):
        t, e = r.final_index[:, 0], r.final_index[:, 1]
        _, final, _ = model.step(r.final_obs, after[t, e].float())
        final_values = final.float()
    after = after.float()
    keep_rows = (~reset_before[1:steps]).unsqueeze(-1).to(after.dtype)
    states = torch.cat([state0.unsqueeze(0), after[: steps - 1] * keep_rows])
    valid = torch.ones((steps, envs), dtype=torch.bool, device=ended.device)
    if r.crashed is not None:
        valid = torch.from_numpy(~r.crashed).to(ended.device)
    flat_obs = r.obs[:steps].reshape(steps * envs, *r.obs.shape[2:])
    sequences = Sequences(r.obs[:steps], states, reset_before[:steps], valid)
    return _round(r, flat_obs, actions, log_probs, values_all, final_values, sequences)


def sequence_units(array: torch.Tensor, length: int) -> torch.Tensor:
    """``[T, E, ...]`` time-major -> ``[E * T / length, length, ...]``: each env's steps cut into sequences of
    ``length``, ordered by (segment, env)."""
    steps, envs = array.shape[:2]
    segments = steps // length
    units = array.reshape(segments, length, envs, *array.shape[2:]).transpose(1, 2)
    return units.reshape(segments * envs, length, *array.shape[2:])


def normalized(advantages: torch.Tensor, over: torch.Tensor | None = None) -> torch.Tensor:
    """``(A - mean) / (std + 1e-8)``, the statistics over the steps where the mask ``over`` is True (a recurrent
    model's real steps) or over all of them; unchanged with fewer than two. No host sync."""
    if over is None:
        if advantages.numel() < 2:
            return advantages
        return (advantages - advantages.mean()) / (advantages.std() + 1e-8)
    weight = over.to(advantages.dtype)
    count = weight.sum()
    mean = (advantages * weight).sum() / count.clamp(min=1.0)
    std = ((advantages - mean).square() * weight).sum().div((count - 1.0).clamp(min=1.0)).sqrt()
    return torch.where(count > 1, (advantages - mean) / (std + 1e-8), advantages)


class ClippedObjective:
    """What PPO and APPO share (a RoundObjective, raylab.algos.objective): an actor-critic, ``epochs x
    minibatches`` steps per round, and the loss: the clipped surrogate, the (clipped) value loss and the entropy
    bonus. Subclasses choose the targets."""

    def __init__(
        self,
        model: ActorCritic,
        *,
        epochs: int,
        minibatches: int,
        clip: float,
        value_clip: float | None,
        value_coef: float,
        entropy_coef: float,
        normalize_advantages: bool,
        bptt: int | None = None,
    ):
        self.model = model
        self.epochs = epochs
        self.minibatches = minibatches
        self.clip = clip
        self.value_clip = value_clip
        self.value_coef = value_coef
        self.entropy_coef = entropy_coef
        self.normalize_advantages = normalize_advantages
        self.bptt = bptt
        """A recurrent model's sequence length (None: the whole rollout)."""

    def modules(self) -> dict[str, nn.Module]:
        return {"model": self.model}

    def policy_module(self) -> nn.Module:
        return self.model

    def after_update(self, version: int) -> None:
        pass

    def state_dict(self) -> dict[str, Any]:
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        pass

    def accept(self, chunks: Sequence[Chunk], version: int) -> tuple[list[Chunk], dict[str, float]]:
        return list(chunks), {}

    def update_obs_norm(self, r: Round) -> None:
        """model.normalize_obs: merge the round's observations into the model's running statistics, before the
        round's value pass; they reach the actors inside the weights this call publishes."""
        norm = self.model.obs_norm
        if norm is not None:
            obs = r.obs[: r.num_steps]
            if obs.dtype == torch.uint8:  # what ActorCritic.forward normalizes: frames scaled to [0, 1] first
                obs = obs.float().div_(255.0)
            norm.update(obs.reshape(-1, *obs.shape[2:]))

    def finish_minibatch(self, mb: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """Advantages normalized over the minibatch (a recurrent model's: over its real steps)."""
        if self.normalize_advantages:
            mb = {**mb, "advantages": normalized(mb["advantages"], mb.get("valid"))}
        return mb

    def _targets(
        self,
        r: RoundValues,
        old_log_probs: torch.Tensor,
        advantages: torch.Tensor,
        returns: torch.Tensor,
        metrics: dict[str, float | torch.Tensor],
    ) -> Targets:
        """The round's rows: its steps (a recurrent model's sequences), crashed steps left out."""
        if r.sequences is not None:
            return self._sequence_targets(r, r.sequences, old_log_probs, advantages, returns, metrics)
        data = {
            "obs": r.flat_obs, "actions": r.actions, "old_log_probs": old_log_probs.reshape(-1),
            "old_values": r.values.reshape(-1), "advantages": advantages.reshape(-1), "returns": returns.reshape(-1),
        }  # fmt: skip
        return Targets(data, self.epochs, self.minibatches, rows=r.keep, metrics=metrics)

    def _sequence_targets(
        self,
        r: RoundValues,
        seq: Sequences,
        old_log_probs: torch.Tensor,
        advantages: torch.Tensor,
        returns: torch.Tensor,
        metrics: dict[str, float | torch.Tensor],
    ) -> Targets:
        """A recurrent model's round: each env's steps cut into sequences of ``bptt`` steps (the whole rollout
        when None), each from the state its first step acted from. Crashed steps stay in their sequences, masked
        out of the loss."""
        steps, envs = seq.valid.shape
        length = self.bptt or steps
        if steps % length:
            raise ValueError(f"algo.bptt={length} must divide the chunks' {steps} steps")
        reset_before = seq.reset_before.clone()
        reset_before[::length] = False  # a sequence's first state is already the reset one
        data = {
            "obs": sequence_units(seq.obs, length),
            "actions": sequence_units(r.actions.reshape(steps, envs, *r.actions.shape[1:]), length),
            "old_log_probs": sequence_units(old_log_probs, length),
            "old_values": sequence_units(r.values, length),
            "advantages": sequence_units(advantages, length),
            "returns": sequence_units(returns, length),
            "reset_before": sequence_units(reset_before, length),
            "valid": sequence_units(seq.valid, length),
            "state0": seq.states[::length].reshape(-1, seq.states.shape[-1]),
        }
        return Targets(data, self.epochs, self.minibatches, steps_per_row=length, metrics=metrics)

    def loss(self, mb: dict[str, torch.Tensor]) -> LossOutput:
        mask = None
        if isinstance(self.model, RecurrentActorCritic):  # sequences [U, L, ...], unrolled time-major
            time_major = {k: v.transpose(0, 1) for k, v in mb.items() if k != "state0"}
            params, values, _, _ = self.model.unroll(time_major["obs"], mb["state0"], time_major["reset_before"])
            mb = {k: v.reshape(-1, *v.shape[2:]) for k, v in time_major.items()}
            mask = mb["valid"]
        else:
            params, values = self.model(mb["obs"])
        log_probs, entropies = self.model.dist.log_prob_and_entropy(params.float(), mb["actions"])
        out = ppo_loss(
            log_probs, entropies, values.float(), mb["old_log_probs"], mb["old_values"], mb["advantages"],
            mb["returns"], clip=self.clip, value_clip=self.value_clip, value_coef=self.value_coef,
            entropy_coef=self.entropy_coef, normalize_advantages=False,  # normalized per minibatch already
            mask=mask,
        )  # fmt: skip
        metrics = {
            "policy_loss": out.policy_loss.detach(),
            "value_loss": out.value_loss.detach(),
            "entropy": out.entropy.detach(),
            "approx_kl": out.approx_kl,
            "clip_fraction": out.clip_fraction,
        }
        return LossOutput(out.loss, metrics)


class PPO(ClippedObjective):
    """PPO: a synchronous round's targets from one value pass and GAE."""

    def __init__(self, model: ActorCritic, *, gamma: float, gae_lambda: float, **clipped: Any):
        super().__init__(model, **clipped)
        self.gamma = gamma
        self.gae_lambda = gae_lambda

    def targets(self, r: Round) -> Targets:
        self.update_obs_norm(r)
        v = round_values(self.model, r)
        advantages, returns = gae(
            r.rewards, v.values, v.next_values, v.terminated, v.truncated, self.gamma, self.gae_lambda
        )
        explained = 1.0 - (returns - v.values).var(correction=0) / returns.var(correction=0).clamp(min=1e-8)
        return self._targets(v, v.log_probs, advantages, returns, {"explained_variance": explained})

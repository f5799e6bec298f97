"""The PPO objective a Learner optimizes: a round of rollouts in, GAE, ``epochs x minibatches`` steps of the
clipped objective (no Ray, no optimizer: the Learner runs every step).

The rollouts of a synchronous round were all collected with the learner's current weights, so the old
log-probabilities and values are computed here, once per round, instead of travelling with every chunk.
Chunks of several workers are joined along the env axis; GAE runs per env over the time axis, bootstrapping
from the real last observation of truncated episodes and from V(obs_T) at the end of the round.
APPO (raylab.algos.ppo.appo) shares the round pass, the minibatches and the loss, with V-trace targets.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from raylab.algos.objective import DeviceIO, LossOutput, Plan, StepInput
from raylab.algos.ppo.loss import ppo_loss
from raylab.algos.returns import bootstrap_before_crashes, gae
from raylab.config import APPOConfig, PPOConfig
from raylab.models.factory import ActorCritic, RecurrentActorCritic
from raylab.types import Chunk


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
        initial_state=_join_states(chunks),
    )


def _join_states(chunks: list[Chunk]) -> np.ndarray | None:
    states = [c.initial_state for c in chunks]
    if all(s is None for s in states):
        return None
    if any(s is None for s in states):
        raise ValueError("chunks of one round must all come from a recurrent policy, or none")
    return np.concatenate([s for s in states if s is not None])


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
    sequences: Sequences | None = None
    """A recurrent model's round, which trains on whole sequences rather than on steps."""


@dataclass
class Sequences:
    """What a recurrent model's round adds: the steps in time-major order and the state each acted from."""

    obs: torch.Tensor
    """[T, E, ...] obs[:T] of the round."""
    states: torch.Tensor
    """[T, E, S] the state each step acted from (zeros at an episode's first step)."""
    reset_before: np.ndarray
    """[T, E] the step starts an episode (after a step that ended one)."""
    valid: np.ndarray
    """[T, E] the step has a real outcome (not a crashed env's)."""


def round_values(model: ActorCritic, chunk: Chunk, io: DeviceIO) -> RoundValues:
    """One batched forward pass over a round (in the learner's precision, outputs in fp32)."""
    if isinstance(model, RecurrentActorCritic):
        return _recurrent_round_values(model, chunk, io)
    steps, envs = chunk.num_steps, chunk.num_envs
    obs = io.tensor(chunk.obs)
    flat_obs = obs.reshape(-1, *obs.shape[2:])
    actions = io.tensor(chunk.actions.reshape(steps * envs, *chunk.actions.shape[2:]))
    with torch.no_grad(), io.autocast():
        params, values_all = model(flat_obs)
        log_probs = model.dist.log_prob(params[: steps * envs].float(), actions)
        final_values = (
            model(io.tensor(chunk.final_obs))[1].float().cpu().numpy()
            if len(chunk.final_obs)
            else np.zeros(0, np.float32)
        )
    return _round(chunk, flat_obs[: steps * envs], actions, log_probs, values_all, final_values)


def _round(
    chunk: Chunk,
    flat_obs: torch.Tensor,
    actions: torch.Tensor,
    log_probs: torch.Tensor,
    values_all: torch.Tensor,
    final_values: np.ndarray,
    sequences: Sequences | None = None,
) -> RoundValues:
    """The round's values ``[T + 1, E]`` (and the final observations' values) as the targets' inputs: V(obs_t),
    the value of what followed each step, and the steps before a crash bootstrapping from the crash state."""
    steps, envs = chunk.num_steps, chunk.num_envs
    values_np = values_all.float().reshape(steps + 1, envs).cpu().numpy()
    values, next_values = values_np[:steps].copy(), values_np[1:].copy()
    terminated, truncated = chunk.terminated.copy(), chunk.truncated.copy()
    for (t, e), v in zip(chunk.final_index, final_values, strict=True):
        next_values[t, e] = v
    valid = np.ones((steps, envs), bool) if chunk.restarted is None else ~chunk.restarted
    if not valid.all():
        bootstrap_before_crashes(valid, terminated, truncated, next_values, values)
    return RoundValues(
        flat_obs=flat_obs,
        actions=actions,
        log_probs=log_probs.cpu().numpy().reshape(steps, envs),
        values=values,
        next_values=next_values,
        terminated=terminated,
        truncated=truncated,
        keep=np.flatnonzero(valid.reshape(-1)),
        sequences=sequences,
    )


def _recurrent_round_values(model: RecurrentActorCritic, chunk: Chunk, io: DeviceIO) -> RoundValues:
    """``round_values`` of a recurrent model: the round unrolled from each slot's ``initial_state``, the state
    zeroed after every step that ended an episode; a truncated episode's final observation is valued from the
    state that saw its last step."""
    if chunk.initial_state is None:
        raise ValueError("a recurrent model trains on chunks that carry initial_state (acted by a recurrent policy)")
    steps, envs = chunk.num_steps, chunk.num_envs
    obs = io.tensor(chunk.obs)
    ended = chunk.terminated | chunk.truncated  # a crash sets truncated too
    reset_before = np.zeros((steps + 1, envs), bool)
    reset_before[1:] = ended
    actions = io.tensor(chunk.actions.reshape(steps * envs, *chunk.actions.shape[2:]))
    state0 = io.tensor(chunk.initial_state).float()
    with torch.no_grad(), io.autocast():
        params, values_all, _, after = model.unroll(obs, state0, io.tensor(reset_before), keep=True)
        assert after is not None
        log_probs = model.dist.log_prob(params[: steps * envs].float(), actions)
        final_values = np.zeros(0, np.float32)
        if len(chunk.final_obs):
            t, e = torch.from_numpy(chunk.final_index[:, 0]), torch.from_numpy(chunk.final_index[:, 1])
            _, final, _ = model.step(io.tensor(chunk.final_obs), after[t.to(io.device), e.to(io.device)].float())
            final_values = final.float().cpu().numpy()
    after = after.float()
    keep_rows = io.tensor(~reset_before[1:steps]).unsqueeze(-1).to(after.dtype)
    states = torch.cat([state0.unsqueeze(0), after[: steps - 1] * keep_rows])
    valid = np.ones((steps, envs), bool) if chunk.restarted is None else ~chunk.restarted
    flat_obs = obs[:steps].reshape(steps * envs, *obs.shape[2:])
    sequences = Sequences(obs[:steps], states, reset_before[:steps], valid)
    return _round(chunk, flat_obs, actions, log_probs, values_all, final_values, sequences)


def sequence_units(array: torch.Tensor, length: int) -> torch.Tensor:
    """``[T, E, ...]`` time-major -> ``[E * T / length, length, ...]``: each env's steps cut into sequences of
    ``length``, ordered by (segment, env)."""
    steps, envs = array.shape[:2]
    segments = steps // length
    units = array.reshape(segments, length, envs, *array.shape[2:]).transpose(1, 2)
    return units.reshape(segments * envs, length, *array.shape[2:])


def minibatch_indices(
    generator: np.random.Generator, samples: int, epochs: int, minibatches: int, device: torch.device
) -> Iterator[torch.Tensor]:
    """``epochs`` shuffled passes over ``samples``, each split into ``minibatches`` index sets (the last one
    takes the remainder); one optimizer step each. With fewer samples than minibatches (an APPO call on one
    small chunk, a round of mostly crashed steps) the empty sets are skipped: a step on no samples would make
    every gradient NaN."""
    size = max(1, samples // minibatches)
    for _ in range(epochs):
        order = torch.from_numpy(generator.permutation(samples)).to(device)
        for k in range(minibatches):
            rows = order[k * size : (k + 1) * size] if k < minibatches - 1 else order[k * size :]
            if len(rows):
                yield rows


class MinibatchGather:
    """A step's minibatch: the round's tensors at the step's indices, advantages normalized per minibatch
    (here, before any split into micro-batches, so gradient accumulation sees the minibatch's statistics)."""

    def __init__(self, data: dict[str, torch.Tensor], normalize_advantages: bool):
        self.data = data
        self.normalize_advantages = normalize_advantages

    def __call__(self, idx: torch.Tensor) -> StepInput:
        mb = {name: value[idx] for name, value in self.data.items()}
        advantages = mb["advantages"]
        if self.normalize_advantages and advantages.numel() > 1:
            mb["advantages"] = (advantages - advantages.mean()) / (advantages.std() + 1e-8)
        return StepInput(mb)


class SequenceGather:
    """A recurrent model's minibatch: whole sequences ``[U, L, ...]`` (dim 0: sequences, so gradient
    accumulation never cuts one), advantages normalized over the minibatch's real steps."""

    def __init__(self, data: dict[str, torch.Tensor], normalize_advantages: bool):
        self.data = data
        self.normalize_advantages = normalize_advantages

    def __call__(self, idx: torch.Tensor) -> StepInput:
        mb = {name: value[idx] for name, value in self.data.items()}
        advantages, valid = mb["advantages"], mb["valid"]
        if self.normalize_advantages and advantages.numel() > 1:
            real = advantages[valid]
            if real.numel() > 1:
                mb["advantages"] = (advantages - real.mean()) / (real.std() + 1e-8)
        return StepInput(mb, samples=int(advantages.numel()))


class NumpyMinibatchGather:
    """``MinibatchGather`` for a fused step (learner.fused, raylab/learner/fused/ppo.py): the minibatch as NumPy
    arrays (views of the round's CPU tensors, taken on the first call), advantages normalized the same way."""

    def __init__(self, data: dict[str, torch.Tensor], normalize_advantages: bool):
        self.tensors = data
        self.arrays: dict[str, np.ndarray] | None = None
        self.normalize_advantages = normalize_advantages

    def __call__(self, idx: torch.Tensor) -> dict[str, np.ndarray]:
        if self.arrays is None:
            self.arrays = {name: value.numpy() for name, value in self.tensors.items()}
        rows = idx.numpy()
        mb = {name: value[rows] for name, value in self.arrays.items()}  # copies (an index array, not a slice)
        advantages = mb["advantages"]
        if self.normalize_advantages and advantages.size > 1:
            advantages -= advantages.mean()
            advantages /= advantages.std(ddof=1) + np.float32(1e-8)
        return mb


class ClippedObjective:
    """What PPO and APPO share (an Objective, raylab.algos.objective): an actor-critic, minibatch epochs on
    a permutation drawn from ``seed``'s generator (the call is one version), and the loss: the clipped
    surrogate, the (clipped) value loss and the entropy bonus. Subclasses choose the targets in ``plan``."""

    def __init__(
        self,
        model: ActorCritic,
        cfg: PPOConfig | APPOConfig,
        seed: int,
        value_clip: float | None,
        normalize_advantages: bool,
    ):
        self.model = model
        self.cfg = cfg
        self.generator = np.random.default_rng(seed)
        self.value_clip = value_clip
        self.normalize_advantages = normalize_advantages

    def modules(self) -> dict[str, nn.Module]:
        return {"model": self.model}

    def policy_module(self) -> nn.Module:
        return self.model

    def after_update(self, version: int) -> None:
        pass

    def update_obs_norm(self, chunk: Chunk, io: DeviceIO) -> None:
        """model.normalize_obs: merge the round's observations into the model's running statistics, before the
        round's value pass; they reach the actors inside the weights this call publishes."""
        norm = self.model.obs_norm
        if norm is not None:
            obs = io.tensor(chunk.obs[: chunk.num_steps])
            if obs.dtype == torch.uint8:  # what ActorCritic.forward normalizes: frames scaled to [0, 1] first
                obs = obs.float().div_(255.0)
            norm.update(obs.reshape(-1, *obs.shape[2:]))

    def state_dict(self) -> dict[str, Any]:
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        pass

    def _minibatch_plan(
        self,
        r: RoundValues,
        old_log_probs: np.ndarray,
        advantages: np.ndarray,
        returns: np.ndarray,
        io: DeviceIO,
        metrics: dict[str, float],
    ) -> Plan:
        """The round's steps: its kept samples in ``epochs x minibatches`` shuffled minibatches."""
        if r.sequences is not None:
            return self._sequence_plan(r, r.sequences, old_log_probs, advantages, returns, io, metrics)
        keep = r.keep
        data = {
            "obs": r.flat_obs[keep],
            "actions": r.actions[keep],
            "old_log_probs": io.tensor(old_log_probs.reshape(-1)[keep]),
            "old_values": io.tensor(r.values.reshape(-1)[keep]),
            "advantages": io.tensor(advantages.reshape(-1)[keep]),
            "returns": io.tensor(returns.reshape(-1)[keep]),
        }
        steps = minibatch_indices(self.generator, len(keep), self.cfg.epochs, self.cfg.minibatches, io.device)
        gather = MinibatchGather(data, self.normalize_advantages)
        return Plan(
            steps, gather, metrics, version_per_call=True, prefetch_on_cpu=False,
            fused_input=NumpyMinibatchGather(data, self.normalize_advantages),
        )  # fmt: skip

    def _sequence_plan(
        self,
        r: RoundValues,
        seq: Sequences,
        old_log_probs: np.ndarray,
        advantages: np.ndarray,
        returns: np.ndarray,
        io: DeviceIO,
        metrics: dict[str, float],
    ) -> Plan:
        """A recurrent model's round: each env's steps cut into sequences of algo.bptt steps (the whole rollout
        when null), each from the state its first step acted from; ``epochs x minibatches`` shuffled sets of
        whole sequences. Crashed steps stay in their sequences, masked out of the loss."""
        steps, envs = seq.valid.shape
        length = self.cfg.bptt or steps
        if steps % length:
            raise ValueError(f"algo.bptt={length} must divide the chunks' {steps} steps")
        reset_before = seq.reset_before.copy()
        reset_before[::length] = False  # a sequence's first state is already the reset one

        def units(array: np.ndarray | torch.Tensor) -> torch.Tensor:
            tensor = array if isinstance(array, torch.Tensor) else io.tensor(np.ascontiguousarray(array))
            return sequence_units(tensor, length)

        data = {
            "obs": units(seq.obs),
            "actions": units(r.actions.reshape(steps, envs, *r.actions.shape[1:])),
            "old_log_probs": units(old_log_probs.astype(np.float32)),
            "old_values": units(r.values),
            "advantages": units(advantages.astype(np.float32)),
            "returns": units(returns.astype(np.float32)),
            "reset_before": units(reset_before),
            "valid": units(seq.valid),
            "state0": seq.states[::length].reshape(-1, seq.states.shape[-1]),
        }
        count = len(data["state0"])
        steps_iter = minibatch_indices(self.generator, count, self.cfg.epochs, self.cfg.minibatches, io.device)
        return Plan(
            steps_iter, SequenceGather(data, self.normalize_advantages), metrics, version_per_call=True,
            prefetch_on_cpu=False,
        )  # fmt: skip

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
            mb["returns"], clip=self.cfg.clip, value_clip=self.value_clip, value_coef=self.cfg.value_coef,
            entropy_coef=self.cfg.entropy_coef, normalize_advantages=False,  # normalized per minibatch already
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
    """PPO: ``plan(chunks)`` joins a synchronous round's chunks, runs one value pass and GAE, then
    ``epochs x minibatches`` steps."""

    def __init__(self, model: ActorCritic, cfg: PPOConfig, seed: int = 0):
        super().__init__(model, cfg, seed, cfg.value_clip, cfg.normalize_advantages)
        self.ppo = cfg

    def plan(self, data: list[Chunk], version: int, io: DeviceIO) -> Plan:
        cfg = self.ppo
        chunk = join_chunks(list(data))
        self.update_obs_norm(chunk, io)
        r = round_values(self.model, chunk, io)
        advantages, returns = gae(
            chunk.rewards, r.values, r.next_values, r.terminated, r.truncated, cfg.gamma, cfg.gae_lambda
        )
        explained = 1.0 - float(np.var(returns - r.values)) / max(float(np.var(returns)), 1e-8)
        return self._minibatch_plan(r, r.log_probs, advantages, returns, io, {"explained_variance": explained})

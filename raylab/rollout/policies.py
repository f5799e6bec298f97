"""Several policies acting in one batch of agent slots, and the chunk cut into one chunk per policy.

A ``PolicySet`` is the policy of a rollout worker (or of the evaluator) in a run with several policies
(raylab/config/policies.py): policy k acts for its fixed slots, in one batched call per policy and step
(RLlib and Sample Factory batch inference per policy the same way). ``split_chunk`` cuts a worker's chunk of
every slot into policy k's chunk of its slots: each learner sees an ordinary chunk of its own agents, acted
by its own weights (each part carries its policy's version). Agents that differ in spaces form several space
groups (raylab/envs/multiagent.py): a worker then keeps one chunk per group, each policy's slots lie in one of
them, and its chunk is cut from that group's chunk, in its own spaces.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

import numpy as np

from raylab.types import Chunk, Policy, Stateful, Weights


class PolicySet:
    """``policies[k]`` acts for ``slots[k]`` (ascending indices into the batch; together every slot once).

    ``layout`` (``EnvSpaces.slot_layout``), when the env's agents differ in spaces: each slot's space group and
    its index among that group's slots. ``act_groups`` then takes one observation batch per group and gives one
    action batch per group, each policy acting on its slots of its own group (``parts``): no padding, each
    group's actions in its own dtype and shape."""

    def __init__(
        self,
        policies: Sequence[Policy],
        slots: Sequence[np.ndarray],
        layout: tuple[np.ndarray, np.ndarray] | None = None,
    ):
        assert len(policies) == len(slots) > 0
        self.policies = list(policies)
        self.slots = [np.asarray(s, np.int64) for s in slots]
        self.num_slots = sum(len(s) for s in self.slots)
        covered = np.sort(np.concatenate(self.slots))
        assert np.array_equal(covered, np.arange(self.num_slots)), "every slot acted for by exactly one policy"
        self.last_log_probs: np.ndarray | None = None
        self.layout = layout
        self.parts: list[tuple[int, np.ndarray]] = [(0, idx) for idx in self.slots]
        """Policy k's (space group, its slots among that group's): (0, its slots) with one group."""
        self.group_sizes = [self.num_slots]
        if layout is not None:
            slot_group, slot_local = layout
            assert len(slot_group) == self.num_slots
            self.group_sizes = np.bincount(slot_group).tolist()
            self.parts = []
            for idx in self.slots:
                groups = np.unique(slot_group[idx])
                assert len(groups) == 1, "a policy's slots lie in one space group (raylab.config.policies.policy_map)"
                self.parts.append((int(groups[0]), slot_local[idx]))

    @property
    def grouped(self) -> bool:
        """Whether the env's agents form several space groups (``act_groups``)."""
        return len(self.group_sizes) > 1

    @property
    def versions(self) -> list[int]:
        return [p.version for p in self.policies]

    @property
    def version(self) -> int:
        """The oldest of the policies' versions."""
        return min(self.versions)

    @property
    def epsilon(self) -> float | None:
        """Epsilon-greedy policies (DQN): the mean exploration rate over every slot; None for the others."""
        parts = [(getattr(p, "epsilon", None), len(idx)) for p, idx in zip(self.policies, self.slots, strict=True)]
        if any(eps is None for eps, _ in parts):
            return None
        return float(sum(eps * n for eps, n in parts if eps is not None) / self.num_slots)

    def act(self, obs: np.ndarray) -> np.ndarray:
        actions: np.ndarray | None = None
        log_probs: np.ndarray | None = None
        for policy, idx in zip(self.policies, self.slots, strict=True):
            part = policy.act(obs[idx])
            if actions is None:
                actions = np.empty((self.num_slots, *part.shape[1:]), part.dtype)
            actions[idx] = part
            if policy.last_log_probs is not None:
                if log_probs is None:
                    log_probs = np.zeros(self.num_slots, np.float32)
                log_probs[idx] = policy.last_log_probs
        assert actions is not None
        self.last_log_probs = log_probs
        return actions

    @property
    def state_size(self) -> int:
        """The largest state of its policies (0: none has memory)."""
        return max(int(getattr(p, "state_size", 0)) for p in self.policies)

    def states(self, num: int) -> list[np.ndarray | None]:
        """Policy k's states of its slots (None for a policy without memory); ``num``: every slot."""
        assert num == self.num_slots
        parts: list[np.ndarray | None] = []
        for policy, idx in zip(self.policies, self.slots, strict=True):
            own = policy.states(len(idx)) if isinstance(policy, Stateful) else None
            parts.append(own if isinstance(own, np.ndarray) else None)
        return parts

    def reset_states(self, done: np.ndarray) -> None:
        for policy, idx in zip(self.policies, self.slots, strict=True):
            if isinstance(policy, Stateful):
                policy.reset_states(done[idx])

    def act_groups(self, obs: Sequence[np.ndarray]) -> list[np.ndarray]:
        """``act`` over several space groups: ``obs[g]`` is group g's batch; one action batch per group."""
        actions: list[np.ndarray | None] = [None] * len(self.group_sizes)
        log_probs: np.ndarray | None = None
        for policy, idx, (g, local) in zip(self.policies, self.slots, self.parts, strict=True):
            part = policy.act(obs[g][local])
            batch = actions[g]
            if batch is None:
                batch = actions[g] = np.empty((self.group_sizes[g], *part.shape[1:]), part.dtype)
            batch[local] = part
            if policy.last_log_probs is not None:
                if log_probs is None:
                    log_probs = np.zeros(self.num_slots, np.float32)
                log_probs[idx] = policy.last_log_probs
        self.last_log_probs = log_probs
        assert all(a is not None for a in actions), "every space group acted for"
        return cast(list[np.ndarray], actions)

    def set_weights(self, weights: Weights, exact: bool = False) -> bool:
        raise TypeError("a PolicySet takes one Weights per policy: call load(parts)")

    def load(self, parts: Sequence[Weights | None], exact: bool = False) -> bool:
        """Load policy k's ``parts[k]`` (None: keep what it has; ``exact``: older weights too); whether any
        policy loaded them."""
        assert len(parts) == len(self.policies), f"{len(parts)} weights for {len(self.policies)} policies"
        loaded = False
        for policy, weights in zip(self.policies, parts, strict=True):
            if weights is not None:
                loaded = policy.set_weights(weights, exact) or loaded
        return loaded


def split_chunk(chunk: Chunk, slots: np.ndarray, version: int, initial_state: np.ndarray | None = None) -> Chunk:
    """The part of ``chunk`` that slots ``slots`` (ascending) made, acted by policy version ``version`` (from
    ``initial_state``, a recurrent policy's states of those slots): its slot j is ``chunk``'s slot ``slots[j]``;
    truncated episodes' final observations follow their slots."""
    keep = np.isin(chunk.final_index[:, 1], slots) if len(chunk.final_index) else np.zeros(0, bool)
    final_index = chunk.final_index[keep].copy()
    final_index[:, 1] = np.searchsorted(slots, final_index[:, 1])
    return Chunk(
        obs=chunk.obs[:, slots],
        actions=chunk.actions[:, slots],
        rewards=chunk.rewards[:, slots],
        terminated=chunk.terminated[:, slots],
        truncated=chunk.truncated[:, slots],
        final_obs=chunk.final_obs[keep],
        final_index=final_index.reshape(-1, 2),
        policy_version=version,
        worker_id=chunk.worker_id,
        seq=chunk.seq,
        restarted=None if chunk.restarted is None else _none_if_clear(chunk.restarted[:, slots]),
        log_probs=None if chunk.log_probs is None else chunk.log_probs[:, slots],
        initial_state=initial_state,
    )


def _none_if_clear(mask: np.ndarray) -> np.ndarray | None:
    return mask if mask.any() else None


class RandomPolicy:
    """Uniformly random actions whatever its weights: discrete ones, or (``bounds``: a Box's low and high) uniform
    within the Box; an evaluation opponent, a baseline (``raylab.evaluate against_random=<policy>``)."""

    def __init__(
        self, num_actions: int | None, seed: int = 0, bounds: tuple[Sequence[float], Sequence[float]] | None = None
    ):
        assert (num_actions is None) != (bounds is None), "a number of actions or a Box's bounds"
        self.num_actions = num_actions
        self.bounds = None if bounds is None else (np.asarray(bounds[0], np.float32), np.asarray(bounds[1], np.float32))
        self.rng = np.random.default_rng(seed)
        self.version = 0
        self.last_log_probs: np.ndarray | None = None

    def act(self, obs: np.ndarray) -> np.ndarray:
        if self.bounds is not None:
            low, high = self.bounds
            return self.rng.uniform(low, high, (len(obs), len(low))).astype(np.float32)
        assert self.num_actions is not None
        return self.rng.integers(0, self.num_actions, len(obs))

    def set_weights(self, weights: Weights, exact: bool = False) -> bool:
        return False

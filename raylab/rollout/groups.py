"""A rollout worker's path for agents that differ in spaces: one observation and action batch per space group.

A multi-agent env whose agents differ in observation or action spaces (raylab/envs/multiagent.py: mpe2's
simple_tag, predators of 16 floats and Box actions beside a prey of 14 floats and Discrete actions) steps
its slots as several space groups. ``GroupedRollout`` keeps one observation and one action buffer per group,
and the per-slot arrays (rewards, terminated, truncated, restarted, log-probabilities) over every slot, as
``RolloutWorker.collect`` does for one group; its chunks are one ordinary, single-space chunk per group, which
``RolloutWorker.sample_each`` cuts into each policy's chunk (every policy's slots lie in one group). An env of
one space group never comes here: ``collect`` keeps its own path, unchanged.
"""

from __future__ import annotations

from typing import Protocol, cast

import numpy as np

from raylab.envs.vector import GroupedVectorEnv, VectorEnv, space_group_count
from raylab.metrics.timing import StageTimer
from raylab.rollout.collected import Rollout
from raylab.rollout.policies import Policy, PolicySet
from raylab.types import Chunk, Stateful


class Collector(Protocol):
    """The rollout worker, as the grouped path sees it: its settings, and the counters it advances."""

    rollout_length: int
    cut_at_episode_end: bool
    timer: StageTimer
    memory: Stateful | None
    worker_id: int
    env_steps: int

    def next_seq(self) -> int:
        """The new chunk's ``seq`` (the worker counts on)."""
        ...


class GroupedRollout:
    """The env's observations of its slots' space groups, and the chunks of one ``collect`` call."""

    @staticmethod
    def of(env: VectorEnv, policy: Policy) -> GroupedRollout | None:
        """The grouped path for ``env`` and ``policy``; None for an env of one space group (today's path)."""
        if space_group_count(env) == 1:
            return None
        assert isinstance(policy, PolicySet) and policy.grouped, "agents of several space groups need a PolicySet"
        return GroupedRollout(cast(GroupedVectorEnv, env), policy)

    def __init__(self, env: GroupedVectorEnv, policy: PolicySet):
        assert policy.layout is not None
        slot_group, slot_local = policy.layout
        assert np.array_equal(slot_group, env.slot_group) and np.array_equal(slot_local, env.slot_local), (
            "the policies' slot layout is the env's"
        )
        self.env, self.policy = env, policy
        self.slot_group, self.slot_local = env.slot_group, env.slot_local
        self.members = [np.flatnonzero(self.slot_group == g) for g in range(len(policy.group_sizes))]
        """Group g's slots, in its own order (slot_local 0, 1, ...)."""
        for g, members in enumerate(self.members):
            assert np.array_equal(self.slot_local[members], np.arange(len(members))), f"group {g}'s slots in order"
        self.obs = self.reset()

    def reset(self) -> list[np.ndarray]:
        """Reset every env: the next chunk starts fresh episodes."""
        self.obs = [o.copy() for o in self.env.reset_groups()]
        return self.obs

    def collect(self, worker: Collector) -> Rollout:
        """``RolloutWorker.collect`` over the space groups: ``Rollout.groups`` holds one chunk per group."""
        steps, num_envs = worker.rollout_length, self.env.num_envs
        policy, env, timer = self.policy, self.env, worker.timer
        obs = [np.empty((steps + 1, *o.shape), o.dtype) for o in self.obs]
        actions: list[np.ndarray] | None = None  # per group: [T, E_g] int64, or [T, E_g, D] float32 (Box)
        rewards = np.empty((steps, num_envs), np.float32)
        terminated = np.empty((steps, num_envs), bool)
        truncated = np.empty((steps, num_envs), bool)
        restarted: np.ndarray | None = None
        log_probs: np.ndarray | None = None
        final_obs: list[list[np.ndarray]] = [[] for _ in self.members]
        final_index: list[list[tuple[int, int]]] = [[] for _ in self.members]
        episodes: list[dict[str, float]] = []
        episode_slots: list[int] = []
        for buffer, first in zip(obs, self.obs, strict=True):
            buffer[0] = first
        version = policy.version
        restarts_before = env.restarts
        memory = worker.memory
        initial = policy.states(policy.num_slots) if memory is not None else None
        taken = 0
        for t in range(steps):
            with timer.stage("inference"):
                action = policy.act_groups([o[t] for o in obs])
                if actions is None:
                    actions = [np.empty((steps, *a.shape), a.dtype) for a in action]
                for buffer, a in zip(actions, action, strict=True):
                    buffer[t] = a
                if policy.last_log_probs is not None:
                    if log_probs is None:
                        log_probs = np.empty((steps, num_envs), np.float32)
                    log_probs[t] = policy.last_log_probs
            with timer.stage("env"):
                step = env.step_groups([a[t] for a in actions])
            if memory is not None:  # a slot whose episode ended (or whose env crashed) starts from zeros
                memory.reset_states(step.terminated | step.truncated)
            for buffer, o in zip(obs, step.obs, strict=True):
                buffer[t + 1] = o
            rewards[t] = step.rewards
            terminated[t] = step.terminated
            truncated[t] = step.truncated
            for slot, last_obs in step.final_obs:
                g = int(self.slot_group[slot])
                final_obs[g].append(last_obs)
                final_index[g].append((t, int(self.slot_local[slot])))
            for slot, record in step.episodes:
                episodes.append(record)
                episode_slots.append(slot)
            if step.restarted is not None:
                if restarted is None:
                    restarted = np.zeros((steps, num_envs), bool)
                restarted[t] = step.restarted
            taken = t + 1
            if worker.cut_at_episode_end and (step.terminated | step.truncated).any():
                break
        assert actions is not None  # rollout_length >= 1
        self.obs = [o[taken].copy() for o in obs]
        worker.env_steps += taken * num_envs
        seq = worker.next_seq()
        chunks = [
            Chunk(
                obs=obs[g][: taken + 1],
                actions=actions[g][:taken],
                rewards=rewards[:taken, m],
                terminated=terminated[:taken, m],
                truncated=truncated[:taken, m],
                final_obs=np.stack(final_obs[g]) if final_obs[g] else np.zeros((0, *obs[g].shape[2:]), obs[g].dtype),
                final_index=np.array(final_index[g], np.int64).reshape(-1, 2),
                policy_version=version,
                worker_id=worker.worker_id,
                seq=seq,
                restarted=None if restarted is None else _none_if_clear(restarted[:taken, m]),
                log_probs=None if log_probs is None else log_probs[:taken, m],
            )
            for g, m in enumerate(self.members)
        ]
        return Rollout(chunks[0], episodes, env.restarts - restarts_before, episode_slots, initial, groups=chunks)


def _none_if_clear(mask: np.ndarray) -> np.ndarray | None:
    return mask if mask.any() else None

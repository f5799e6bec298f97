"""A rollout worker's trajectory builder: the buffers of one chunk, written once per step, cut into chunks.

raylab/rollout/worker.py's loop hands it each split's actions (``act``) and each split's env step (``step``),
written into the split's columns ``c`` of every buffer. Observations and actions are kept per space group
(a multi-agent env whose agents differ in spaces: raylab/envs/multiagent.py), everything per slot over all
slots; ``chunks`` cuts one ordinary chunk per group (one group: the chunk).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from raylab.rollout.acting import Acted
from raylab.types import Chunk


class Trajectory:
    """One chunk's buffers: ``obs[g]`` [T + 1, E_g, ...] per space group (row 0: ``first``), per-slot rewards,
    terminated, truncated [T, E], and, once a step has them, actions per group, log-probabilities and crashes."""

    def __init__(self, steps: int, first: Sequence[np.ndarray], num_slots: int, slot_group: np.ndarray | None = None):
        """``slot_group``: each slot's space group, when there are several (their order within a group is the
        env's ``slot_local``)."""
        self.steps, self.num_slots = steps, num_slots
        self.obs = [np.empty((steps + 1, *o.shape), o.dtype) for o in first]
        for buffer, o in zip(self.obs, first, strict=True):
            buffer[0] = o
        self.actions: list[np.ndarray] | None = None  # per group: [T, E_g] int64, or [T, E_g, D] float32 (Box)
        self.rewards = np.empty((steps, num_slots), np.float32)
        self.terminated = np.empty((steps, num_slots), bool)
        self.truncated = np.empty((steps, num_slots), bool)
        self.restarted: np.ndarray | None = None
        self.log_probs: np.ndarray | None = None
        self.version: int | None = None
        """The oldest policy version that acted in the chunk."""
        groups = len(first)
        self.members = (
            [np.arange(num_slots)] if slot_group is None else [np.flatnonzero(slot_group == g) for g in range(groups)]
        )
        self.final_obs: list[list[np.ndarray]] = [[] for _ in range(groups)]
        self.final_index: list[list[tuple[int, int]]] = [[] for _ in range(groups)]
        self.episodes: list[dict[str, float]] = []
        """Records of the episodes that ended in the chunk, and (``episode_slots``) the slot of each."""
        self.episode_slots: list[int] = []

    def act(self, t: int, c: slice | None, acted: Acted) -> None:
        """Step ``t``'s actions of the slots ``c`` (one group: those columns; several groups, or None: every
        slot)."""
        at = t if c is None else (t, c)
        if self.actions is None:  # one group: every slot's (a split's batch holds its own); several: the group's
            whole = len(self.members) == 1
            self.actions = [
                np.empty((self.steps, self.num_slots if whole else len(a), *a.shape[1:]), a.dtype)
                for a in acted.actions
            ]
        if len(self.actions) == 1:
            self.actions[0][at] = acted.actions[0]
        else:
            for buffer, a in zip(self.actions, acted.actions, strict=True):
                buffer[at] = a
        if acted.log_probs is not None:
            if self.log_probs is None:
                self.log_probs = np.empty((self.steps, self.num_slots), np.float32)
            self.log_probs[at] = acted.log_probs
        if self.version is None or acted.version < self.version:
            self.version = acted.version

    def step(self, t: int, c: slice | None, step: Any, obs: Sequence[np.ndarray], grouped: Any = None) -> None:
        """The outcome of step ``t`` of slots ``c`` (a VectorStep, or a GroupStep with ``grouped`` its env)."""
        at, following = (t, t + 1) if c is None else ((t, c), (t + 1, c))
        if len(obs) == 1:
            self.obs[0][following] = obs[0]
        else:
            for buffer, o in zip(self.obs, obs, strict=True):
                buffer[following] = o
        self.rewards[at] = step.rewards
        self.terminated[at] = step.terminated
        self.truncated[at] = step.truncated
        if not step.final_obs and not step.episodes and step.restarted is None:
            return
        first = 0 if c is None else c.start
        for slot, last_obs in step.final_obs:
            if grouped:
                g, local = int(grouped.slot_group[slot]), int(grouped.slot_local[slot])
            else:
                g, local = 0, first + slot
            self.final_obs[g].append(last_obs)
            self.final_index[g].append((t, local))
        for slot, record in step.episodes:
            self.episodes.append(record)
            self.episode_slots.append(first + slot)
        if step.restarted is not None:
            if self.restarted is None:
                self.restarted = np.zeros((self.steps, self.num_slots), bool)
            self.restarted[at] = step.restarted

    def chunks(self, taken: int, worker_id: int, seq: int) -> list[Chunk]:
        """The ``taken`` steps written, as one chunk per space group."""
        assert self.actions is not None and self.version is not None  # rollout_length >= 1
        whole = len(self.members) == 1
        out = []
        for g, m in enumerate(self.members):
            obs, final = self.obs[g], self.final_obs[g]
            restarted = (
                None if self.restarted is None else self.restarted[:taken] if whole else self.restarted[:taken, m]
            )
            out.append(
                Chunk(
                    obs=obs[: taken + 1],
                    actions=self.actions[g][:taken],
                    rewards=self.rewards[:taken] if whole else self.rewards[:taken, m],
                    terminated=self.terminated[:taken] if whole else self.terminated[:taken, m],
                    truncated=self.truncated[:taken] if whole else self.truncated[:taken, m],
                    final_obs=np.stack(final) if final else np.zeros((0, *obs.shape[2:]), obs.dtype),
                    final_index=np.array(self.final_index[g], np.int64).reshape(-1, 2),
                    policy_version=self.version,
                    worker_id=worker_id,
                    seq=seq,
                    restarted=restarted if whole or restarted is None or restarted.any() else None,
                    log_probs=None
                    if self.log_probs is None
                    else self.log_probs[:taken]
                    if whole
                    else self.log_probs[:taken, m],
                )
            )
        return out

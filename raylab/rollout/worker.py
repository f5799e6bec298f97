"""RolloutWorker: steps a vector of envs and returns ``steps x envs`` chunks: the one rollout loop of raylab.

Every algorithm's experience comes through ``collect``: the Ray topologies wrap the worker in an actor
(apex_dqn, ppo, appo), the local topology calls it directly, and A3C's worker (raylab.rollout.a3c) collects its
segments with it. The loop is an env runner and a trajectory builder (raylab/rollout/trajectory.py):

- the **env runner** steps the worker's envs in one or more *splits* (equal parts of its envs, each a vector
  env of its own) and asks an ``ActionSource`` (raylab/rollout/acting.py) for each split's actions: its own
  policy (``topology.inference=local``, one split), or an inference actor batching many workers'
  observations (``central``): with two splits one half of the envs steps while the other half's observations
  are being acted on;
- the **trajectory builder** writes each step into the chunk's buffers, once, and cuts the chunk (one per
  space group when a multi-agent env's agents differ in spaces).
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Sequence
from typing import Any, cast

import numpy as np

from raylab.envs.vector import GroupedVectorEnv, VectorEnv, space_group_count
from raylab.metrics.timing import GapTimer, StageTimer
from raylab.rollout.acting import ActionSource, LocalActions
from raylab.rollout.collected import Rollout
from raylab.rollout.policies import Policy, PolicySet, split_chunk
from raylab.rollout.trajectory import Trajectory
from raylab.types import Chunk, Episodes, PolicyRollout, RolloutStats, Stateful, Weights


class RolloutWorker:
    """Owns a vector env (or its splits) and a policy; ``sample()`` takes ``rollout_length`` steps of every env.

    ``cut_at_episode_end`` ends a chunk early, right after the first step at which any env's episode ends
    (terminated, truncated or crashed): A3C's segments. Its chunks then hold 1 to ``rollout_length`` steps.
    """

    def __init__(
        self,
        env: VectorEnv | Sequence[VectorEnv],
        policy: Policy,
        worker_id: int,
        rollout_length: int,
        timer: StageTimer | None = None,
        cut_at_episode_end: bool = False,
        record_state_every: int = 0,
        actions: ActionSource | None = None,
    ):
        """``policy`` may be a PolicySet (several policies, raylab/rollout/policies.py): ``sample_each`` then
        cuts each chunk into one chunk per policy. ``record_state_every`` (R2D2's algo.sequence.period, a
        recurrent policy): the chunk also carries the state each slot acts from every that many steps into its
        episode (``Chunk.core_states``), where the replay starts a sequence mid-episode.

        ``env`` as several vector envs: the splits of the worker's envs (slots in order), each stepped on its
        own; ``actions``: where actions come from (default: ``policy`` acting locally); the policy then only
        explores, when it is epsilon-greedy (raylab/rollout/acting.py)."""
        self.splits = [env] if not isinstance(env, Sequence) else list(env)
        self.env = self.splits[0]
        """The worker's env (its first split)."""
        self.grouped = space_group_count(self.env) > 1
        """Agents of several space groups: one observation and action batch per group."""
        assert not (self.grouped and len(self.splits) > 1), "an env of several space groups steps in one split"
        assert not (cut_at_episode_end and (len(self.splits) > 1 or actions is not None)), "A3C's segments act locally"
        if self.grouped:
            assert isinstance(policy, PolicySet) and policy.grouped, "agents of several space groups need a PolicySet"
            slot_group, slot_local = cast(tuple[np.ndarray, np.ndarray], policy.layout)
            genv = cast(GroupedVectorEnv, self.env)
            assert np.array_equal(slot_group, genv.slot_group) and np.array_equal(slot_local, genv.slot_local), (
                "the policies' slot layout is the env's"
            )
        self._slot_group = cast(GroupedVectorEnv, self.env).slot_group if self.grouped else None
        self.policy = policy
        self.actions = actions if actions is not None else LocalActions(policy, self.grouped)
        self.worker_id = worker_id
        self.rollout_length = rollout_length
        self.cut_at_episode_end = cut_at_episode_end
        self.timer = timer if timer is not None else StageTimer()
        self._gap = GapTimer()
        """Time between handing back a chunk and being asked for the next one ("wait"): parked by the
        rate limiter, queued behind the driver, or (serial topology) the learner's and other workers' turn;
        weight loads in between are weight_sync, not wait."""
        self._sync_s = 0.0
        self.num_slots = sum(e.num_envs for e in self.splits)
        self._obs = self._reset_obs()
        """Each space group's observations the next step acts on (one group: every slot's)."""
        self.memory: Stateful | None = policy if isinstance(policy, Stateful) and policy.state_size > 0 else None
        """The policy, when it keeps a state per slot (model.recurrent): reset here at every episode's end."""
        assert self.memory is None or actions is None, "a recurrent policy acts locally"
        self._seq = 0
        self.env_steps = 0
        self.record_state_every = int(record_state_every) if self.memory is not None else 0
        self._since_start = np.zeros(self.num_slots, np.int64)
        """Steps each slot has taken in its current episode (record_state_every)."""

    def _reset_obs(self) -> list[np.ndarray]:
        if self.grouped:
            return [o.copy() for o in cast(GroupedVectorEnv, self.env).reset_groups()]
        return [np.concatenate([e.reset() for e in self.splits])]

    @property
    def policy_version(self) -> int:
        return self.policy.version

    def set_weights(self, weights: Weights | Sequence[Weights | None]) -> bool:
        """Load newer weights; a no-op (no copy) when ``weights`` is not newer than the policy's. A PolicySet
        takes one Weights (or None: unchanged) per policy."""
        start = time.perf_counter()
        if isinstance(self.policy, PolicySet):
            assert not isinstance(weights, Weights)
            loaded = self.policy.load(weights)
        else:
            assert isinstance(weights, Weights)
            loaded = self.policy.set_weights(weights)
        seconds = time.perf_counter() - start
        self._sync_s += seconds
        self.timer.add("weight_sync", seconds)
        return loaded

    def reset(self) -> None:
        """Reset every env: the next chunk starts fresh episodes (and a recurrent policy from zero states)."""
        self._obs = self._reset_obs()
        if self.memory is not None:
            self.memory.reset_states(np.ones(self.num_slots, bool))
        self._since_start = np.zeros(self.num_slots, np.int64)

    def sample(self) -> tuple[Chunk, RolloutStats]:
        """A chunk and its stats, the timer's stages popped into them; the time since the previous ``sample``
        returned (less weight loads) counts as ``wait``."""
        chunks, stats = self.sample_each()
        assert len(chunks) == 1, "a worker of several policies: call sample_each"
        return chunks[0], stats

    def sample_each(self) -> tuple[list[Chunk], RolloutStats]:
        """``sample`` with the chunk cut into one chunk per policy (one chunk: one policy); ``stats.policies``
        then holds each policy's part."""
        gap, self._sync_s = self._gap.begin() - self._sync_s, 0.0
        self.timer.add("wait", max(gap, 0.0))
        rollout = self.collect()
        chunk = rollout.chunk
        chunks, parts = [chunk], None
        if isinstance(self.policy, PolicySet):
            chunks, parts = [], []
            slot_policy = np.empty(self.policy.num_slots, np.int64)
            for k, (idx, version) in enumerate(zip(self.policy.slots, self.policy.versions, strict=True)):
                slot_policy[idx] = k
                group, local = self.policy.parts[k]  # one space group: (0, idx)
                initial = None if rollout.initial_states is None else rollout.initial_states[k]
                chunks.append(split_chunk(rollout.chunks[group], local, version, initial))
            ended = slot_policy[np.asarray(rollout.episode_slots, np.int64)]
            for k, part in enumerate(chunks):
                records = [r for r, p in zip(rollout.episodes, ended, strict=True) if p == k]
                parts.append(PolicyRollout(part.size, part.policy_version, episodes_of(records)))
        stats = RolloutStats(
            worker_id=self.worker_id,
            num_steps=sum(c.size for c in rollout.chunks),
            policy_version=chunk.policy_version,
            episodes=episodes_of(rollout.episodes),
            timings=self.timer.pop(),
            env_restarts=rollout.env_restarts,
            epsilon=getattr(self.policy, "epsilon", None),
            policies=parts,
            inference_life=getattr(self.actions, "life", None),
            inference_actor=getattr(self.actions, "index", None),
        )
        self._gap.end()
        return chunks, stats

    def collect(self) -> Rollout:
        """Step the envs for one chunk (``env`` and ``inference`` stages go to the timer, which keeps them).

        A local policy acts right before each step (so only for steps that are taken, none past an A3C segment's
        cut, and after a recurrent state's reset). With a central source each split's next actions are asked
        for as soon as its step is written, and are computed while the other splits step."""
        steps, splits, source, timer = self.rollout_length, self.splits, self.actions, self.timer
        memory, period, cut = self.memory, self.record_state_every, self.cut_at_episode_end
        traj = Trajectory(steps, self._obs, self.num_slots, self._slot_group)
        obs = traj.obs
        initial = None if memory is None else memory.states(self.num_slots)
        restarts_before = sum(e.restarts for e in splits)
        bounds = [0]
        for e in splits:
            bounds.append(bounds[-1] + e.num_envs)
        cols: list[slice | None] = [slice(a, b) for a, b in itertools.pairwise(bounds)] if len(splits) > 1 else [None]
        """Each split's slots (None: the one split's, every slot)."""
        core_states: list[np.ndarray] = []
        core_index: list[np.ndarray] = []
        ahead = not isinstance(source, LocalActions)
        """A central source: each split's next actions are asked for as soon as its step is written."""
        pending: list[Any] = []
        if ahead:
            with timer.stage("inference"):
                pending = [source.submit(s, _rows_at(obs, 0, c)) for s, c in enumerate(cols)]
        taken, ended_any = 0, False
        act, write, submit, grouped = traj.act, traj.step, source.submit, self.grouped
        for t in range(steps):
            for s, (env, c) in enumerate(zip(splits, cols, strict=True)):
                with timer.stage("inference"):
                    acted = source.wait(pending[s]) if ahead else submit(s, _rows_at(obs, t, c))
                act(t, c, acted)
                step: Any
                with timer.stage("env"):
                    if grouped:
                        step = cast(GroupedVectorEnv, env).step_groups(acted.actions)
                        step_obs = step.obs
                    else:
                        step = env.step(acted.actions[0])
                        step_obs = [step.obs]
                if memory is not None or cut:
                    ended = step.terminated | step.truncated
                    if memory is not None:  # a slot whose episode ended (or whose env crashed) starts from zeros
                        memory.reset_states(ended)
                        if period:
                            self._record_states(memory, t + 1, ended, period, core_states, core_index)
                    ended_any = ended_any or bool(ended.any())
                write(t, c, step, step_obs, env if grouped else None)
                if ahead and t + 1 < steps:
                    with timer.stage("inference"):
                        pending[s] = submit(s, _rows_at(obs, t + 1, c))
            taken = t + 1
            if cut and ended_any:
                break
        self._obs = [o[taken].copy() for o in obs]
        self.env_steps += taken * self.num_slots
        chunks = traj.chunks(taken, self.worker_id, self._seq)
        self._seq += 1
        if memory is not None and isinstance(initial, np.ndarray):
            chunks[0].initial_state = initial
            if period:
                chunks[0].core_states = _rows(core_states, (0, memory.state_size), np.float32)
                chunks[0].core_index = _rows(core_index, (0, 2), np.int64)
        parts = initial if isinstance(initial, list) else None
        restarts = sum(e.restarts for e in splits) - restarts_before
        groups = chunks if self.grouped else None
        return Rollout(chunks[0], traj.episodes, restarts, traj.episode_slots, parts, groups=groups)

    def _record_states(
        self,
        memory: Stateful,
        t: int,
        ended: np.ndarray,
        period: int,
        states: list[np.ndarray],
        index: list[np.ndarray],
    ) -> None:
        """After a step: the states slots act from at step ``t`` where that is ``period``, ``2 * period``, ...
        steps into their episode (the zero state at an episode's start needs no record)."""
        since = self._since_start
        since[ended] = 0
        since[~ended] += 1
        rows = np.flatnonzero(~ended & (since % period == 0))
        if rows.size:
            current = memory.states(len(since))
            assert isinstance(current, np.ndarray), "recorded states need a single recurrent policy"
            states.append(current[rows])
            index.append(np.stack([np.full(rows.size, t, np.int64), rows.astype(np.int64)], axis=1))


def _rows_at(obs: list[np.ndarray], t: int, c: slice | None) -> list[np.ndarray]:
    """Each group's observations at step ``t`` of slots ``c`` (None: every slot), as views."""
    if c is None:
        return [o[t] for o in obs]
    return [o[t, c] for o in obs]


def _rows(parts: list[np.ndarray], empty: tuple[int, int], dtype: type) -> np.ndarray:
    return np.concatenate(parts) if parts else np.zeros(empty, dtype)


def episodes_of(records: list[dict[str, float]]) -> Episodes:
    """Episode records {"return", "length", extras...} -> an Episodes of arrays (extras every record has)."""
    if not records:
        return Episodes()
    extras = set(records[0]) - {"return", "length"}
    for record in records[1:]:
        extras &= set(record)
    return Episodes(
        returns=np.array([r["return"] for r in records], np.float64),
        lengths=np.array([r["length"] for r in records], np.int64),
        extras={k: np.array([r[k] for r in records], np.float64) for k in sorted(extras)},
    )

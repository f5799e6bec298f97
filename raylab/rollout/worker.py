"""RolloutWorker: steps a vector of envs with a local policy and returns ``steps x envs`` chunks.

The one rollout path of every algorithm: the Ray topologies wrap it in an actor (apex_dqn, ppo, appo), the
local topology calls it directly, and A3C's worker (raylab.rollout.a3c) collects its segments with it.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np

from raylab.envs.vector import VectorEnv
from raylab.metrics.timing import GapTimer, StageTimer
from raylab.rollout.collected import Rollout
from raylab.rollout.groups import GroupedRollout
from raylab.rollout.policies import Policy, PolicySet, split_chunk
from raylab.types import Chunk, Episodes, PolicyRollout, RolloutStats, Stateful, Weights


class RolloutWorker:
    """Owns a vector env and a policy; ``sample()`` takes ``rollout_length`` steps of every env.

    ``cut_at_episode_end`` ends a chunk early, right after the first step at which any env's episode ends
    (terminated, truncated or crashed): A3C's segments. Its chunks then hold 1 to ``rollout_length`` steps.
    """

    def __init__(
        self,
        env: VectorEnv,
        policy: Policy,
        worker_id: int,
        rollout_length: int,
        timer: StageTimer | None = None,
        cut_at_episode_end: bool = False,
        record_state_every: int = 0,
    ):
        """``policy`` may be a PolicySet (several policies, raylab/rollout/policies.py): ``sample_each`` then
        cuts each chunk into one chunk per policy. ``record_state_every`` (R2D2's algo.sequence.period, a
        recurrent policy): the chunk also carries the state each slot acts from every that many steps into its
        episode (``Chunk.core_states``), where the replay starts a sequence mid-episode."""
        self.env = env
        self.policy = policy
        self.worker_id = worker_id
        self.rollout_length = rollout_length
        self.cut_at_episode_end = cut_at_episode_end
        self.timer = timer if timer is not None else StageTimer()
        self._gap = GapTimer()
        """Time between handing back a chunk and being asked for the next one ("wait"): parked by the
        rate limiter, queued behind the driver, or (serial topology) the learner's and other workers' turn;
        weight loads in between are weight_sync, not wait."""
        self._sync_s = 0.0
        self._grouped = GroupedRollout.of(env, policy)
        """Agents of several space groups: their path (raylab/rollout/groups.py); None: one space, below."""
        self._obs = env.reset().copy() if self._grouped is None else np.zeros(0)
        self.memory: Stateful | None = policy if isinstance(policy, Stateful) and policy.state_size > 0 else None
        """The policy, when it keeps a state per slot (model.recurrent): reset here at every episode's end."""
        self._seq = 0
        self.env_steps = 0
        self.record_state_every = int(record_state_every) if self.memory is not None else 0
        self._since_start = np.zeros(len(self._obs), np.int64)
        """Steps each slot has taken in its current episode (record_state_every)."""

    def next_seq(self) -> int:
        """The new chunk's ``seq``: the worker's chunk counter, advanced."""
        self._seq += 1
        return self._seq - 1

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
        if self._grouped is not None:
            self._grouped.reset()
            slots = self._grouped.policy.num_slots
        else:
            self._obs = self.env.reset().copy()
            slots = len(self._obs)
        if self.memory is not None:
            self.memory.reset_states(np.ones(slots, bool))
        self._since_start = np.zeros(slots, np.int64)

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
        )
        self._gap.end()
        return chunks, stats

    def collect(self) -> Rollout:
        """Step the envs for one chunk (``env`` and ``inference`` stages go to the timer, which keeps them)."""
        if self._grouped is not None:
            return self._grouped.collect(self)
        steps, num_envs = self.rollout_length, self.env.num_envs
        obs = np.empty((steps + 1, *self._obs.shape), self._obs.dtype)
        actions: np.ndarray | None = None  # [T, E] int64, or [T, E, D] float32 (Box): the first action says
        rewards = np.empty((steps, num_envs), np.float32)
        terminated = np.empty((steps, num_envs), bool)
        truncated = np.empty((steps, num_envs), bool)
        restarted: np.ndarray | None = None
        log_probs: np.ndarray | None = None
        final_obs: list[np.ndarray] = []
        final_index: list[tuple[int, int]] = []
        episodes: list[dict[str, float]] = []
        episode_slots: list[int] = []
        obs[0] = self._obs
        version = self.policy.version
        memory = self.memory
        initial = None if memory is None else memory.states(num_envs)
        period = self.record_state_every
        core_states: list[np.ndarray] = []
        core_index: list[np.ndarray] = []
        restarts_before = self.env.restarts
        timer = self.timer
        taken = 0
        for t in range(steps):
            with timer.stage("inference"):
                action = self.policy.act(obs[t])
                if actions is None:
                    actions = np.empty((steps, *action.shape), action.dtype)
                actions[t] = action
                if self.policy.last_log_probs is not None:
                    if log_probs is None:
                        log_probs = np.empty((steps, num_envs), np.float32)
                    log_probs[t] = self.policy.last_log_probs
            with timer.stage("env"):
                step = self.env.step(actions[t])
            if memory is not None:  # a slot whose episode ended (or whose env crashed) starts from zeros
                ended = step.terminated | step.truncated
                memory.reset_states(ended)
                if period:
                    self._record_states(memory, t + 1, ended, period, core_states, core_index)
            obs[t + 1] = step.obs
            rewards[t] = step.rewards
            terminated[t] = step.terminated
            truncated[t] = step.truncated
            for env_index, last_obs in step.final_obs:
                final_obs.append(last_obs)
                final_index.append((t, env_index))
            for slot, record in step.episodes:
                episodes.append(record)
                episode_slots.append(slot)
            if step.restarted is not None:
                if restarted is None:
                    restarted = np.zeros((steps, num_envs), bool)
                restarted[t] = step.restarted
            taken = t + 1
            if self.cut_at_episode_end and (step.terminated | step.truncated).any():
                break
        assert actions is not None  # rollout_length >= 1
        if taken < steps:  # cut at an episode's end
            obs, actions, rewards = obs[: taken + 1], actions[:taken], rewards[:taken]
            terminated, truncated = terminated[:taken], truncated[:taken]
            restarted = None if restarted is None else restarted[:taken]
            log_probs = None if log_probs is None else log_probs[:taken]
        self._obs = obs[taken].copy()
        self.env_steps += taken * num_envs
        shape = self._obs.shape[1:]
        chunk = Chunk(
            obs=obs,
            actions=actions,
            rewards=rewards,
            terminated=terminated,
            truncated=truncated,
            final_obs=np.stack(final_obs) if final_obs else np.zeros((0, *shape), obs.dtype),
            final_index=np.array(final_index, np.int64).reshape(-1, 2),
            policy_version=version,
            worker_id=self.worker_id,
            seq=self._seq,
            restarted=restarted,
            log_probs=log_probs,
            initial_state=initial if isinstance(initial, np.ndarray) else None,
            core_states=_rows(core_states, (0, memory.state_size), np.float32) if period and memory else None,
            core_index=_rows(core_index, (0, 2), np.int64) if period else None,
        )
        self._seq += 1
        parts = initial if isinstance(initial, list) else None
        return Rollout(chunk, episodes, self.env.restarts - restarts_before, episode_slots, parts)

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

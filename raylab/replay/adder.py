"""Chunks -> n-step transitions (Acme's NStepTransitionAdder, vectorized over steps and envs).

Each worker's chunks form one stream per env. The last ``n - 1`` steps of a chunk cannot be completed until
the next chunk arrives, so they are carried per worker and joined with its next chunk; a gap in ``seq``
(a restarted worker) drops the carry instead of joining unrelated steps, and a step where an env crashed
(``chunk.restarted``) invalidates every transition whose window reaches it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from raylab.algos.returns import n_step_targets
from raylab.types import Chunk, Transitions


@dataclass
class _Stream:
    """Steps of one worker not yet turned into transitions (same layout as a Chunk)."""

    obs: np.ndarray  # [L + 1, E, ...]
    actions: np.ndarray  # [L, E]
    rewards: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray
    finals: dict[tuple[int, int], np.ndarray]  # (t, e) -> last obs of an episode truncated at step t
    seq: int
    restarted: np.ndarray | None = None  # [L, E]: an env crashed at step t (no real outcome)

    @classmethod
    def of(cls, chunk: Chunk) -> _Stream:
        finals = {(int(t), int(e)): chunk.final_obs[k] for k, (t, e) in enumerate(chunk.final_index)}
        return cls(
            chunk.obs, chunk.actions, chunk.rewards, chunk.terminated, chunk.truncated, finals, chunk.seq,
            chunk.restarted,
        )  # fmt: skip

    def extend(self, chunk: Chunk) -> _Stream:
        offset = self.actions.shape[0]
        finals = dict(self.finals)
        finals.update({(int(t) + offset, int(e)): chunk.final_obs[k] for k, (t, e) in enumerate(chunk.final_index)})
        return _Stream(
            np.concatenate([self.obs[:-1], chunk.obs]),
            np.concatenate([self.actions, chunk.actions]),
            np.concatenate([self.rewards, chunk.rewards]),
            np.concatenate([self.terminated, chunk.terminated]),
            np.concatenate([self.truncated, chunk.truncated]),
            finals,
            chunk.seq,
            _join_masks(self.restarted, chunk.restarted, self.actions.shape, chunk.actions.shape),
        )

    def drop(self, steps: int) -> _Stream:
        finals = {(t - steps, e): o for (t, e), o in self.finals.items() if t >= steps}
        restarted = None if self.restarted is None else self.restarted[steps:]
        return _Stream(
            self.obs[steps:], self.actions[steps:], self.rewards[steps:],
            self.terminated[steps:], self.truncated[steps:], finals, self.seq,
            restarted if restarted is not None and restarted.any() else None,
        )  # fmt: skip


def _join_masks(
    a: np.ndarray | None, b: np.ndarray | None, a_shape: tuple[int, ...], b_shape: tuple[int, ...]
) -> np.ndarray | None:
    if a is None and b is None:
        return None
    return np.concatenate(
        [a if a is not None else np.zeros(a_shape, bool), b if b is not None else np.zeros(b_shape, bool)]
    )


class NStepAdder:
    """``add(chunk) -> Transitions``: every step whose n-step window is complete, in time-major order."""

    def __init__(self, n: int, gamma: float):
        self.n = int(n)
        self.gamma = float(gamma)
        self._streams: dict[int, _Stream] = {}
        self.dropped_streams = 0
        """Carries dropped because a worker's chunks did not follow on (restarts)."""
        self.dropped_transitions = 0
        """Transitions dropped because their n-step window reached a crashed env's step."""

    def add(self, chunk: Chunk) -> Transitions:
        carry = self._streams.get(chunk.worker_id)
        if carry is not None and (carry.seq + 1 != chunk.seq or carry.actions.shape[1] != chunk.num_envs):
            carry = None
            self.dropped_streams += 1
        stream = carry.extend(chunk) if carry is not None else _Stream.of(chunk)
        length, num_envs = stream.actions.shape
        ready = max(0, length - self.n + 1)
        self._streams[chunk.worker_id] = stream.drop(ready)
        return self._transitions(stream, ready, num_envs)

    def _transitions(self, stream: _Stream, ready: int, num_envs: int) -> Transitions:
        if ready == 0:
            empty = stream.obs[:0].reshape(0, *stream.obs.shape[2:])
            return Transitions(empty, stream.actions[:0, 0], np.zeros(0, np.float32), np.zeros(0, np.float32), empty)
        targets = n_step_targets(
            stream.rewards, stream.terminated, stream.truncated, self.gamma, self.n, ready, stream.restarted
        )
        start = np.arange(ready)[:, None]
        env = np.arange(num_envs)[None, :]
        next_obs = stream.obs[start + targets.lengths, env]
        for t, e in zip(*np.nonzero(targets.truncated), strict=True):
            next_obs[t, e] = stream.finals[(int(t + targets.lengths[t, e] - 1), int(e))]
        keep = targets.valid.reshape(-1)
        flat = ready * num_envs
        transitions = Transitions(
            obs=stream.obs[:ready].reshape(flat, *stream.obs.shape[2:]),
            actions=stream.actions[:ready].reshape(flat),
            rewards=targets.returns.reshape(flat),
            discounts=targets.discounts.reshape(flat),
            next_obs=next_obs.reshape(flat, *stream.obs.shape[2:]),
        )
        if keep.all():
            return transitions
        self.dropped_transitions += int((~keep).sum())
        return Transitions(
            *(getattr(transitions, f)[keep] for f in ("obs", "actions", "rewards", "discounts", "next_obs"))
        )

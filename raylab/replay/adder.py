"""Chunks -> n-step transitions (Acme's NStepTransitionAdder, vectorized over steps and envs).

Each worker's chunks form one stream per env. The last ``n - 1`` steps of a chunk cannot be completed until
the next chunk arrives, so they are carried per worker and joined with its next chunk; a gap in ``seq``
(a restarted worker) drops the carry instead of joining unrelated steps.
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

    @classmethod
    def of(cls, chunk: Chunk) -> _Stream:
        finals = {(int(t), int(e)): chunk.final_obs[k] for k, (t, e) in enumerate(chunk.final_index)}
        return cls(chunk.obs, chunk.actions, chunk.rewards, chunk.terminated, chunk.truncated, finals, chunk.seq)

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
        )

    def drop(self, steps: int) -> _Stream:
        finals = {(t - steps, e): o for (t, e), o in self.finals.items() if t >= steps}
        return _Stream(
            self.obs[steps:], self.actions[steps:], self.rewards[steps:],
            self.terminated[steps:], self.truncated[steps:], finals, self.seq,
        )  # fmt: skip


class NStepAdder:
    """``add(chunk) -> Transitions``: every step whose n-step window is complete, in time-major order."""

    def __init__(self, n: int, gamma: float):
        self.n = int(n)
        self.gamma = float(gamma)
        self._streams: dict[int, _Stream] = {}
        self.dropped_streams = 0
        """Carries dropped because a worker's chunks did not follow on (restarts)."""

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
        targets = n_step_targets(stream.rewards, stream.terminated, stream.truncated, self.gamma, self.n, ready)
        start = np.arange(ready)[:, None]
        env = np.arange(num_envs)[None, :]
        next_obs = stream.obs[start + targets.lengths, env]
        for t, e in zip(*np.nonzero(targets.truncated), strict=True):
            next_obs[t, e] = stream.finals[(int(t + targets.lengths[t, e] - 1), int(e))]
        flat = ready * num_envs
        return Transitions(
            obs=stream.obs[:ready].reshape(flat, *stream.obs.shape[2:]),
            actions=stream.actions[:ready].reshape(flat),
            rewards=targets.returns.reshape(flat),
            discounts=targets.discounts.reshape(flat),
            next_obs=next_obs.reshape(flat, *stream.obs.shape[2:]),
        )

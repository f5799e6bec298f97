"""Chunks -> R2D2's replay sequences (Acme's SequenceAdder with a period, and its stored start state).

Each worker's chunks form one stream per env slot, carried between chunks as in ``NStepAdder`` (a gap in
``seq`` drops the carry). A sequence starts

- at every episode start, with the zero state and no burn-in (the state is exact there: every step of it trains);
- every ``period`` steps into an episode, with the state the worker recorded there (``Chunk.core_states``) and
  ``burn_in`` warm-up steps;
- at step 0 of a fresh stream (a worker's first chunk, or the first after a gap), with the chunk's
  ``initial_state``: no burn-in when that state is zero (an episode's start), else ``burn_in``,

and holds up to ``burn_in + trace`` steps plus the observation after its last step (the bootstrap). It never
crosses an episode: it ends early at its episode's end (``terminal`` when the episode terminated; a truncated
episode's last observation is its real ``final_obs``) and before a step where the env crashed (that step has no
real outcome; the observation it was taken in becomes the bootstrap). Shorter sequences are padded to the full
length by repeating their last observation (padding is never trained: ``length`` says where it starts). A
sequence whose steps would all be burn-in is not stored: an earlier overlapping sequence trains its steps
(``period <= trace``). n-step targets are the learner's (raylab/algos/dqn/r2d2.py), computed inside each
sequence from ``rewards`` as Acme's R2D2 learner does, so the replay stores one reward per step and n is a
loss setting.

With frame de-duplication (raylab/replay/frames.py) ``obs`` holds frame ids ``[length + 1, k]``; the adder
never looks inside an observation, so ids pass through like any array.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from raylab.replay.adder import _Stream
from raylab.types import Chunk


@dataclass
class Sequences:
    """Fixed-length sequences ready for replay (``N`` of them, ``m = burn_in + trace`` steps each)."""

    obs: np.ndarray
    """[N, m + 1, ...] observations (frame ids with de-duplication), padded after ``length`` + 1."""
    actions: np.ndarray
    """[N, m] int64."""
    rewards: np.ndarray
    """[N, m] float32."""
    state: np.ndarray
    """[N, S] float32: the state the policy acted from at the sequence's first step."""
    burn_in: np.ndarray
    """[N] int16: warm-up steps (0 at an episode's start)."""
    length: np.ndarray
    """[N] int16: real steps (<= m); ``obs[length]`` is the bootstrap observation."""
    terminal: np.ndarray
    """[N] bool: the episode terminated at step ``length - 1`` (no bootstrap there)."""

    def __len__(self) -> int:
        return int(self.actions.shape[0])


SEQUENCE_FIELDS = ("obs", "actions", "rewards", "state", "burn_in", "length", "terminal")


@dataclass
class _Starts:
    """Sequence starts of one worker's stream not yet emitted."""

    pos: np.ndarray  # [P] stream positions
    env: np.ndarray  # [P]
    burn_in: np.ndarray  # [P] int
    state: np.ndarray  # [P, S]

    def take(self, keep: np.ndarray) -> _Starts:
        return _Starts(self.pos[keep], self.env[keep], self.burn_in[keep], self.state[keep])

    def join(self, other: _Starts) -> _Starts:
        return _Starts(
            np.concatenate([self.pos, other.pos]), np.concatenate([self.env, other.env]),
            np.concatenate([self.burn_in, other.burn_in]), np.concatenate([self.state, other.state]),
        )  # fmt: skip


class SequenceAdder:
    """``add(chunk) -> Sequences``: every sequence of the worker's stream that completed with this chunk."""

    def __init__(self, burn_in: int, trace: int, state_size: int):
        self.burn_in = int(burn_in)
        self.length = int(burn_in) + int(trace)
        self.state_size = int(state_size)
        self._streams: dict[int, tuple[_Stream, _Starts]] = {}
        self.dropped_streams = 0
        """Carries dropped because a worker's chunks did not follow on (restarts)."""
        self.skipped = 0
        """Sequences not stored: all burn-in (their episode ended first), or cut to nothing by a crash."""

    def add(self, chunk: Chunk) -> Sequences:
        if chunk.initial_state is None or chunk.core_states is None or chunk.core_index is None:
            raise ValueError(
                "sequence replay (R2D2) needs a recurrent policy's chunks with recorded states (record_state_every)"
            )
        carry = self._streams.get(chunk.worker_id)
        if carry is not None and (carry[0].seq + 1 != chunk.seq or carry[0].actions.shape[1] != chunk.num_envs):
            carry = None
            self.dropped_streams += 1
        if carry is None:
            stream, offset = _Stream.of(chunk), 0
            first = chunk.initial_state.astype(np.float32)
            envs = np.arange(chunk.num_envs)
            starts = _Starts(
                np.zeros(chunk.num_envs, np.int64), envs,
                np.where(np.any(first != 0, axis=1), self.burn_in, 0), first,
            )  # fmt: skip
        else:
            offset = carry[0].actions.shape[0]
            stream, starts = carry[0].extend(chunk), carry[1]
        starts = starts.join(self._new_starts(chunk, offset))
        out, pending = self._emit(stream, starts)
        keep = int(pending.pos.min()) if len(pending.pos) else stream.actions.shape[0]
        pending.pos = pending.pos - keep
        self._streams[chunk.worker_id] = (stream.drop(keep), pending)
        return out

    def _new_starts(self, chunk: Chunk, offset: int) -> _Starts:
        """Episode starts at chunk steps 1..T (step 0 was the previous chunk's T) and the recorded mid-episode
        starts, in stream positions."""
        assert chunk.core_states is not None and chunk.core_index is not None
        t, e = np.nonzero(chunk.terminated | chunk.truncated)
        zeros = np.zeros((len(t), self.state_size), np.float32)
        index = chunk.core_index.reshape(-1, 2)
        return _Starts(
            np.concatenate([offset + t + 1, offset + index[:, 0]]).astype(np.int64),
            np.concatenate([e, index[:, 1]]).astype(np.int64),
            np.concatenate([np.zeros(len(t), np.int64), np.full(len(index), self.burn_in, np.int64)]),
            np.concatenate([zeros, chunk.core_states.reshape(-1, self.state_size).astype(np.float32)]),
        )

    def _emit(self, stream: _Stream, starts: _Starts) -> tuple[Sequences, _Starts]:
        m, steps = self.length, stream.actions.shape[0]
        ended = stream.terminated | stream.truncated
        crashed = stream.restarted
        rows: list[tuple[int, int, int, int, bool, np.ndarray | None]] = []  # (k, p, e, length, terminal, final)
        pending = np.zeros(len(starts.pos), bool)
        for k, (p, e) in enumerate(zip(starts.pos.tolist(), starts.env.tolist(), strict=True)):
            window = ended[p : min(p + m, steps), e]
            hits = np.flatnonzero(window)
            if hits.size:
                i = int(hits[0])
                if crashed is not None and crashed[p + i, e]:  # the crashed step has no outcome: end before it
                    length, terminal, final = i, False, None
                else:
                    length, terminal = i + 1, bool(stream.terminated[p + i, e])
                    final = stream.finals.get((p + i, e)) if stream.truncated[p + i, e] and not terminal else None
            elif p + m <= steps:
                length, terminal, final = m, False, None
            else:
                pending[k] = True
                continue
            if length <= starts.burn_in[k]:
                self.skipped += 1
                continue
            rows.append((k, p, e, length, terminal, final))
        return self._pack(stream, starts, rows), starts.take(pending)

    def _pack(
        self, stream: _Stream, starts: _Starts, rows: list[tuple[int, int, int, int, bool, np.ndarray | None]]
    ) -> Sequences:
        m, n = self.length, len(rows)
        obs_shape, obs_dtype = stream.obs.shape[2:], stream.obs.dtype
        obs = np.empty((n, m + 1, *obs_shape), obs_dtype)
        actions = np.zeros((n, m), stream.actions.dtype)
        rewards = np.zeros((n, m), np.float32)
        for j, (_, p, e, length, _, final) in enumerate(rows):
            obs[j, : length + 1] = stream.obs[p : p + length + 1, e]
            if final is not None:
                obs[j, length] = final
            obs[j, length + 1 :] = obs[j, length]  # padding: the bootstrap observation again
            actions[j, :length] = stream.actions[p : p + length, e]
            rewards[j, :length] = stream.rewards[p : p + length, e]
        ks = np.array([r[0] for r in rows], np.int64)
        return Sequences(
            obs=obs,
            actions=actions,
            rewards=rewards,
            state=starts.state[ks].reshape(n, self.state_size),
            burn_in=starts.burn_in[ks].astype(np.int16),
            length=np.array([r[3] for r in rows], np.int16),
            terminal=np.array([r[4] for r in rows], bool),
        )

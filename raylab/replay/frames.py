"""Frame de-duplication: stacked image observations stored as one copy of each frame plus small id arrays.

A frame-stacked observation (k frames of C channels, channel-first) shares k - 1 frames with the observation
before it, and an n-step transition's ``obs`` and ``next_obs`` are two such stacks. Storing transitions as
arrays would keep each frame up to 2k times (8 times for Atari's k = 4); here each frame is stored once in a
reference-counted ``FramePool`` and a transition keeps 2k frame ids (32 bytes), so replay memory per
transition is about one frame.

Sharing is decided by content, not assumed: ``obs[t]`` reuses ``obs[t - 1]``'s last k - 1 frames only where
they are equal, so any wrapper (resets that pad with the first frame, envs that restart) stays correct, and
within a fresh stack repeated frames (reset padding) are stored once.

Lifetime: a frame is referenced by every stored transition whose ``obs`` or ``next_obs`` contains it, and is
*held* by the stream that produced it until every transition that can contain it has been emitted (its
step + k + n steps later). A frame whose count reaches zero goes back to the free list. R2D2's sequences
(raylab/replay/sequences.py) work the same way: a sequence's ``obs`` are ``[m + 1, k]`` ids, and a frame is
held for k + m steps (m = burn_in + trace), the longest a sequence containing it takes to complete.
"""

from __future__ import annotations

import dataclasses
from collections import deque
from dataclasses import dataclass

import numpy as np

from raylab.types import Chunk

ID_DTYPE = np.dtype(np.int32)


class FramePool:
    """Reference-counted frames ``[F, C, H, W]`` addressed by id; grows by a sixteenth when full."""

    def __init__(self, frame_shape: tuple[int, ...], dtype: np.dtype, capacity: int):
        self.frame_shape = tuple(frame_shape)
        self.frames = np.zeros((max(1, capacity), *self.frame_shape), dtype)
        self.refs = np.zeros(len(self.frames), np.int32)
        self._free = np.arange(len(self.frames) - 1, -1, -1, dtype=ID_DTYPE)  # a stack: pop from the end
        self._num_free = len(self.frames)
        self.grown = 0

    @property
    def capacity(self) -> int:
        return len(self.frames)

    @property
    def live(self) -> int:
        return self.capacity - self._num_free

    @property
    def nbytes(self) -> int:
        return self.frames.nbytes + self.refs.nbytes + self._free.nbytes

    def alloc(self, frames: np.ndarray) -> np.ndarray:
        """Store ``frames`` [m, C, H, W]; returns their ids, each with one reference (the caller's hold)."""
        m = len(frames)
        if m > self._num_free:
            self._grow(m - self._num_free)
        ids = self._free[self._num_free - m : self._num_free][::-1].copy()
        self._num_free -= m
        self.frames[ids] = frames
        self.refs[ids] = 1
        return ids

    def incref(self, ids: np.ndarray) -> None:
        np.add.at(self.refs, ids.reshape(-1), 1)

    def decref(self, ids: np.ndarray) -> None:
        flat = ids.reshape(-1)
        np.subtract.at(self.refs, flat, 1)
        dead = np.unique(flat[self.refs[flat] == 0])
        if dead.size:
            self._free[self._num_free : self._num_free + dead.size] = dead
            self._num_free += dead.size

    def gather(self, ids: np.ndarray) -> np.ndarray:
        """Stacks for ids ``[..., k]``: frames concatenated along channels, ``[..., k * C, H, W]``."""
        frames = self.frames[ids]  # [..., k, C, H, W]
        lead = ids.shape[:-1]
        return frames.reshape(*lead, ids.shape[-1] * self.frame_shape[0], *self.frame_shape[1:])

    def restore(self, frames: np.ndarray, *id_arrays: np.ndarray) -> None:
        """Take ``frames`` (a snapshot's pool, owned from now on: not copied, which cost 2.0 of 4.5 s for
        Mario's 756 MiB) with the references of the stored transitions' ``id_arrays`` only: frames nobody
        stores (a stream's holds) go back to the free list."""
        if frames.shape[1:] != self.frames.shape[1:] or frames.dtype != self.frames.dtype:
            raise ValueError(f"frames {frames.dtype}{list(frames.shape[1:])} do not fit this pool")
        self.frames = frames if frames.flags.writeable else frames.copy()
        self.refs = np.zeros(len(frames), np.int32)
        for ids in id_arrays:
            np.add.at(self.refs, ids.reshape(-1), 1)
        free = np.flatnonzero(self.refs == 0)[::-1].astype(ID_DTYPE)  # popped from the end: lowest ids first
        self._free = np.empty(len(frames), ID_DTYPE)
        self._free[: len(free)] = free
        self._num_free = len(free)

    def _grow(self, at_least: int) -> None:
        old = self.capacity
        extra = max(at_least, old // 16, 1)
        self.frames = np.concatenate([self.frames, np.zeros((extra, *self.frame_shape), self.frames.dtype)])
        self.refs = np.concatenate([self.refs, np.zeros(extra, np.int32)])
        free = np.empty(old + extra, ID_DTYPE)
        free[: self._num_free] = self._free[: self._num_free]
        free[self._num_free : self._num_free + extra] = np.arange(old + extra - 1, old - 1, -1, dtype=ID_DTYPE)
        self._free = free
        self._num_free += extra
        self.grown += 1


@dataclass
class _WorkerFrames:
    seq: int
    last_ids: np.ndarray  # [E, k] ids of the chunk's last observation (the next chunk's first)
    steps: int  # steps of this worker's stream so far
    holds: deque[tuple[int, np.ndarray]]  # (release once steps >= this, ids allocated)


class FrameDedup:
    """``encode(chunk)``: the chunk with ``obs`` [T+1, E, k] and ``final_obs`` [K, k] as frame ids.

    Call ``release(worker_id)`` after the transitions built from the encoded chunk are stored (and hold
    their own references): it drops the stream's holds on frames no later transition can contain.
    """

    def __init__(self, pool: FramePool, stack: int, n_step: int):
        """``n_step``: how many steps after an observation the items that contain it are complete (DQN's n-step
        window; R2D2's sequence length, a sequence starting up to that many steps before its last observation)."""
        self.pool = pool
        self.k = int(stack)
        self.channels = pool.frame_shape[0]
        self.hold_steps = self.k + int(n_step)
        self._workers: dict[int, _WorkerFrames] = {}

    def encode(self, chunk: Chunk) -> Chunk:
        obs = chunk.obs
        steps, num_envs = obs.shape[0] - 1, obs.shape[1]
        state = self._workers.get(chunk.worker_id)
        if state is not None and (state.seq + 1 != chunk.seq or state.last_ids.shape[0] != num_envs):
            self.drop(chunk.worker_id)  # the stream broke (a restarted worker): its carry is gone too
            state = None
        allocated: list[np.ndarray] = []
        ids = np.empty((steps + 1, num_envs, self.k), ID_DTYPE)
        if state is not None and np.array_equal(self.pool.gather(state.last_ids), obs[0]):
            ids[0] = state.last_ids
        else:
            ids[0] = self._store_stacks(obs[0], allocated)
        c = self.channels
        shared = (obs[1:, :, :-c] == obs[:-1, :, c:]).reshape(steps, num_envs, -1).all(axis=2)
        for t in range(1, steps + 1):
            s = shared[t - 1]
            if s.any():
                new = self.pool.alloc(obs[t, s, -c:])
                allocated.append(new)
                ids[t, s, :-1] = ids[t - 1, s, 1:]
                ids[t, s, -1] = new
            if not s.all():
                ids[t, ~s] = self._store_stacks(obs[t, ~s], allocated)
        final_ids = np.empty((len(chunk.final_index), self.k), ID_DTYPE)
        for j, (t, e) in enumerate(chunk.final_index):
            before = obs[t, e]
            final = chunk.final_obs[j]
            if np.array_equal(final[:-c], before[c:]):
                new = self.pool.alloc(final[None, -c:])
                allocated.append(new)
                final_ids[j, :-1] = ids[t, e, 1:]
                final_ids[j, -1] = new[0]
            else:
                final_ids[j] = self._store_stacks(final[None], allocated)[0]
        if state is None:
            state = self._workers[chunk.worker_id] = _WorkerFrames(chunk.seq, ids[-1], 0, deque())
        state.seq, state.last_ids = chunk.seq, ids[-1].copy()
        state.steps += steps
        if allocated:
            state.holds.append((state.steps + self.hold_steps, np.concatenate(allocated)))
        return dataclasses.replace(chunk, obs=ids, final_obs=final_ids)

    def release(self, worker_id: int) -> None:
        state = self._workers.get(worker_id)
        if state is None:
            return
        while state.holds and state.holds[0][0] <= state.steps:
            self.pool.decref(state.holds.popleft()[1])

    def drop(self, worker_id: int) -> None:
        """Forget a worker's stream and release all its holds."""
        state = self._workers.pop(worker_id, None)
        while state is not None and state.holds:
            self.pool.decref(state.holds.popleft()[1])

    def restore(self, frames: np.ndarray, *id_arrays: np.ndarray) -> None:
        """A snapshot's frames, referenced by the stored transitions only; every worker's stream starts afresh."""
        self._workers = {}
        self.pool.restore(frames, *id_arrays)

    def _store_stacks(self, stacks: np.ndarray, allocated: list[np.ndarray]) -> np.ndarray:
        """Ids for whole stacks [m, k * C, H, W]; a frame equal to the one before it in its stack is stored once."""
        m = len(stacks)
        frames = stacks.reshape(m, self.k, self.channels, *stacks.shape[2:])
        repeat = np.zeros((m, self.k), bool)
        repeat[:, 1:] = (frames[:, 1:] == frames[:, :-1]).reshape(m, self.k - 1, -1).all(axis=2)
        new = self.pool.alloc(frames[~repeat])
        allocated.append(new)
        ids = np.empty((m, self.k), ID_DTYPE)
        ids[~repeat] = new
        for j in range(1, self.k):  # a repeated frame takes the id of the frame before it
            ids[repeat[:, j], j] = ids[repeat[:, j], j - 1]
        return ids

"""The Learner's data path for on-policy rounds: chunks joined on its device, minibatches drawn there.

- ``RoundLoader.load(chunks)``: the chunks of a call side by side along the env axis, as a ``Round``
  (raylab.algos.objective) on the learner's device. On the CPU one chunk is viewed, not copied, and several are
  copied once into buffers kept from call to call. On CUDA each chunk goes through reused pinned host buffers
  into preallocated device buffers with non-blocking copies, so the host never waits for a transfer and frames
  cross as uint8.
- ``minibatch_rows``: ``epochs`` shuffled passes over a round's rows, drawn on its device.
- ``gather``: a minibatch's rows of every target tensor (``index_select`` into buffers kept per name: on the
  CPU 15x faster than advanced indexing for frames).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
import torch

from raylab.algos.objective import Round
from raylab.types import Chunk


def _check_joinable(chunks: Sequence[Chunk]) -> None:
    lengths = {c.num_steps for c in chunks}
    if len(lengths) != 1:
        raise ValueError(f"chunks of one round must have the same length, got {sorted(lengths)}")
    states = [c.initial_state is None for c in chunks]
    if any(states) and not all(states):
        raise ValueError("chunks of one round must all come from a recurrent policy, or none")
    logps = [c.log_probs is None for c in chunks]
    if any(logps) and not all(logps):
        raise ValueError("chunks of one round must all carry the behaviour log-probabilities, or none")


def crashed_steps(chunks: Sequence[Chunk]) -> np.ndarray | None:
    """``[T, E]`` the steps where an env crashed, over the joined envs; None when none did (host arrays only)."""
    if all(c.restarted is None or not c.restarted.any() for c in chunks):
        return None
    return np.concatenate(
        [c.restarted if c.restarted is not None else np.zeros(c.actions.shape[:2], bool) for c in chunks], axis=1
    )


def final_index(chunks: Sequence[Chunk]) -> np.ndarray:
    """``[F, 2]`` each chunk's truncated-episode indices, the env index moved to the joined envs."""
    offsets = np.cumsum([0] + [c.num_envs for c in chunks[:-1]])
    parts = [c.final_index.reshape(-1, 2) + np.array([0, off]) for c, off in zip(chunks, offsets, strict=True)]
    return np.concatenate(parts).astype(np.int64).reshape(-1, 2)


class RoundLoader:
    """Chunks into a ``Round`` on ``device``; buffers are kept between calls of the same shapes."""

    def __init__(self, device: torch.device, staging_slots: int = 2):
        self.device = device
        self.cuda = device.type == "cuda"
        self._joined: dict[str, torch.Tensor] = {}
        """Per field, the device (or CPU) buffer chunks are joined into, reused while its shape holds."""
        self._pinned: list[dict[str, torch.Tensor]] = [{} for _ in range(staging_slots)]
        self._copied: list[torch.cuda.Event | None] = [None] * staging_slots
        self._slot = 0

    def load(self, chunks: Sequence[Chunk]) -> Round:
        chunks = list(chunks)
        _check_joinable(chunks)
        first = chunks[0]
        fields = {
            "obs": [c.obs for c in chunks], "actions": [c.actions for c in chunks],
            "rewards": [c.rewards.astype(np.float32, copy=False) for c in chunks],
            "terminated": [c.terminated for c in chunks], "truncated": [c.truncated for c in chunks],
        }  # fmt: skip
        if first.log_probs is not None:
            fields["log_probs"] = [c.log_probs.astype(np.float32, copy=False) for c in chunks]  # type: ignore[union-attr]
        out = {name: self._join(name, parts, axis=1) for name, parts in fields.items()}
        finals = [c.final_obs for c in chunks]
        out["final_obs"] = self._join("final_obs", finals, axis=0)
        out["final_index"] = self._join("final_index", [final_index(chunks)], axis=0)
        state = None
        if first.initial_state is not None:
            state = self._join("initial_state", [c.initial_state for c in chunks], axis=0)  # type: ignore[misc]
        return Round(
            obs=out["obs"], actions=out["actions"], rewards=out["rewards"], terminated=out["terminated"],
            truncated=out["truncated"], final_obs=out["final_obs"], final_index=out["final_index"],
            log_probs=out.get("log_probs"), initial_state=state, crashed=crashed_steps(chunks),
        )  # fmt: skip

    def _join(self, name: str, parts: list[np.ndarray], axis: int) -> torch.Tensor:
        """``parts`` concatenated along ``axis`` on the device: one copy into a kept buffer (none for a single
        part on the CPU, which is viewed)."""
        if not self.cuda and len(parts) == 1:
            return torch.from_numpy(np.ascontiguousarray(parts[0]))
        shape = list(parts[0].shape)
        shape[axis] = sum(p.shape[axis] for p in parts)
        buf = self._buffer(self._joined, name, tuple(shape), parts[0].dtype, self.device)
        if not self.cuda:
            torch.cat([torch.from_numpy(np.ascontiguousarray(p)) for p in parts], dim=axis, out=buf)
            return buf
        offset = 0
        for k, part in enumerate(parts):
            pinned = self._stage(f"{name}/{k}", part)
            size = part.shape[axis]
            buf.narrow(axis, offset, size).copy_(pinned, non_blocking=True)
            offset += size
        return buf

    def _stage(self, key: str, array: np.ndarray) -> torch.Tensor:
        """``array`` in a pinned host buffer of the current staging slot (reused once the copies that last read
        the slot completed)."""
        buffers = self._pinned[self._slot]
        host = torch.from_numpy(np.ascontiguousarray(array))
        return self._buffer(buffers, key, tuple(host.shape), array.dtype, None).copy_(host)

    def begin(self) -> None:
        """Start a call: move to the next staging slot, waiting for the copies that last read it."""
        if not self.cuda:
            return
        self._slot = (self._slot + 1) % len(self._pinned)
        copied = self._copied[self._slot]
        if copied is not None:
            copied.synchronize()

    def end(self) -> None:
        """The call's copies are issued: mark when they complete (its staging slot is reusable after that)."""
        if self.cuda:
            event = torch.cuda.Event()
            event.record(torch.cuda.current_stream(self.device))
            self._copied[self._slot] = event

    @staticmethod
    def _buffer(
        store: dict[str, torch.Tensor], name: str, shape: tuple[int, ...], dtype: np.dtype, device: torch.device | None
    ) -> torch.Tensor:
        buf = store.get(name)
        want = torch.from_numpy(np.empty(0, dtype)).dtype
        if buf is None or tuple(buf.shape) != shape or buf.dtype != want:
            if device is None:
                buf = store[name] = torch.empty(shape, dtype=want, pin_memory=True)
            else:
                buf = store[name] = torch.empty(shape, dtype=want, device=device)
        return buf


def minibatch_rows(
    count: int, epochs: int, minibatches: int, generator: torch.Generator, device: torch.device
) -> Iterator[torch.Tensor]:
    """``epochs`` shuffled passes over ``count`` rows, each cut into ``minibatches`` index sets (the last takes
    the remainder), drawn on ``device``: one optimizer step each. With fewer rows than minibatches (an APPO call
    on one small chunk, a round of mostly crashed steps) the empty sets are skipped: a step on no samples would
    make every gradient NaN."""
    size = max(1, count // minibatches)
    for _ in range(epochs):
        order = torch.randperm(count, generator=generator, device=device)
        for k in range(minibatches):
            rows = order[k * size : (k + 1) * size] if k < minibatches - 1 else order[k * size :]
            if len(rows):
                yield rows


class Gather:
    """A minibatch's rows of every target tensor, into buffers kept per name and size (``index_select``
    writes them; nothing a step keeps outlives the next step's gather)."""

    def __init__(self) -> None:
        self._buffers: dict[tuple[str, int], torch.Tensor] = {}

    def __call__(self, data: dict[str, torch.Tensor], rows: torch.Tensor) -> dict[str, torch.Tensor]:
        out = {}
        n = int(rows.shape[0])
        for name, value in data.items():
            buf = self._buffers.get((name, n))
            if (
                buf is None
                or buf.shape[1:] != value.shape[1:]
                or buf.dtype != value.dtype
                or buf.device != value.device
            ):
                buf = self._buffers[(name, n)] = value.new_empty((n, *value.shape[1:]))
            out[name] = torch.index_select(value, 0, rows, out=buf)
        return out

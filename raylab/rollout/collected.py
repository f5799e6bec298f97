"""What one ``collect`` call of a rollout worker gathered (raylab/rollout/worker.py, raylab/rollout/trajectory.py)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from raylab.types import Chunk


@dataclass
class Rollout:
    """What one ``collect`` call gathered."""

    chunk: Chunk
    episodes: list[dict[str, float]]
    """Records of the episodes that ended in it (raw game returns and lengths, plus the env's extras)."""
    env_restarts: int
    """Envs rebuilt after a crash during it."""
    episode_slots: list[int] = field(default_factory=list)
    """The slot each of ``episodes`` ended in."""
    initial_states: list[np.ndarray | None] | None = None
    """A PolicySet's recurrent policies: each policy's states at the chunk's start (``split_chunk`` hands them
    to its part); a single policy's are in ``chunk.initial_state``."""
    groups: list[Chunk] | None = None
    """Agents of several space groups (raylab/rollout/trajectory.py): each group's chunk (``chunk`` is the first)."""

    @property
    def chunks(self) -> list[Chunk]:
        """One chunk per space group (one: ``chunk``)."""
        return self.groups if self.groups is not None else [self.chunk]

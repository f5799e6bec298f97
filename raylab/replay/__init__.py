"""Replay, TorchRL-style: Storage (where), Writer (which slots), Sampler (which items), composed by ReplayBuffer.

The NStepAdder turns worker chunks into n-step transitions on the replay side, so chunks cross the wire once
(T + 1 observations) instead of as obs/next_obs pairs. The SamplesPerInsertLimiter keeps acting and learning
at a fixed ratio (Reverb's rate limiter).
"""

from raylab.replay.adder import NStepAdder
from raylab.replay.buffer import ReplayBuffer
from raylab.replay.rate_limiter import SamplesPerInsertLimiter
from raylab.replay.sampler import UniformSampler
from raylab.replay.storage import RingStorage
from raylab.replay.writer import RingWriter

__all__ = [
    "NStepAdder", "ReplayBuffer", "RingStorage", "RingWriter", "SamplesPerInsertLimiter", "UniformSampler",
]  # fmt: skip

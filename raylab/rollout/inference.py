"""Central batched inference (topology.inference=central): one policy acting for many rollout workers.

Sample Factory's policy workers and SEED RL's inference server do the same: env runners only step envs and
send their observations here; the server stacks whatever requests are waiting into one batch, acts once,
and answers each request with its rows of the actions, their log-probabilities and the policy version that
acted. No request waits for a batch to fill: while one batch is acted on, the next requests queue, so the
batch grows with the load by itself.

``InferenceServer`` is a plain class (its host, raylab.hosts.InferenceHost, serves ``infer`` from many
callers at once: the actor's concurrency is the number of requests in flight it admits). Weights come
from the learner: the driver hands the newest published ones here, and never to the rollout workers.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

import numpy as np

from raylab.types import Policy, Weights

Reply = tuple[np.ndarray, np.ndarray | None, int]
"""(actions, their log-probabilities or None, the policy version that acted)."""


@dataclass
class _Request:
    obs: np.ndarray
    done: threading.Event = field(default_factory=threading.Event)
    reply: Reply | None = None
    error: BaseException | None = None


@dataclass
class InferenceStats:
    """Since the last ``stats(reset=True)``: batches acted on, requests and rows (observations) they held, and
    the seconds spent acting."""

    batches: int = 0
    requests: int = 0
    rows: int = 0
    acting_s: float = 0.0
    seconds: float = 0.0
    """Wall time the figures cover."""
    version: int = -1

    @property
    def rows_per_batch(self) -> float:
        return self.rows / self.batches if self.batches else 0.0

    @property
    def busy(self) -> float:
        """Fraction of ``seconds`` spent acting."""
        return self.acting_s / self.seconds if self.seconds else 0.0


class InferenceServer:
    """Acts in batches for every caller of ``infer`` (one thread acts; callers wait on their request)."""

    def __init__(self, policy: Policy):
        self.policy = policy
        self._queue: list[_Request] = []
        self._arrived = threading.Condition()
        self._acting = threading.Lock()
        """Held while the policy acts or loads weights."""
        self._stats = InferenceStats()
        self._since = time.perf_counter()
        self._stats_lock = threading.Lock()
        """Held while a batch's figures are added and while ``stats`` reads (and resets) them."""
        self._thread = threading.Thread(target=self._serve, name="raylab-inference", daemon=True)
        self._thread.start()

    @property
    def version(self) -> int:
        return self.policy.version

    def infer(self, obs: np.ndarray) -> Reply:
        """Actions for ``obs`` [B, ...], acted on in a batch with every other request waiting meanwhile."""
        request = _Request(obs)
        with self._arrived:
            self._queue.append(request)
            self._arrived.notify()
        request.done.wait()
        if request.error is not None:
            raise request.error
        assert request.reply is not None
        return request.reply

    def set_weights(self, weights: Weights) -> int:
        """Load newer weights (between batches); returns the version acting now."""
        with self._acting:
            self.policy.set_weights(weights)
        return self.policy.version

    def stats(self, reset: bool = False) -> InferenceStats:
        with self._stats_lock:
            now = time.perf_counter()
            out = InferenceStats(**{**vars(self._stats), "seconds": now - self._since, "version": self.policy.version})
            if reset:
                self._stats, self._since = InferenceStats(), now
        return out

    def _serve(self) -> None:
        while True:
            with self._arrived:
                while not self._queue:
                    self._arrived.wait()
                batch, self._queue = self._queue, []
            try:
                self._act(batch)
            except BaseException as err:  # each caller raises it (a bad observation fails its own calls)
                for request in batch:
                    request.error = err
            for request in batch:
                request.done.set()

    def _act(self, batch: list[_Request]) -> None:
        obs = batch[0].obs if len(batch) == 1 else np.concatenate([r.obs for r in batch])
        start = time.perf_counter()
        with self._acting:
            actions = self.policy.act(obs)
            log_probs, version = self.policy.last_log_probs, self.policy.version
        with self._stats_lock:
            stats = self._stats
            stats.acting_s += time.perf_counter() - start
            stats.batches += 1
            stats.requests += len(batch)
            stats.rows += len(obs)
        row = 0
        for request in batch:
            n = len(request.obs)
            request.reply = (
                actions[row : row + n], None if log_probs is None else log_probs[row : row + n], version
            )  # fmt: skip
            row += n

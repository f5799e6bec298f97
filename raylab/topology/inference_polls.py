"""Central inference's gauges: each inference actor polled for its batches (raylab.rollout.inference) as a
non-blocking job of the driver, and the latest polls turned into the run's inference/* metrics."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from raylab.driver.loop import Call, Driver
from raylab.rollout.inference import InferenceStats

POLL_S = 2.0
"""How often the inference actors are asked for their batches."""


class InferencePolls:
    """The latest poll of each of ``clients`` (the inference actors), asked every ``POLL_S`` seconds."""

    def __init__(self, clients: list[Any]):
        self.clients = clients
        self.latest: dict[int, InferenceStats] = {}
        self._due = 0.0

    def gauges(self, driver: Driver) -> dict[str, float]:
        """Rows (observations) and requests per batch acted on, batches per second (all actors) and the share
        of time acting (their mean; an idle actor counts, at 0). A runner that waits on its inference actor
        while it is not busy waits on the transport, not the policy."""
        if not self.clients:
            return {}
        if time.monotonic() >= self._due:
            self._due = time.monotonic() + POLL_S
            asked = {job.index for job in driver.in_flight(Poll)}
            for k, client in enumerate(self.clients):
                if k not in asked:
                    name = f"inference_{k}"
                    driver.submit(Poll(client.stats(True), "inference", name, driver.restarts.tag(name),
                                       polls=self, index=k))  # fmt: skip
        polls = list(self.latest.values())
        if not polls:
            return {}
        batches = sum(s.batches for s in polls)
        return {  # an idle poll counts: 0 batches/s and busy 0 (no batch: 0 rows and requests per batch)
            "inference/rows_per_batch": sum(s.rows for s in polls) / batches if batches else 0.0,
            "inference/requests_per_batch": sum(s.requests for s in polls) / batches if batches else 0.0,
            "inference/batches_per_s": sum(s.batches / s.seconds for s in polls if s.seconds),
            "inference/busy": sum(s.busy for s in polls) / len(polls),
        }


@dataclass
class Poll(Call):
    """One inference actor's batches since its last poll; a failed poll is dropped (its runners count the
    actor's restart)."""

    polls: InferencePolls
    index: int

    def done(self, driver: Driver, stats: InferenceStats) -> None:
        self.polls.latest[self.index] = stats

    def failed(self, driver: Driver, err: BaseException) -> None:
        pass

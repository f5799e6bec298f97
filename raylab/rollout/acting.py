"""Where a rollout worker's actions come from: its own policy (``LocalActions``), or an inference actor that
batches the observations of many workers (``CentralActions``; the actor: raylab/rollout/inference.py).

The worker's loop (raylab/rollout/worker.py) asks for actions in two halves, ``submit`` then ``wait``, per
split of its envs: a local policy acts in ``submit`` and ``wait`` hands the result back, so nothing overlaps
and a worker of one split runs exactly as before; a central one sends the split's observations away in
``submit`` and blocks in ``wait``, and with two splits the worker steps one half of its envs while the
other half's observations are at the inference actor (Sample Factory's double-buffered sampling).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

import numpy as np

from raylab.types import Policy


class Acted(NamedTuple):
    """One split's actions for one step: one batch per space group, the behaviour log-probabilities (None: the
    policy keeps none), and the policy version that acted."""

    actions: list[np.ndarray]
    log_probs: np.ndarray | None
    version: int


class ActionSource(Protocol):
    """Actions for the observations of one split of a worker's envs (``obs``: one batch per space group)."""

    def submit(self, split: int, obs: Sequence[np.ndarray]) -> Any:
        """Start acting on ``obs``; returns what ``wait`` takes."""
        ...

    def wait(self, pending: Any) -> Acted:
        """The actions ``submit`` started (blocks until they are there)."""
        ...


class LocalActions:
    """The worker's own policy acts, at once, in ``submit``; a PolicySet over several space groups acts on each
    group's batch (``act_groups``)."""

    def __init__(self, policy: Policy, grouped: bool = False):
        self.policy, self.grouped = policy, grouped

    def submit(self, split: int, obs: Sequence[np.ndarray]) -> Acted:
        policy = self.policy
        actions = policy.act_groups(obs) if self.grouped else [policy.act(obs[0])]  # type: ignore[attr-defined]
        return Acted(actions, policy.last_log_probs, policy.version)

    def wait(self, pending: Acted) -> Acted:
        return pending


class Explorer(Protocol):
    """What ``CentralActions`` uses of an epsilon-greedy policy (raylab.algos.dqn.policy): each slot's epsilon
    schedule, its random generator and step counter; its network never acts."""

    epsilons: Any
    rng: np.random.Generator
    num_actions: int
    steps: int


CHANNEL = "channel"
"""A pending request sent through a shared-memory channel (its reply is read from the channel)."""
LIVENESS_S = 2.0
"""Seconds a worker waits on a channel's reply before it asks whether the inference actor is still the same."""


@dataclass
class _Pending:
    split: int
    obs: np.ndarray
    ref: Any
    """The inference call's reply ref (None: every slot explores, nothing was sent)."""
    explore: np.ndarray | None


class CentralActions:
    """Actions from an inference actor (raylab.rollout.inference): ``submit`` sends a split's observations in
    one call, ``wait`` fetches the reply (actions, log-probabilities, the version that acted, the actor's life).

    ``explorer`` (Ape-X DQN): each slot explores with its own epsilon here, as a local epsilon-greedy policy
    does; only the slots acting greedily are sent, and a step where every slot explores sends nothing.

    ``shared_memory`` (topology.inference_transport=auto): a split sends through a shared-memory channel
    (raylab/rollout/shm.py) when the inference actor runs on this machine, else through Ray actor calls.

    A reply that fails because the inference actor died is waited out: the worker waits for Ray to restart it
    and sends the same observations again (through a new channel), so its chunk goes on (``resent`` counts
    those requests; ``life`` is the newest life of the actor it heard from, which the driver counts restarts
    by). A channel's reply not there within LIVENESS_S makes the worker ask whether the actor is still the one
    it opened the channel with, and still answers it; if not, it opens a new channel and sends again.
    """

    def __init__(
        self,
        client: Any,
        transport: Any,
        splits: int,
        slots: int,
        explorer: Explorer | None = None,
        name: str = "the inference actor",
        shared_memory: bool = False,
        key: str = "worker",
        action: tuple[tuple[int, ...], str] = ((), "<i8"),
        index: int = 0,
        others: Sequence[tuple[Any, str, int]] = (),
    ):
        """``action``: one action's shape and dtype (a channel's reply holds them). ``index``: ``client``'s in the run
        (inference_<index>); ``others``: the run's other inference actors (client, name, index), in the order to
        try: before its first request the worker keeps
        ``client`` if it runs on this machine, else takes the first of ``others`` that does, else keeps
        ``client`` (raylab.builders.plans.inference_links)."""
        self.client, self.transport, self.name, self.index = client, transport, name, index
        self.others = tuple(others)
        self.placed = not self.others
        """Whether the inference actor is chosen (nothing to choose among: it is)."""
        self.shared_memory, self.key, self.action = shared_memory, key, action
        """Channels are asked for as ``<key>-<split>``."""
        self.channels: list[Any] = [None] * splits
        """Each split's ShmChannel; None: not asked for yet; False: none (the actor runs on another machine)."""
        self.channel_life = [0] * splits
        """The inference actor's life each split's channel was made in."""
        self.splits, self.slots = splits, slots
        """Envs split into ``splits`` equal parts of ``slots // splits`` slots each."""
        self.explorer = explorer
        self.version = -1
        """The newest version that acted (a step where every slot explored keeps it)."""
        self.life = 0
        self.resent = 0
        self.calls = 0
        """Requests sent (``resent`` of them again, after a death)."""

    def submit(self, split: int, obs: Sequence[np.ndarray]) -> _Pending:
        batch = obs[0]
        explore = None
        if self.explorer is not None:
            ex, n = self.explorer, len(batch)
            eps = ex.epsilons(ex.steps * self.slots)[split * n : (split + 1) * n]
            explore = ex.rng.random(n) < eps
            if split == self.splits - 1:
                ex.steps += 1
            if explore.all():
                return _Pending(split, batch, None, explore)
            if explore.any():
                batch = batch[~explore]
        batch = np.ascontiguousarray(batch)
        return _Pending(split, batch, self._send(split, batch), explore)

    def _send(self, split: int, batch: np.ndarray) -> Any:
        """The request's ref, or CHANNEL when it went through the split's channel."""
        if not self.placed:
            self._place()
        self.calls += 1
        channel = self._channel(split, batch) if self.shared_memory else None
        if channel is None:
            return self.client.infer(batch)
        channel.send(batch)
        return CHANNEL

    def _place(self) -> None:
        """Send to the first inference actor, this worker's own first, that runs on this machine; its own if none
        does (or none answers)."""
        from raylab.rollout.shm import this_machine

        here = this_machine()
        for client, name, index in ((self.client, self.name, self.index), *self.others):
            try:
                if self.transport.get(client.machine()) == here:
                    self.client, self.name, self.index = client, name, index
                    break
            except self.transport.ActorDied:
                continue
        self.placed = True

    def _channel(self, split: int, batch: np.ndarray) -> Any:
        channel = self.channels[split]
        if channel is None:
            from raylab.rollout.shm import ShmChannel, this_machine

            rows, shape = self.slots // self.splits, batch.shape[1:]
            ask = (f"{self.key}-{split}", rows, shape, batch.dtype.str, this_machine(), self.action)
            name, life = self._call(lambda: self.client.open_channel(*ask))
            self.life = max(self.life, int(life))
            self.channel_life[split] = int(life)
            action_shape, action_dtype = self.action
            channel = False  # another machine: Ray calls
            if name:
                channel = ShmChannel(
                    name, rows, shape, batch.dtype, action_shape=action_shape, action_dtype=action_dtype
                )
            self.channels[split] = channel
        return channel or None

    def _call(self, call: Any) -> Any:
        """A call's value, the actor's deaths waited out (the call made again each time)."""
        while True:
            try:
                return self.transport.get(call())
            except self.transport.ActorDied:
                self.life = max(self.life, self.transport.back(self.client, self.name))

    def wait(self, pending: _Pending) -> Acted:
        explore = pending.explore
        if pending.ref is None:
            assert explore is not None and self.explorer is not None
            actions = self.explorer.rng.integers(self.explorer.num_actions, size=len(explore))
            return Acted([np.asarray(actions)], None, self.version)
        actions, log_probs, version, life = self._reply(pending)
        self.version, self.life = max(self.version, int(version)), max(self.life, int(life))
        if explore is not None and explore.any():
            assert self.explorer is not None
            full = self.explorer.rng.integers(self.explorer.num_actions, size=len(explore))
            full[~explore] = actions
            actions = full
        return Acted([actions], log_probs, int(version))

    def _reply(self, pending: _Pending) -> tuple[np.ndarray, np.ndarray | None, int, int]:
        while True:
            if pending.ref is CHANNEL:
                got = self.channels[pending.split].receive(timeout=LIVENESS_S)
                if got is not None:
                    return (*got, self.life)
                life = self.transport.back(self.client, self.name)  # alive (or back, after a restart)?
                key = f"{self.key}-{pending.split}"
                if life == self.channel_life[pending.split] and self._call(
                    lambda key=key: self.client.channel_alive(key)
                ):
                    continue  # the actor that made the channel, answering it, busy: wait on
                self.life = max(self.life, life)
                self.channels[pending.split].close()
                self.channels[pending.split] = None  # the dead actor's: a new one for the new actor
            else:
                try:
                    return self.transport.get(pending.ref)
                except self.transport.ActorDied:
                    self.life = max(self.life, self.transport.back(self.client, self.name))
            self.resent += 1
            pending.ref = self._send(pending.split, pending.obs)

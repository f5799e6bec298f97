"""What runs inside each actor: a plain component, built in the actor's process by the builder it was handed,
behind the methods it declares remote (raylab.remote.host). The builders make each host's ``ActorSpec``
(raylab.builders); a host reads no config. No Ray here: both backends run these classes as they are.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from raylab.errors import RaylabError
from raylab.learner.schedule import LrSchedule
from raylab.params.link import ServerLink
from raylab.params.server import ParameterServer, PushReply, ServerStats
from raylab.remote.host import Host, remote
from raylab.replay.buffer import ReplayBuffer, ReplayStats
from raylab.replay.snapshot import latest_periodic_snapshot, load_snapshot, save_snapshot
from raylab.rollout.a3c import A3CWorker, WorkerReport
from raylab.rollout.evaluator import Evaluator
from raylab.rollout.inference import InferenceServer, InferenceStats
from raylab.rollout.shm import Channels
from raylab.rollout.worker import RolloutWorker
from raylab.types import (
    Batch,
    Chunk,
    EvalResult,
    EvalTarget,
    LearnerStats,
    Priorities,
    RolloutStats,
    SequenceBatch,
    Weights,
)

RESTARTED_INCARNATION = 998
"""A worker Ray restarted builds with incarnation 998..1997 (by its pid): fresh env seeds instead of a replay of
its first episodes, apart from a resume's 1..997, and seed + stride x incarnation stays below 2**31 (EnvPool)."""


def incarnation_after(life: int, incarnation: int) -> int:
    return RESTARTED_INCARNATION + os.getpid() % 1000 if life else incarnation


class RolloutHost(Host):
    single_threaded = True

    def __init__(
        self, make: Callable[..., RolloutWorker], incarnation: int = 0, inference: Any = None, transport: Any = None
    ):
        """``make(incarnation)``: the worker; ``incarnation`` > 0 (a resumed run) gives it fresh seeds.
        ``inference`` and ``transport`` (topology.inference=central): the clients of the inference actors, its
        own first (it sends to the first on its machine), and how their replies are read."""
        links = {} if inference is None else {"inference": inference, "transport": transport}
        with self.deferring_user_errors():
            self.worker = make(incarnation_after(self.life, incarnation), **links)

    @remote(returns=lambda *weights: len(weights) + 1)
    def sample(self, *weights: Weights | None) -> tuple[Chunk | RolloutStats, ...]:
        """One Weights (or None: unchanged) per policy in, loaded first; one chunk per policy, then the stats,
        out, each a ref of its own so that each chunk goes to its policy's learner or replay unfetched."""
        if len(weights) > 1:
            if any(w is not None for w in weights):
                self.worker.set_weights(list(weights))
        elif weights[0] is not None:
            self.worker.set_weights(weights[0])
        chunks, stats = self.worker.sample_each()
        stats.life = self.life
        return (*chunks, stats)


class InferenceHost(Host):
    """Central inference for the rollout workers that name it (raylab.rollout.inference). Ray restarts a crashed
    one. In every life it loads the learner's newest weights before it answers any call, and the workers whose
    calls failed send them again (raylab.rollout.acting.CentralActions)."""

    def __init__(
        self, make: Callable[[], InferenceServer], learner: Any = None, transport: Any = None, threads: int = 1
    ):
        """``learner`` and ``transport``: where the actor fetches the weights it starts from, in every life (None:
        from the driver only); ``threads``: torch's threads for acting (its CPUs)."""
        import torch

        torch.set_num_threads(max(1, threads))
        with self.deferring_user_errors():
            self.server = make()
            self.channels = Channels(self.server)
        if self._startup_error is None and learner is not None and transport is not None:  # every life: no
            self.server.set_weights(transport.get(learner.get_weights()))  # request is acted on by a random net

    @remote()
    def open_channel(
        self, key: str, rows: int, shape: tuple[int, ...], dtype: str, machine: str, action: tuple[tuple[int, ...], str]
    ) -> tuple[str | None, int]:
        """A shared-memory channel for worker split ``key`` (raylab.rollout.shm), when the worker runs on this
        machine (``action``: its actions' shape and dtype): (its name or None, this actor's life)."""
        return self.channels.open(key, rows, shape, dtype, machine, action), self.life

    @remote()
    def machine(self) -> str:
        """The machine this actor runs on (raylab.rollout.shm.this_machine): a worker sends to one on its own."""
        from raylab.rollout.shm import this_machine

        return this_machine()

    @remote()
    def channel_alive(self, key: str) -> bool:
        """Whether worker split ``key``'s channel is still answered (a worker whose reply is late asks)."""
        return self.channels.alive(key)

    @remote()
    def infer(self, obs: np.ndarray) -> tuple[np.ndarray, np.ndarray | None, int, int]:
        """(actions, log-probabilities or None, the version that acted, this actor's life)."""
        return (*self.server.infer(obs), self.life)

    @remote()
    def set_weights(self, weights: Weights) -> int:
        return self.server.set_weights(weights)

    @remote()
    def stats(self, reset: bool = False) -> InferenceStats:
        return self.server.stats(reset)


class Draw:
    """``num_batches`` batches drawn from a replay as they are iterated: in one process the learner's prefetch
    thread draws batch k + 1 while batch k trains, and no batch is copied. Sent to another process (pickled),
    it is drawn there and then, and arrives as the list."""

    def __init__(self, replay: ReplayBuffer, batch_size: int, num_batches: int):
        self.replay, self.batch_size, self.num_batches = replay, batch_size, num_batches

    def __iter__(self) -> Iterator[Batch | SequenceBatch]:
        if len(self.replay) == 0:  # its workers' first chunks are still in flight
            return iter(())
        return (self.replay.sample(self.batch_size) for _ in range(self.num_batches))

    def __reduce__(self) -> tuple[Any, ...]:
        return list, (list(self),)


class ReplayHost(Host):
    def __init__(self, make: Callable[[], ReplayBuffer], shard: int = 0, snapshots: str | None = None):
        """``snapshots``: where the run's periodic replay snapshots are (checkpoint.replay), which a shard Ray
        restarted reloads its newest of before answering any call; None: it comes back empty."""
        with self.deferring_user_errors():
            self.replay = make()
        self.restored: int | None = None
        """A restarted shard's transitions reloaded (0: none); its next ``add`` reply says so, once."""
        if self._startup_error is None and self.life:
            self.restored = 0
            latest = latest_periodic_snapshot(Path(snapshots), shard) if snapshots else None
            if latest is not None:
                try:
                    self.restored = load_snapshot(latest, self.replay)
                except RaylabError as err:  # the run goes on with an empty shard, as without snapshots
                    print(f"raylab: replay shard {shard} restarted empty: {err}", flush=True)

    @remote()
    def add(self, chunk: Chunk) -> tuple[int, dict[str, float], int | None, int]:
        """(transitions completed, seconds per replay stage since the last add, ``restored`` (None unless
        this is a restarted shard's first reply), the shard's life): the driver's per-interval view of this
        shard, riding on a reply it fetches anyway."""
        restored, self.restored = self.restored, None
        return self.replay.add_chunk(chunk), self.replay.interval_timings(), restored, self.life

    @remote()
    def snapshot(self, path: str) -> int:
        save_snapshot(Path(path), self.replay)
        return len(self.replay)

    @remote()
    def restore(self, path: str) -> int:
        return load_snapshot(Path(path), self.replay)

    @remote()
    def sample_many(self, batch_size: int, num_batches: int) -> Draw:
        """Batches (none while this shard is empty), drawn where they are used (``Draw``)."""
        return Draw(self.replay, batch_size, num_batches)

    @remote()
    def update_priorities(self, priorities: Priorities | None) -> int:
        return 0 if priorities is None else self.replay.update_priorities(priorities.keys, priorities.td_errors)

    @remote()
    def stats(self) -> ReplayStats:
        return self.replay.stats()


def learner_input(parts: tuple[Any, ...]) -> Any:
    """A learner call's arguments as the Learner takes them: chunks (PPO, APPO: one argument each), or one
    argument holding a replay's batches (DQN)."""
    return parts[0] if len(parts) == 1 and not isinstance(parts[0], Chunk) else list(parts)


class LearnerHost(Host):
    def __init__(self, make: Callable[[], Any], schedule: LrSchedule | None = None):
        """``schedule``: the learner's lr as a function of the run's env steps (learner.lr_schedule); None: the
        lr it was made with, throughout."""
        self.schedule = schedule
        with self.deferring_user_errors():
            self.learner = make()

    @remote(returns=3)
    def update(
        self, *parts: Any, env_steps: int | None = None
    ) -> tuple[LearnerStats, Weights | None, Priorities | None]:
        """Train on ``parts`` (``learner_input``): (stats for the driver, the new weights when this call
        published, the batches' new priorities, which go to the replay without passing through the driver).
        ``env_steps``: the run's env steps when the driver made the call, which set the lr of a schedule; its
        lr goes into the stats (``lr``)."""
        lr = None
        if self.schedule is not None and env_steps is not None:
            lr = self.schedule.at(env_steps)
            self.learner.set_lr(lr)
        stats = self.learner.update_many(learner_input(parts))
        if lr is not None:
            stats.metrics["lr"] = lr
        weights = None
        if stats.published:
            start = time.perf_counter()
            weights = self.learner.get_weights()
            stats.timings = {**(stats.timings or {}), "publish_s": time.perf_counter() - start}
        return dataclasses.replace(stats, priorities=None, life=self.life), weights, stats.priorities

    @remote()
    def get_weights(self) -> Weights:
        return self.learner.get_weights()

    @remote()
    def get_eval_weights(self) -> Weights:
        """What evaluations score: learner.average_rate's average, else the newest weights."""
        return self.learner.get_eval_weights()

    @remote()
    def state_dict(self) -> dict[str, Any]:
        return self.learner.state_dict()

    @remote()
    def load_state_dict(self, state: dict[str, Any] | None, min_version: int = 0) -> int:
        """Resume from a checkpoint's learner state (None: none yet, start fresh). Versions never go back: the
        learner continues from ``min_version`` when that is ahead, so that rollout actors holding newer
        weights accept its next ones. Returns the version."""
        if state is not None:
            self.learner.load_state_dict(state)
        self.learner.version = max(self.learner.version, min_version)
        return int(self.learner.version)


class EvalHost(Host):
    single_threaded = True

    def __init__(self, make: Callable[[], Evaluator]):
        with self.deferring_user_errors():
            self.evaluator = make()

    @remote()
    def evaluate(
        self, episodes: int, target: EvalTarget | None, confirm_episodes: int, *weights: Weights
    ) -> EvalResult:
        """One Weights per policy, each its own argument (Ray resolves each ref)."""
        return self.evaluator.evaluate(
            weights[0] if len(weights) == 1 else list(weights), episodes, target, confirm_episodes
        )


class ShardHost(Host):
    """One parameter-server shard (A3C)."""

    single_threaded = True

    def __init__(self, make: Callable[[], ParameterServer]):
        with self.deferring_user_errors():
            self.server = make()

    @remote()
    def push(self, grad: np.ndarray, version: int, sent_at: float) -> PushReply:
        return self.server.push(grad, version, sent_at)

    @remote()
    def pull(self, known_version: int = -1) -> PushReply | None:
        return self.server.pull(known_version)

    @remote()
    def load(self, params: np.ndarray, version: int = 0) -> None:
        self.server.load(params, version)

    @remote()
    def stats(self, reset: bool = False) -> ServerStats:
        return self.server.stats(reset)

    @remote()
    def state_dict(self) -> dict[str, Any]:
        return self.server.state_dict()

    @remote()
    def load_state_dict(self, state: dict[str, Any], min_version: int = 0) -> None:
        self.server.load_state_dict(state, min_version)


class A3CWorkerHost(Host):
    """A self-driven A3C worker pushing to the shards through ``link``."""

    single_threaded = True

    def __init__(self, make: Callable[[ServerLink, int], A3CWorker], link: ServerLink, incarnation: int = 0):
        with self.deferring_user_errors():
            self.worker = make(link, incarnation_after(self.life, incarnation))

    @remote()
    def run(self, max_segments: int | None, seconds: float | None) -> WorkerReport:
        """Push gradients until ``max_segments`` or ``seconds`` (at least one)."""
        return self.worker.run(max_segments, seconds)

    @remote()
    def flush(self) -> WorkerReport:
        return self.worker.flush()

    @remote()
    def configure(self, pushes_in_flight: int) -> None:
        """Pushes the worker may have in flight before it blocks (0: wait for each to be applied)."""
        if pushes_in_flight < 0:
            raise ValueError(f"pushes_in_flight must be >= 0, got {pushes_in_flight}")
        self.worker.pushes_in_flight = pushes_in_flight

    @remote()
    def restart(self) -> int:
        """Start over from the server's current weights (after the shards were reloaded)."""
        return self.worker.restart()

    @remote()
    def recover(self) -> int:
        """The server was restored after a shard's crash: drop outstanding pushes; returns how many."""
        return self.worker.recover()

"""The actor seam's declaration: a host is a plain class whose remotely callable methods say so, with
``@remote()`` (``returns=n``, or a function of the call's arguments, for several return values, each sent
back as its own ref). Both backends (raylab.remote.ray_backend on Ray, raylab.remote.inprocess in one
process) make their one generic client from this declaration and start a host with ``spawn(ActorSpec)``:
``client.add(2)`` is a ref on Ray, ``Done(2)`` in one process. Adding an actor kind is one host class, nothing
else names it (tests/integration/test_toy_actor.py adds one). No Ray here: a host runs and is tested without it.
"""

from __future__ import annotations

import dataclasses
import resource
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

from raylab.errors import RaylabError

Returns = int | Callable[..., int]
"""How many values a remote method returns, each as its own ref: a number, or a function of its arguments."""
F = TypeVar("F", bound=Callable[..., Any])
REMOTE = "__raylab_remote__"


def remote(returns: Returns = 1) -> Callable[[F], F]:
    """Mark a host method as callable through a client; ``returns`` > 1: it returns that many values (a tuple),
    each sent back as its own ref, so the driver can pass one on without fetching the others."""

    def mark(method: F) -> F:
        setattr(method, REMOTE, returns)
        return method

    return mark


def remote_methods(host: type) -> dict[str, Returns]:
    """{name: returns} of every method ``host`` (or a base) marked with ``remote``."""
    found: dict[str, Returns] = {}
    for klass in reversed(host.__mro__):
        for name, attr in vars(klass).items():
            if callable(attr) and hasattr(attr, REMOTE):
                found[name] = getattr(attr, REMOTE)
    return found


def count(returns: Returns, args: tuple[Any, ...]) -> int:
    return returns(*args) if callable(returns) else returns


@dataclass(frozen=True)
class Resources:
    """What an actor reserves where it runs (Ray; in one process nothing is reserved)."""

    cpus: float = 1.0
    gpus: float = 0.0
    gpu_if_any: float = 0.0
    """This much of a GPU when the cluster has any GPU (learner.device=auto), else none (with a warning)."""
    spread: bool = False
    """Place these actors across the cluster's nodes rather than packing the first (rollout actors)."""
    nice: int = 0
    """Niceness the actor's process runs at (a3c's params.worker_nice); not applied in one process."""
    concurrency: int = 1
    """Calls the actor serves at once, each in a thread of its own (an inference actor: one per request its
    rollout workers can have in flight); 1: one call at a time, in order."""
    threads: int = 1
    """Torch threads the actor trains on (the learner: learner.num_threads). Above 1, Ray starts its process with
    OpenMP's waiting threads asleep (OMP_WAIT_POLICY=PASSIVE), or with the policy the user set: spinning threads
    fight the rollout actors for the cores they share (raylab.remote.ray_backend). Inference actors keep
    libgomp's default: their small, frequent forward passes were not measured with it."""


@dataclass(frozen=True)
class Late:
    """An argument of an ActorSpec that names another actor of the run (or ``transport``: the backend's), made
    before that actor exists: the flow binds it (``ActorSpec.bind``) to that actor's client when it spawns
    the spec, so a rollout worker's spec can name the inference actor it sends to."""

    actor: str


@dataclass(frozen=True)
class ActorSpec:
    """One actor to start: its host class, the arguments of the host's constructor, what it reserves, and a
    name (or none). Builders make them (raylab.builders); a topology spawns them (``Backend.spawn``)."""

    host: type
    args: tuple[Any, ...] = ()
    resources: Resources = field(default_factory=Resources)
    name: str | None = None

    def bind(self, clients: Mapping[str, Any]) -> ActorSpec:
        """This spec with each ``Late`` argument replaced by the client it names (a tuple of them: a tuple of
        clients, a choice the actor makes when it runs: a rollout worker's inference actors)."""
        args = tuple(_bound(a, clients) for a in self.args)
        return dataclasses.replace(self, args=args)

    @property
    def unbound(self) -> list[str]:
        """The actors its ``Late`` arguments name."""
        return [late.actor for a in self.args for late in _lates(a)]


def _lates(arg: Any) -> list[Late]:
    if isinstance(arg, Late):
        return [arg]
    if isinstance(arg, tuple) and arg and all(isinstance(a, Late) for a in arg):
        return list(arg)
    return []


def _bound(arg: Any, clients: Mapping[str, Any]) -> Any:
    if isinstance(arg, Late):
        return clients[arg.actor]
    if _lates(arg):
        return tuple(clients[a.actor] for a in arg)
    return arg


class Host:
    """Base of every host: ``ready``, ``get_life`` and ``peak_memory_bytes``, and a user error (a bad config
    found while building) kept from the constructor and raised by ``ready``: Ray reports a failed constructor
    as ActorDiedError with only a message, a failed method keeps the exception itself."""

    single_threaded = False
    """In an actor of its own, torch uses one thread (raylab.remote.ray_backend); in the driver's process the
    host leaves torch's threads as they are."""
    life = 0
    """How many times Ray had restarted this actor when it started (set by the Ray backend before the
    constructor runs; 0 in one process). Replies the driver counts restarts by carry it."""
    _startup_error: RaylabError | None = None

    @contextmanager
    def deferring_user_errors(self) -> Iterator[None]:
        try:
            yield
        except RaylabError as err:
            self._startup_error = err

    @remote()
    def ready(self) -> bool:
        if self._startup_error is not None:
            raise self._startup_error
        return True

    @remote()
    def get_life(self) -> int:
        return self.life

    @remote()
    def peak_memory_bytes(self) -> int:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024

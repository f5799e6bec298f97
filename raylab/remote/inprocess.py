"""The in-process backend of raylab.driver.loop: every actor a plain host object in the driver's process, no Ray
(``topology=local``; Sample Factory's serial runner, PufferLib's Serial backend).

The flows of the Ray topologies run unchanged on it, with the same host classes (raylab.hosts) behind
the same declaration (raylab.remote.host): a call runs the host's method when the flow makes it and returns
``Done(value)`` (raylab.transport), one per declared return value, so ``wait`` finds every call in flight done
and the loop never sleeps while there is work. Nothing is pickled or copied on the way: a chunk goes from the
rollout worker to the replay (or the learner) as the same arrays, a replay's batches are drawn while the
learner takes them (raylab.hosts.Draw). The workers take turns, each chunk (A3C: each segment, pushed
to the in-process shards and applied at once) made as the flow asks for it. No actor dies apart from the
process: an exception raised inside a call propagates from the call, as in any plain Python program.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from raylab.remote.host import ActorSpec, Resources, Returns, count, remote_methods
from raylab.transport import Done, Immediate, value

T = TypeVar("T")


class LocalClient:
    """Calls a host's declared remote methods on the host itself: the arguments' ``Done`` refs resolved, as Ray
    resolves refs, and each result wrapped in ``Done`` (a tuple of them for several return values)."""

    def __init__(self, host: Any, returns: dict[str, Returns]):
        self.host, self._returns = host, returns

    def __getattr__(self, name: str) -> Callable[..., Any]:
        if name.startswith("_") or name not in self._returns:
            raise AttributeError(f"{name} is not a remote method of {type(self.__dict__.get('host')).__name__}")
        method, returns = getattr(self.host, name), self._returns[name]

        def call(*args: Any, **kwargs: Any) -> Any:
            out = method(*[value(arg) for arg in args], **{k: value(v) for k, v in kwargs.items()})
            return Done(out) if count(returns, args) == 1 else tuple(Done(part) for part in out)

        self.__dict__[name] = call
        return call


class NoDeath(Exception):
    """In one process no actor dies on its own: nothing raises this (the loop's ``ActorDied``)."""


class InProcessBackend(Immediate):
    """Every call is done when made: the loop's ``wait``, ``get`` and ``put`` are ``Immediate``'s."""

    ActorDied: type[BaseException] = NoDeath

    def __init__(self) -> None:
        self.transport = Immediate()

    def run(self, demands: Sequence[tuple[str, Resources]], body: Callable[[], T]) -> T:
        return body()

    def nodes(self) -> list[dict[str, float]] | None:
        return None  # no cluster: nothing is reserved

    def spawn(self, spec: ActorSpec) -> LocalClient:
        """The host built here; its resources and name mean nothing in one process."""
        return LocalClient(spec.host(*spec.args), remote_methods(spec.host))

    def called_died(self, err: BaseException) -> bool:
        return False

    def death_of(self, err: BaseException, client: Any) -> bool:
        return False

    def wait_ready(self, clients: Sequence[LocalClient], what: str) -> None:
        for client in clients:
            client.ready()  # raises a host's deferred user error (a bad config found while building it)

    def wait_back(self, client: LocalClient, what: str) -> int:
        return int(client.host.life)

    def kill(self, client: LocalClient) -> None:
        pass

    def placement(self, clients: dict[str, Any]) -> dict[str, str]:
        return {}

    def peak_memory_bytes(self, clients: Sequence[Any]) -> int:
        return 0  # every host is in the driver's process, which the monitor measures itself

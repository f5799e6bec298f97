"""What a call to an actor returns, and how code that holds such returns waits for them and reads them.

On Ray a call returns an ObjectRef; in one process (raylab.remote.inprocess) it has already run and returns
``Done(value)``. Code that must work on both (the driver loop, an A3C worker's link to its parameter-server
shards) waits and reads through a ``Transport``: Ray's (raylab.remote.ray_backend) or ``Immediate`` below.
A transport is small and picklable, so it can be handed to an actor along with the clients it will call.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

T = TypeVar("T")


@dataclass(eq=False, slots=True)
class Done(Generic[T]):
    """A call that already ran: its value (identity-hashed, as the driver keys its calls in flight by ref)."""

    value: T


def value(ref: Any) -> Any:
    """``ref``'s value if it is a ``Done``; anything else is its own value (a plain object called directly)."""
    return ref.value if isinstance(ref, Done) else ref


class Transport(Protocol):
    def wait(self, refs: Sequence[Any], timeout: float | None, every: bool = False, fetch: bool = True) -> list[Any]:
        """The first of ``refs`` done (``every``: all of them) within ``timeout`` seconds (None: no limit), or
        those done by then; ``fetch=False``: without copying their values here yet."""
        ...

    def get(self, ref: Any) -> Any:
        """A ref's value, or a list of values for a list of refs; raises what the call raised."""
        ...

    def put(self, obj: Any) -> Any:
        """A ref to ``obj``, to pass to many calls without copying it for each."""
        ...


class Immediate:
    """The transport of calls that are done when made: every ref is ready, ``get`` reads its value."""

    def wait(self, refs: Sequence[Any], timeout: float | None, every: bool = False, fetch: bool = True) -> list[Any]:
        return list(refs)

    def get(self, ref: Any) -> Any:
        return [value(r) for r in ref] if isinstance(ref, list) else value(ref)

    def put(self, obj: Any) -> Done[Any]:
        return Done(obj)

"""Prefetching replay batches: step k + 1's batch is pulled and prepared while step k trains.

- CPU (``Prefetcher``): a thread pulls the next item (draws a replay batch) and prepares it.
- CUDA (``StreamPrefetcher``): the same thread pulls and prepares on a side stream (host to device copies
  from pinned buffers), so copies overlap the compute stream's kernels; the compute stream waits for each
  item's event before using it.

Rounds (PPO, APPO) never come here: their data is already on the learner's device and a minibatch is one
gather there, cheaper than a thread's hand-off (raylab.learner.rounds).
"""

from __future__ import annotations

import contextlib
import dataclasses
import queue
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import torch

PREFETCH_DEPTH = 2
"""Items prepared ahead of the one training."""


class Prefetcher:
    """Iterates ``convert(item)`` for the items of ``source``, converting up to ``depth`` ahead in a thread.

    The consumer blocks on a queue (no polling); an exception in the thread is re-raised in the consumer.
    Reports the seconds the consumer spent waiting (``wait_s``): near zero when preparing a batch is faster
    than training on one.
    """

    _END = object()

    def __init__(
        self,
        source: Iterable[Any],
        convert: Callable[[Any], Any],
        depth: int = PREFETCH_DEPTH,
        executor: ThreadPoolExecutor | None = None,
    ):
        self._queue: queue.Queue[Any] = queue.Queue(maxsize=depth)
        self._stop = threading.Event()
        self.wait_s = 0.0
        if executor is not None:  # a thread kept from call to call: starting one costs ~0.7 ms a call
            self._done: Callable[[], bool] = executor.submit(self._fill, iter(source), convert).done
        else:
            thread = threading.Thread(target=self._fill, args=(iter(source), convert), daemon=True)
            thread.start()
            self._done = lambda: not thread.is_alive()

    def _fill(self, source: Iterator[Any], convert: Callable[[Any], Any]) -> None:
        try:
            for item in source:
                if self._stop.is_set():
                    return
                self._queue.put(convert(item))
            self._queue.put(self._END)
        except BaseException as err:  # handed to the consumer
            self._queue.put(err)

    def __iter__(self) -> Iterator[Any]:
        while True:
            start = time.perf_counter()
            item = self._queue.get()
            self.wait_s += time.perf_counter() - start
            if item is self._END:
                return
            if isinstance(item, BaseException):
                raise item
            yield item

    def close(self) -> None:
        """Stop early (the consumer failed): let the thread finish its current item and exit."""
        self._stop.set()
        while not self._done():
            with contextlib.suppress(queue.Empty):
                self._queue.get(timeout=0.1)


class StreamPrefetcher(Prefetcher):
    """A Prefetcher whose ``convert`` runs on a CUDA side stream; yields what ``convert`` returned once the
    consumer's current stream has waited for it. Tensors made on the side stream are recorded on the
    consumer's stream, so the caching allocator does not reuse their memory while the consumer still reads
    them."""

    def __init__(
        self,
        source: Iterable[Any],
        convert: Callable[[Any], Any],
        device: torch.device,
        depth: int = PREFETCH_DEPTH,
        executor: ThreadPoolExecutor | None = None,
    ):
        self.device = device
        self.stream = torch.cuda.Stream(device)
        self._consumer = torch.cuda.current_stream(device)
        self.stream.wait_stream(self._consumer)  # inputs the consumer's stream produced so far

        def pulled_on_side_stream() -> Iterator[Any]:  # what the source itself copies
            items = iter(source)
            while True:
                with torch.cuda.device(device), torch.cuda.stream(self.stream):
                    try:
                        item = next(items)
                    except StopIteration:
                        return
                yield item

        def on_side_stream(item: Any) -> tuple[Any, torch.cuda.Event]:
            with torch.cuda.device(device), torch.cuda.stream(self.stream):
                out = convert(item)
                ready = torch.cuda.Event()
                ready.record(self.stream)
            return out, ready

        super().__init__(pulled_on_side_stream(), on_side_stream, depth, executor)

    def __iter__(self) -> Iterator[Any]:
        for out, ready in super().__iter__():
            self._consumer.wait_event(ready)
            for tensor in tensors_in(out):
                tensor.record_stream(self._consumer)
            yield out


def prefetcher_class(device: torch.device) -> type[Prefetcher]:
    """Which prefetcher a learner on ``device`` uses."""
    return StreamPrefetcher if device.type == "cuda" else Prefetcher


def make_prefetcher(
    source: Iterable[Any],
    convert: Callable[[Any], Any],
    device: torch.device,
    depth: int = PREFETCH_DEPTH,
    executor: ThreadPoolExecutor | None = None,
) -> Prefetcher:
    """The prefetcher for a learner on ``device``, filled on ``executor``'s thread (a thread of its own when
    None)."""
    if prefetcher_class(device) is StreamPrefetcher:
        return StreamPrefetcher(source, convert, device, depth, executor)
    return Prefetcher(source, convert, depth, executor)


def tensors_in(value: Any) -> Iterator[torch.Tensor]:
    """Every tensor in nested dicts, lists, tuples and dataclasses."""
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from tensors_in(v)
    elif isinstance(value, list | tuple):
        for v in value:
            yield from tensors_in(v)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            yield from tensors_in(getattr(value, f.name))

"""The Ray side of ``python -m raylab.bench sampling`` (raylab/bench/sampling.py): rollout actors with a sink in
place of the learner, and the embedded Ray the benchmark runs them on."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from typing import Any

import ray

from raylab.remote.clients import RolloutClient
from raylab.remote.runtime import actors_at_driver_priority, quiet_token_auth_notice
from raylab.types import Weights

WARMUP_S = 1.0
"""Each measurement's first second is not measured (actors start, the first chunks' round trips)."""

INLINE_BYTES = 100 * 1024
"""Ray's max_direct_call_object_size (its default): a task's return below it stays in its owner's memory and
travels inside the arguments of the tasks it is passed to; a larger one goes through the object store."""


def publish(weights: Weights) -> Weights | ray.ObjectRef:
    """Weights as the rollout actors would receive a learner's: a learner call returns them, so weights under
    INLINE_BYTES reach the actors inside their sample calls (by value here) and larger ones through the object
    store (``ray.put``). Putting small weights in the object store, as the sink first did, cost each round a put
    and each actor a fetch that a real run never makes: inline ran 1.21x its agent steps/s on CartPole with 2
    workers (benchmarks/sampling_sink_weights.json)."""
    size = sum(int(array.nbytes) for array in weights.params.values())
    return weights if size < INLINE_BYTES else ray.put(weights)


def start_ray(num_cpus: int) -> None:
    """A local Ray as a run's embedded one starts it (raylab.remote.runtime): actors at the driver's priority,
    not at Ray's default nice 15."""
    actors_at_driver_priority()
    quiet_token_auth_notice()
    ray.init(num_cpus=num_cpus, include_dashboard=False, log_to_driver=False)


def stop_ray() -> None:
    ray.shutdown()


def sample_with_sink(
    cfg: Any,
    spaces: Any,
    workers: int,
    seconds: float,
    weights: Weights,
    calls: int = 1,
    publisher: Callable[[Weights], Any] = publish,
) -> tuple[int, dict[str, float], float]:
    """``workers`` rollout actors, each always with ``calls`` chunk calls in flight, for ``seconds`` after
    WARMUP_S; the driver drops every chunk and publishes a new version of ``weights`` once per ``workers``
    chunks (``publish``: as a learner's call would return it), which each worker loads before its next chunk.
    ``publisher``: how each version is handed out (benchmarks/sampling_sink_weights.py compares ``ray.put``).
    Returns (agent steps, the workers' summed stage seconds, wall seconds)."""
    clients = [RolloutClient.create(cfg, spaces, i) for i in range(workers)]
    ray.get([c.ready() for c in clients])
    current = publisher(weights)
    held = [-1] * workers
    in_flight: dict[Any, tuple[int, Any]] = {}

    def submit(i: int) -> None:
        newer = held[i] < weights.version
        held[i] = weights.version
        chunk, stats = clients[i].sample(current if newer else None)
        in_flight[stats] = (i, chunk)

    for _ in range(calls):
        for i in range(workers):
            submit(i)
    start, t0 = time.perf_counter(), 0.0
    measuring, steps, chunks = False, 0, 0
    timings = {"env": 0.0, "inference": 0.0, "weight_sync": 0.0}
    while True:
        now = time.perf_counter()
        if not measuring and now >= start + WARMUP_S:
            measuring, t0 = True, now
        if measuring and now >= t0 + seconds:
            break
        ready, _ = ray.wait(list(in_flight), num_returns=1)
        i, _chunk = in_flight.pop(ready[0])  # the sink: the chunk's ref is dropped here
        stats = ray.get(ready[0])
        chunks += 1
        if chunks % workers == 0:  # a round: publish a new version, as a learner would
            weights = dataclasses.replace(weights, version=weights.version + 1)
            current = publisher(weights)
        if measuring:
            steps += stats.num_steps
            for k in timings:
                timings[k] += stats.timings.get(k, 0.0)
        submit(i)
    wall = time.perf_counter() - t0
    ray.get(list(in_flight))
    for client in clients:
        ray.kill(client.handle)
    return steps, timings, wall

"""The rollout path of ``python -m raylab.bench sampling`` (raylab/bench/sampling.py): rollout actors spawned as
a run spawns them (raylab.builders.plans.rollout_spec on the Ray backend), with a sink in place of the learner.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from typing import Any

from raylab.types import Weights

WARMUP_S = 1.0
"""Each measurement's first second is not measured (actors start, the first chunks' round trips)."""

INLINE_BYTES = 100 * 1024
"""Ray's max_direct_call_object_size (its default): a task's return below it stays in its owner's memory and
travels inside the arguments of the tasks it is passed to; a larger one goes through the object store."""


def publish(weights: Weights, put: Callable[[Weights], Any]) -> Any:
    """Weights as the rollout actors would receive a learner's: a learner call returns them, so weights under
    INLINE_BYTES reach the actors inside their sample calls (by value here) and larger ones through the object
    store (``put``). Putting small weights in the object store, as the sink first did, cost each round a put
    and each actor a fetch that a real run never makes: inline ran 1.21x its agent steps/s on CartPole with 2
    workers (benchmarks/sampling_sink_weights.json)."""
    size = sum(int(array.nbytes) for array in weights.params.values())
    return weights if size < INLINE_BYTES else put(weights)


def sample_with_sink(
    backend: Any,
    cfg: Any,
    spaces: Any,
    workers: int,
    seconds: float,
    weights: Weights,
    calls: int = 1,
    inline: bool = True,
) -> tuple[int, dict[str, float], float]:
    """``workers`` rollout actors on ``backend`` (a started RayBackend), each always with ``calls`` chunk calls
    in flight, for ``seconds`` after WARMUP_S; the driver drops every chunk and publishes a new version of
    ``weights`` once per ``workers`` chunks (``publish``: as a learner's call would return it; ``inline=False``:
    every version through the object store), which each worker loads before its next chunk. Returns (agent
    steps, the workers' summed stage seconds, wall seconds)."""
    from raylab.builders.plans import inference_spec, rollout_spec

    def hand_out(w: Weights) -> Any:
        return publish(w, backend.put) if inline else backend.put(w)

    links: dict[str, Any] = {"learner": None, "transport": backend.transport}
    inference = [
        backend.spawn(inference_spec(cfg, spaces, k).bind(links)) for k in range(cfg.topology.inference_actors)
    ] if cfg.topology.central else []  # fmt: skip
    links.update({f"inference_{k}": client for k, client in enumerate(inference)})
    clients = [backend.spawn(rollout_spec(cfg, spaces, i).bind(links)) for i in range(workers)]
    backend.wait_ready([*inference, *clients], "rollout and inference actors")
    current = hand_out(weights)
    held = [-1] * workers
    in_flight: dict[Any, int] = {}
    if inference:  # central inference: the weights go to the inference actors, once per version
        backend.get([client.set_weights(current) for client in inference])
        held = [weights.version] * workers

    def submit(i: int) -> None:
        newer = held[i] < weights.version
        held[i] = weights.version
        _chunk, stats = clients[i].sample(current if newer else None)  # the sink: the chunk's ref is dropped
        in_flight[stats] = i

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
        (ready,) = backend.wait(list(in_flight), None)
        i = in_flight.pop(ready)
        stats = backend.get(ready)
        chunks += 1
        if chunks % workers == 0:  # a round: publish a new version, as a learner would
            weights = dataclasses.replace(weights, version=weights.version + 1)
            current = hand_out(weights)
            for client in inference:
                client.set_weights(current)
                held = [weights.version] * workers
        if measuring and not steps and inference:  # the inference actors' figures from here on
            backend.get([client.stats(True) for client in inference])
        if measuring:
            steps += stats.num_steps
            for k in timings:
                timings[k] += stats.timings.get(k, 0.0)
        submit(i)
    wall = time.perf_counter() - t0
    served = backend.get([client.stats() for client in inference])
    backend.get(list(in_flight))
    for client in [*clients, *inference]:
        backend.kill(client)
    if served:
        timings["inference_rows_per_batch"] = sum(s.rows for s in served) / max(sum(s.batches for s in served), 1)
        timings["inference_actor_busy"] = sum(s.busy for s in served) / len(served)
    return steps, timings, wall

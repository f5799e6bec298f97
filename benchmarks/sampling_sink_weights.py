"""How ``bench sampling``'s sink hands out weights, before/after in one run: every version through the object
store (``ray.put``, the sink's first version) against as a learner's call returns them (``publish``: small
weights by value, inside the sample calls), on cartpole_appo's rollout actors.

    python benchmarks/sampling_sink_weights.py benchmarks/sampling_sink_weights.json

2 rollout actors with 2 sample calls in flight each (the shape whose efficiency issue 20 asks >= 60 % of), a new
weights version every 2 chunks, as in ``bench sampling``; the two variants alternate for 5 rounds of 10 s and
the figures are medians of agent steps/s. A real run's weights are a learner call's return, which Ray keeps in
the driver's memory and sends inside the next sample calls when under its inline limit: the object-store
variant measures a put and a fetch per version that no real run makes.
"""

from __future__ import annotations

import statistics
import sys
import tempfile

import torch

from raylab.bench.machine import save_report
from raylab.bench.sink import sample_with_sink
from raylab.builders import build_learner
from raylab.config import resolve
from raylab.envs.registry import env_spaces
from raylab.remote.ray_backend import RayBackend
from raylab.remote.runtime import shutdown_ray, start_local_ray
from raylab.train import compose

WORKERS, CALLS, ROUNDS, SECONDS = 2, 2, 5, 10.0


def main(output: str) -> None:
    torch.set_num_threads(1)
    cfg = resolve(compose(["+experiment=cartpole_appo", "logger.console=false"]), run_dir=tempfile.mkdtemp())
    spaces = env_spaces(cfg.env)
    weights = build_learner(cfg, spaces).get_weights()
    variants = {"object_store": False, "inline": True}
    rates: dict[str, list[float]] = {name: [] for name in variants}
    start_local_ray(WORKERS + 1)
    backend = RayBackend(cfg.ray, cfg.topology.max_actor_restarts)
    try:
        for round_ in range(ROUNDS):
            for name in variants if round_ % 2 == 0 else reversed(variants):
                steps, _, wall = sample_with_sink(
                    backend, cfg, spaces, WORKERS, SECONDS, weights, CALLS, variants[name]
                )
                rates[name].append(steps / wall)
                print(f"{name}: {steps / wall:,.0f} agent steps/s", flush=True)
    finally:
        shutdown_ray()
    medians = {name: statistics.median(values) for name, values in rates.items()}
    ratio = medians["inline"] / medians["object_store"]
    print(f"inline / object store: {ratio:.2f}x", flush=True)
    save_report(
        output,
        "sampling_sink_weights",
        f"cartpole_appo, {WORKERS} rollout actors x {CALLS} calls in flight, a version every {WORKERS} chunks; "
        f"{ROUNDS} alternating rounds of {SECONDS:g} s; medians of agent steps/s",
        "python benchmarks/sampling_sink_weights.py benchmarks/sampling_sink_weights.json",
        {"agent_steps_per_s": medians, "ratio_inline_over_object_store": ratio, "rounds": rates},
    )


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "benchmarks/sampling_sink_weights.json")

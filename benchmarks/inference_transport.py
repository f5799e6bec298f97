"""The transport of central inference, measured: a Ray actor call per request against a shared-memory channel
(raylab/rollout/shm.py), from a rollout-actor-like caller process to an inference actor whose policy costs
nothing, so that only the transport is timed.

    python benchmarks/inference_transport.py --output benchmarks/inference_transport.json

For each payload (one env split's observations: CartPole 4 x 4 float32, Pong 8 x 4x84x84 uint8, CoinRun
16 x 64x64x3 uint8), in one Ray session, the transports alternating round by round:

    round trip     one caller, one request at a time: microseconds from sending the observations to holding the
                   actions (median over the calls of a round)
    served         every caller (--callers, each its own actor process) sending back to back for --seconds:
                   requests/s the inference actor answers, and its process's CPU microseconds per request (what
                   limits one inference actor serving many workers on a many-core machine)
    bytes          what one request moves: observations in, actions + log-probabilities + version out

Medians over rounds. On 2 shared cores the callers and the inference actor compete for the same cores.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import numpy as np

PAYLOADS = {
    "cartpole": ((4,), "float32", 4),
    "pong": ((4, 84, 84), "uint8", 8),
    "coinrun": ((64, 64, 3), "uint8", 16),
}


class Nothing:
    """A policy that costs nothing: zeros for actions and log-probabilities."""

    version = 0
    last_log_probs: np.ndarray | None = None

    def act(self, obs: np.ndarray) -> np.ndarray:
        self.last_log_probs = np.zeros(len(obs), np.float32)
        return np.zeros(len(obs), np.int64)

    def set_weights(self, weights: Any, exact: bool = False) -> bool:
        return False


def make_server() -> Any:
    from raylab.rollout.inference import InferenceServer

    return InferenceServer(Nothing())


def hosts() -> tuple[type, type]:
    from raylab.hosts import InferenceHost
    from raylab.remote.host import remote
    from raylab.rollout.shm import ShmChannel, this_machine

    class Server(InferenceHost):
        """The inference actor (its channels: InferenceHost's), and its process's CPU time."""

        def __init__(self) -> None:
            super().__init__(make_server)

        @remote()
        def cpu_seconds(self) -> float:
            times = os.times()
            return times.user + times.system

        @remote()
        def served(self) -> int:
            return self.server.stats().requests

    class Caller:
        """A rollout actor's end of the transport."""

        def __init__(self, server: Any, shape: tuple[int, ...], dtype: str, rows: int) -> None:
            import ray

            self.ray, self.server = ray, server
            self.obs = np.random.default_rng(0).integers(0, 255, (rows, *shape)).astype(dtype)
            key = f"bench-{uuid.uuid4().hex[:8]}"  # as a rollout worker asks (raylab.rollout.acting.CentralActions)
            name, _ = ray.get(
                server.open_channel.remote(key, rows, shape, np.dtype(dtype).str, this_machine(), ((), "<i8"))
            )
            self.channel = ShmChannel(name, rows, shape, np.dtype(dtype))

        def ready(self) -> bool:
            return True

        def round_trips(self, transport: str, calls: int) -> list[float]:
            out = []
            for _ in range(calls):
                start = time.perf_counter()
                self.call(transport)
                out.append((time.perf_counter() - start) * 1e6)
            return out

        def call(self, transport: str) -> Any:
            if transport == "ray":
                return self.ray.get(self.server.infer.remote(self.obs))
            self.channel.send(self.obs)
            return self.channel.receive()

        def back_to_back(self, transport: str, seconds: float) -> int:
            n, end = 0, time.perf_counter() + seconds
            while time.perf_counter() < end:
                self.call(transport)
                n += 1
            return n

        def close(self) -> None:
            self.channel.close()

    return Server, Caller


def main() -> int:
    import ray

    from raylab.bench.machine import machine_info
    from raylab.remote.runtime import shutdown_ray, start_local_ray

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--payloads", nargs="+", default=list(PAYLOADS), choices=list(PAYLOADS))
    parser.add_argument("--callers", type=int, default=2)
    parser.add_argument("--calls", type=int, default=400)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--output", default="benchmarks/inference_transport.json")
    args = parser.parse_args()
    start_local_ray(args.callers + 1)
    Server, Caller = hosts()
    results: dict[str, Any] = {}
    try:
        server = ray.remote(Server).options(num_cpus=1, max_concurrency=2 * args.callers + 4).remote()
        ray.get(server.ready.remote())
        for name in args.payloads:
            shape, dtype, rows = PAYLOADS[name]
            callers = [
                ray.remote(Caller).options(num_cpus=1).remote(server, shape, dtype, rows) for _ in range(args.callers)
            ]
            ray.get([c.ready.remote() for c in callers])
            measures = ("round_trip_us", "served_per_s", "server_cpu_us_per_request")
            rows_out = {t: {m: [] for m in measures} for t in ("ray", "shm")}
            for round_ in range(args.rounds):
                for transport in ("ray", "shm") if round_ % 2 == 0 else ("shm", "ray"):
                    ray.get(callers[0].round_trips.remote(transport, 50))  # warm-up
                    trips = ray.get(callers[0].round_trips.remote(transport, args.calls))
                    cpu0, n0 = ray.get([server.cpu_seconds.remote(), server.served.remote()])
                    start = time.perf_counter()
                    done = sum(ray.get([c.back_to_back.remote(transport, args.seconds) for c in callers]))
                    wall = time.perf_counter() - start
                    cpu1, n1 = ray.get([server.cpu_seconds.remote(), server.served.remote()])
                    out = rows_out[transport]
                    out["round_trip_us"].append(statistics.median(trips))
                    out["served_per_s"].append(done / wall)
                    out["server_cpu_us_per_request"].append((cpu1 - cpu0) / max(n1 - n0, 1) * 1e6)
                    print(
                        f"{name} {transport}: round trip {out['round_trip_us'][-1]:,.0f} us, {done / wall:,.0f} "
                        f"requests/s served, server CPU {out['server_cpu_us_per_request'][-1]:,.0f} us/request",
                        flush=True,
                    )
            ray.get([c.close.remote() for c in callers])
            for c in callers:
                ray.kill(c)
            obs_bytes = int(np.prod(shape)) * np.dtype(dtype).itemsize * rows
            results[name] = {
                "obs_shape": list(shape), "dtype": dtype, "rows": rows,
                "bytes_per_request": {"in": obs_bytes, "out": rows * (8 + 4) + 8},
                "median": {t: {k: statistics.median(v) for k, v in m.items()} for t, m in rows_out.items()},
                "rounds": rows_out,
            }  # fmt: skip
            med = results[name]["median"]
            results[name]["shm_over_ray"] = {k: med["shm"][k] / med["ray"][k] for k in med["ray"]}
    finally:
        shutdown_ray()
    report = {
        "benchmark": "inference_transport",
        "protocol": f"{args.rounds} rounds, the transports alternating; round trip: median of {args.calls} calls of "
        f"one caller; served: {args.callers} callers back to back for {args.seconds:g} s; a policy that costs "
        "nothing; an embedded Ray with one CPU per caller and one for the inference actor; medians over rounds",
        "machine": machine_info(),
        "callers": args.callers,
        "results": results,
    }
    Path(args.output).write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

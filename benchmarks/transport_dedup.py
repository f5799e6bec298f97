"""Frames sent once: what de-duplicating a Pong chunk's frame stacks before transport saves and costs.

    python benchmarks/transport_dedup.py --output benchmarks/transport_dedup.json

A rollout chunk of stacked frames, obs [T+1, E, k, H, W], repeats each frame k times: a stack shares its first k-1
frames with the step before. Replay already stores each frame once (raylab/replay/frames.py). This measures the
same idea at the transport, on real chunks from ``pong_appo``'s rollout worker (16 envs x 64 steps, 4 gray 84x84
frames a stack), in one process on one thread, the two variants alternating round by round:

- plain:  the sender ``ray.put``s obs (what returning a chunk from a rollout actor costs: one copy into the object
          store); the receiver ``ray.get``s it (a zero-copy view of shared memory);
- dedup:  the sender encodes obs as the chunk's distinct frames [F, H, W] plus ids [T+1, E, k] (a stack whose
          first k-1 frames are not the last k-1 of the stack before, as after a reset, sends all k; checked frame by
          frame, so decoding is exact) and puts both; the receiver gets them and gathers the stacks back.

It reports bytes per chunk, CPU milliseconds per chunk on each side (medians over rounds), and the network time
the saved bytes would take on a 1 and a 10 Gb/s link between nodes: what dedup could buy across machines, against
what it costs on one.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

OVERRIDES = ["+experiment=pong_appo", "topology.envs_per_worker=16", "topology.rollout_length=64"]


def encode(obs: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """obs [T+1, E, k*C, H, W] -> (frames [F, C, H, W], ids [T+1, E, k] int32) with frames[ids] == the stacks."""
    steps1, envs = obs.shape[:2]
    stacks = obs.reshape(steps1, envs, k, obs.shape[2] // k, *obs.shape[3:])
    shared = (stacks[1:, :, :-1] == stacks[:-1, :, 1:]).reshape(steps1 - 1, envs, -1).all(axis=2)
    total = envs * k + int(np.where(shared, 1, k).sum())
    frames = np.empty((total, *stacks.shape[3:]), obs.dtype)
    ids = np.empty((steps1, envs, k), np.int32)
    frames[: envs * k] = stacks[0].reshape(envs * k, *stacks.shape[3:])
    ids[0] = np.arange(envs * k, dtype=np.int32).reshape(envs, k)
    n = envs * k
    for t in range(1, steps1):
        s = shared[t - 1]
        ns = int(s.sum())
        frames[n : n + ns] = stacks[t, s, -1]
        ids[t, s, :-1] = ids[t - 1, s, 1:]
        ids[t, s, -1] = np.arange(n, n + ns, dtype=np.int32)
        n += ns
        m = envs - ns
        if m:
            frames[n : n + m * k] = stacks[t, ~s].reshape(m * k, *stacks.shape[3:])
            ids[t, ~s] = np.arange(n, n + m * k, dtype=np.int32).reshape(m, k)
            n += m * k
    return frames, ids


def decode(frames: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """The stacks back: [T+1, E, k*C, H, W]."""
    out = frames[ids]
    return out.reshape(*ids.shape[:2], -1, *frames.shape[2:])


def sample_chunks(n: int) -> tuple[list[np.ndarray], int]:
    import torch

    from raylab.builders import build_learner, build_rollout_worker
    from raylab.config import resolve
    from raylab.envs.registry import env_spaces
    from raylab.train import compose

    cfg = resolve(compose([*OVERRIDES, "logger.console=false"]), run_dir=tempfile.mkdtemp())
    spaces = env_spaces(cfg.env)
    weights = build_learner(cfg, spaces).get_weights()
    torch.set_num_threads(1)
    worker = build_rollout_worker(cfg, spaces, 0)
    worker.set_weights(weights)
    chunks = [np.ascontiguousarray(worker.sample()[0].obs) for _ in range(n)]
    worker.env.close()
    return chunks, cfg.env.frame_stack


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chunks", type=int, default=12, help="real chunks sampled, each sent once a round")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--output", default="benchmarks/transport_dedup.json")
    args = parser.parse_args()

    import ray

    from raylab.bench.machine import machine_info
    from raylab.remote.runtime import shutdown_ray, start_local_ray

    chunks, k = sample_chunks(args.chunks)
    encoded = [encode(obs, k) for obs in chunks]
    for obs, (frames, ids) in zip(chunks, encoded, strict=True):
        if not np.array_equal(decode(frames, ids), obs):
            raise SystemExit("transport_dedup: decode(encode(obs)) differs from obs; the codec is wrong")
    plain_bytes = statistics.median(obs.nbytes for obs in chunks)
    dedup_bytes = statistics.median(f.nbytes + i.nbytes for f, i in encoded)
    steps, envs = chunks[0].shape[0] - 1, chunks[0].shape[1]
    whole = statistics.median((f.shape[0] - envs * k - steps * envs) / (k - 1) for f, _ in encoded)
    whole_share = whole / (steps * envs)  # stacks after the first step sent whole (resets): the rest send 1 frame

    start_local_ray(2)
    times: dict[str, list[float]] = {k2: [] for k2 in ("plain/send", "plain/receive", "dedup/send", "dedup/receive")}
    try:
        for round_ in range(args.rounds):
            for variant in ("plain", "dedup") if round_ % 2 == 0 else ("dedup", "plain"):
                dedup = variant == "dedup"
                t0 = time.process_time()
                refs = [ray.put(encode(obs, k) if dedup else obs) for obs in chunks]
                t1 = time.process_time()
                got = [decode(*ray.get(r)) if dedup else ray.get(r) for r in refs]
                t2 = time.process_time()
                assert all(g.shape == obs.shape for g, obs in zip(got, chunks, strict=True))
                del got, refs
                times[f"{variant}/send"].append(1e3 * (t1 - t0) / len(chunks))
                times[f"{variant}/receive"].append(1e3 * (t2 - t1) / len(chunks))
            print(f"round {round_ + 1}/{args.rounds}: " + ", ".join(f"{k2} {v[-1]:.2f} ms" for k2, v in times.items()))
    finally:
        shutdown_ray()
    med = {key: statistics.median(v) for key, v in times.items()}
    saved = plain_bytes - dedup_bytes
    obs0 = chunks[0]
    report: dict[str, Any] = {
        "benchmark": "transport_dedup",
        "protocol": f"pong_appo's rollout worker: {args.chunks} real chunks of {obs0.shape[1]} envs x "
        f"{obs0.shape[0] - 1} steps ({obs0.shape[2]}x{obs0.shape[3]}x{obs0.shape[4]} uint8 a step), each put and got "
        f"once a round on an embedded Ray, one thread; {args.rounds} rounds, the variants alternating; CPU time "
        "(process_time) per chunk, medians",
        "machine": machine_info(),
        "chunk_shape": list(obs0.shape),
        "bytes_per_chunk": {"plain": plain_bytes, "dedup": dedup_bytes},
        "bytes_ratio": plain_bytes / dedup_bytes,
        "stacks_sent_whole_share": whole_share,
        "median_cpu_ms_per_chunk": med,
        "extra_cpu_ms_per_chunk": {
            "send": med["dedup/send"] - med["plain/send"],
            "receive": med["dedup/receive"] - med["plain/receive"],
        },
        "link_ms_saved_per_chunk": {"1_gbit": 1e3 * saved * 8 / 1e9, "10_gbit": 1e3 * saved * 8 / 1e10},
        "agent_steps_per_chunk": int((obs0.shape[0] - 1) * obs0.shape[1]),
        "rounds": times,
    }
    Path(args.output).write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps({k2: v for k2, v in report.items() if k2 not in ("rounds", "machine")}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

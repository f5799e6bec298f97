"""Replay memory per transition with and without frame de-duplication, on real Super Mario Bros frames.

    python benchmarks/replay_memory.py benchmarks/replay_memory.json

A mario_dqn rollout worker (4 envs, 84x84 gray, stack 4, frame skip 4, random actions) fills two replay
buffers of the same capacity with the same chunks, 1.5 x capacity env steps so that both have wrapped: one
stores observations as arrays, the other each frame once. Reported per transition: allocated bytes of the
whole buffer (frames or observations, ids, actions, rewards, discounts, keys, priorities), frames actually
stored, and both as multiples of one 84x84 uint8 frame (7,056 bytes). Also times the prioritized sampler
serving batches of 512 and the learner's priority updates for them, at that size.
"""

from __future__ import annotations

import json
import sys
import time

import numpy as np

from raylab.bench.machine import machine_info
from raylab.builders import build_rollout_worker
from raylab.config import resolve
from raylab.envs import env_spaces
from raylab.replay import ReplayBuffer
from raylab.replay.buffer import PrioritizedSpec
from raylab.train import compose

CAPACITY = 8192
FRAME = 84 * 84


def main(output: str) -> None:
    cfg = resolve(compose(["+experiment=mario_dqn", "logger.console=false", "topology.envs_per_worker=4"]), "/tmp/rm")
    spaces = env_spaces(cfg.env)
    worker = build_rollout_worker(cfg, spaces, 0)
    spec = PrioritizedSpec()
    common = dict(capacity=CAPACITY, obs_shape=spaces.obs_shape, obs_dtype=spaces.obs_dtype, n_step=3, gamma=0.99,
                  seed=0, prioritized=spec)  # fmt: skip
    plain = ReplayBuffer(**common)  # type: ignore[arg-type]
    dedup = ReplayBuffer(**common, frame_stack=4, dedup=True)  # type: ignore[arg-type]
    steps, episodes, start = 0, 0, time.perf_counter()
    while steps < 1.5 * CAPACITY:
        chunk, stats = worker.sample()
        plain.add_chunk(chunk)
        dedup.add_chunk(chunk)
        steps += stats.num_steps
        episodes += len(stats.episodes)
    collect_s = time.perf_counter() - start
    # the same slots read from both buffers must hold the same stacks
    idx = np.arange(0, CAPACITY, 7)
    rows_p = plain.storage.read(idx)
    rows_d = dedup.storage.read(idx)
    assert dedup.dedup is not None
    same = bool(np.array_equal(rows_p["obs"], dedup.dedup.pool.gather(rows_d["obs"]))
                and np.array_equal(rows_p["next_obs"], dedup.dedup.pool.gather(rows_d["next_obs"])))  # fmt: skip
    result = {}
    for name, buf in (("arrays", plain), ("frame_dedup", dedup)):
        s = buf.stats()
        result[name] = {
            "bytes_per_transition": s.bytes_per_transition,
            "frames_of_84x84_per_transition": s.bytes_per_transition / FRAME,
            "frames_stored_per_transition": s.frames_per_transition if s.frames else 8.0,
            "total_mb": s.nbytes / 2**20,
        }
    timing: dict[str, float] = {}
    for name, buf in (("arrays", plain), ("frame_dedup", dedup)):
        t = time.perf_counter()
        for _ in range(20):
            batch = buf.sample(512)
            buf.update_priorities(batch.indices, np.random.default_rng(0).random(512))
        timing[f"{name}_sample512_plus_priority_update_ms"] = (time.perf_counter() - t) / 20 * 1e3
    report = {
        "benchmark": "replay_memory",
        "env": "mario_dqn: SuperMarioBros-1-1, 84x84 gray, stack 4, frame skip 4, random actions, 4 envs",
        "capacity": CAPACITY,
        "env_steps_added": steps,
        "episodes": episodes,
        "collect_s": collect_s,
        "stacks_identical": same,
        "results": result,
        "memory_ratio_arrays_over_dedup": result["arrays"]["bytes_per_transition"]
        / result["frame_dedup"]["bytes_per_transition"],
        "timing": timing,
        "machine": machine_info(),
    }
    with open(output, "w") as f:
        json.dump(report, f, indent=2)
        f.write("\n")
    print(json.dumps({k: report[k] for k in ("results", "memory_ratio_arrays_over_dedup", "stacks_identical",
                                                "timing", "episodes")}, indent=1))  # fmt: skip


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "benchmarks/replay_memory.json")

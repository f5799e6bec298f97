"""Super Mario Bros frames out of nes-py: a copy of nes-py's RGB view of its frame buffer (``before``: a strided,
element-by-element copy, ``np.array(view)``, the cost of the ``frame.copy()`` ``MarioEnv`` took every frame until
this benchmark) against one channel swap of the contiguous BGRx buffer under that view (``after``:
``cv2.cvtColor``, raylab.envs.mario.MarioEnv._frame).

python benchmarks/mario_frame_copy.py mario_frame_copy.json [--rounds 5] [--seconds 8]

Two timings, each in one process on one core: ``MarioEnv.step`` alone (one emulator frame, the experiment's stall
and flag options), and a rollout actor's vector env of ``+experiment=mario_dqn env.resize=[64,64]`` (4 envs, frame
skip 4 max-pooled, gray, 64 x 64, stack 4), in agent steps. Random actions from a seeded generator; an ended
episode resets. The two copies alternate on the same envs, the first of each round taking turns (``before`` sets
``MarioEnv._bgrx`` to None, the path a layout other than nes-py's takes); each figure is the median over rounds,
the ratio is after / before (above 1 is faster), and ``paired_ratio`` is the median of each round's own ratio.
Both give the same frames (checked before timing); an env rebuilt after a crash would leave both variants'
control, so the run fails then.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from raylab.bench.machine import machine_info
from raylab.envs.mario import MarioEnv

OVERRIDES = ["+experiment=mario_dqn", "env.resize=[64,64]"]
VARIANTS = ("before", "after")


def set_copy(envs: list[MarioEnv], buffers: list[Any], variant: str) -> None:
    for env, buffer in zip(envs, buffers, strict=True):
        env._bgrx = buffer if variant == "after" else None


def frames_per_s(env: MarioEnv, actions: np.ndarray, seconds: float) -> float:
    """MarioEnv.step calls a second over ``seconds``."""
    steps, start = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - start) < seconds:
        for _ in range(50):
            _, _, terminated, truncated, _ = env.step(int(actions[steps % len(actions)]))
            steps += 1
            if terminated or truncated:
                env.reset()
    return steps / elapsed


def agent_steps_per_s(venv: Any, actions: np.ndarray, seconds: float) -> float:
    """Agent steps a second of the vector env (all its envs) over ``seconds``."""
    calls, start, n = 0, time.perf_counter(), venv.num_envs
    while (elapsed := time.perf_counter() - start) < seconds:
        for _ in range(5):
            venv.step(actions[(calls * n) % (len(actions) - n) :][:n])
            calls += 1
    return calls * n / elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("output")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=8.0, help="per timing")
    args = parser.parse_args()
    from raylab.config import resolve
    from raylab.envs.registry import make_vector_env
    from raylab.train import compose

    with tempfile.TemporaryDirectory(prefix="raylab-bench-") as run_dir:
        run = resolve(compose(OVERRIDES), run_dir=run_dir)
    actions = np.random.default_rng(0).integers(0, 7, 100_000)
    opts = run.env.options
    env = MarioEnv(
        run.env.id, actions=opts["actions"], stall_frames=opts["stall_steps"] * run.env.frame_skip,
        flag_reward=opts["flag_reward"], stall_penalty=opts["stall_penalty"],
    )  # fmt: skip
    env.reset(seed=0)
    venv = make_vector_env(run.env, 4, seed=0)
    venv.reset()
    envs = [env, *(e.unwrapped for e in venv.envs)]
    buffers = [e._bgrx for e in envs]
    assert all(b is not None for b in buffers), "nes-py's frame buffer is not laid out as BGRx here"
    for _ in range(30):
        env.step(1)
    after = env._frame()
    env._bgrx = None
    assert np.array_equal(after, env._frame())
    env._bgrx = buffers[0]

    single: dict[str, list[float]] = {v: [] for v in VARIANTS}
    vector: dict[str, list[float]] = {v: [] for v in VARIANTS}
    for r in range(args.rounds):
        for v in VARIANTS if r % 2 == 0 else VARIANTS[::-1]:
            set_copy(envs, buffers, v)
            single[v].append(frames_per_s(env, actions, args.seconds))
            vector[v].append(agent_steps_per_s(venv, actions, args.seconds))
        print(f"round {r + 1}/{args.rounds}: " + ", ".join(
            f"{v} {single[v][-1]:.0f} frames/s, {vector[v][-1]:.1f} agent steps/s" for v in VARIANTS
        ))  # fmt: skip
    assert venv.restarts == 0, "an env crashed and was rebuilt: its copy was no longer the variant's"
    venv.close()
    env.close()

    def summary(samples: dict[str, list[float]]) -> dict[str, float]:
        medians = {v: statistics.median(s) for v, s in samples.items()}
        paired = statistics.median(a / b for a, b in zip(samples["after"], samples["before"], strict=True))
        return {**medians, "ratio": medians["after"] / medians["before"], "paired_ratio": paired}

    result = {
        "benchmark": "mario_frame_copy", "overrides": OVERRIDES, "rounds": args.rounds, "seconds": args.seconds,
        "order": "the first variant of each round taking turns",
        "machine": machine_info(), "vector_envs": 4, "frame_skip": run.env.frame_skip,
        "env_frames_per_s": summary(single), "env_frames_per_s_rounds": single,
        "vector_agent_steps_per_s": summary(vector), "vector_agent_steps_per_s_rounds": vector,
    }  # fmt: skip
    for key in ("env_frames_per_s", "vector_agent_steps_per_s"):
        s = result[key]
        ratios = f"{s['ratio']:.2f}x (paired {s['paired_ratio']:.2f}x)"
        print(f"{key}: before {s['before']:.1f}  after {s['after']:.1f}  {ratios}")
    path = Path(__file__).parent / args.output
    path.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

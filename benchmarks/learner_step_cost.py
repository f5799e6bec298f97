"""The learner's fixed cost per optimizer step, with the work taken out, and the ops it runs per step; raylab
trees compared in one run.

    WANDB_MODE=disabled .venv/bin/python benchmarks/learner_step_cost.py --repeats 5 \\
        --variant old=/tmp/raylab-fefcb63 --variant new=. --output benchmarks/learner_step_cost.json

(/tmp/raylab-fefcb63: ``git worktree add /tmp/raylab-fefcb63 fefcb63`` with its ``raylab/conf -> ../conf``
link.) A variant is ``NAME=TREE[,OVERRIDE...]``: every measurement is a fresh child process with
``PYTHONPATH=TREE`` (before the caller's), so each imports its own raylab; the overrides are added to the workload's.

Workloads: the learner as the builders make it (``build_learner``) for three experiments, at their own call
shapes:

- ``appo``: ``pong_appo``: a call is 2 chunks x 16 envs x 64 steps, 4 epochs x 8 minibatches of 256 (2 epochs
  until 2026-11-29, when the committed JSON was measured);
- ``ppo``: ``pong_ppo``: a round of 2 x 8 envs x 128 steps, 4 epochs x 4 minibatches of 512;
- ``dqn``: ``mario_dqn``: a call is 8 prioritized replay batches of 32.

The work is taken out: the network is ``model=mlp model.hidden_sizes=[1]`` (one unit: near-zero FLOPs), in fp32
on one torch thread, with ``learner.fused=false`` (the torch path, the one a GPU runs; the fused NumPy update
for small MLPs on the CPU is a different path). Two observation shapes:

- ``vector``: 4 float32 per step: what is left is the learner's own cost per step (dispatch, Python,
  syncs, copies of small tensors);
- ``frames``: Pong's and Mario's 4 x 84 x 84 uint8 frames: the same, plus moving the frames (the minibatch
  gather, the uint8 -> float conversion the encoder makes).

``--real`` keeps the work: the experiment's own network and precision (add ``learner.device=cuda`` as a
variant override on a GPU machine, benchmarks/gpu_learner_ab.sh).

Per child: ``--warmup`` calls, then ``--calls`` timed calls; the figure is microseconds per optimizer step (the
call's time over its steps, so a PPO round's value pass and returns are included). Then one call under
``torch.profiler``: the aten ops it ran per optimizer step, all of them and the top-level ones (those no
other aten op called: each is one dispatch from Python), and the ten most frequent. Variants alternate in
every repeat, the order rotating; figures are medians over repeats. The load average is recorded before each
child (the machine is shared).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

WORKLOADS = {
    "appo": "pong_appo",
    "ppo": "pong_ppo",
    "dqn": "mario_dqn",
}
OBS = {"vector": ((4,), "float32"), "frames": ((4, 84, 84), "uint8")}
WORK_OUT = [
    "model=mlp", "model.hidden_sizes=[1]", "learner.precision=fp32", "learner.fused=false", "learner.num_threads=1",
    "learner.compile=false", "model.rollout_precision=fp32", "logger.console=false",
]  # fmt: skip


# -- child: one measurement in the tree on PYTHONPATH ----------------------------------------------------------
def _config(workload: str, overrides: list[str], real: bool = False) -> Any:
    from raylab.config import resolve
    from raylab.train import compose

    work = ["logger.console=false", "learner.num_threads=1"] if real else WORK_OUT
    full = [f"+experiment={WORKLOADS[workload]}", *work, *overrides]
    return resolve(compose(full), run_dir=f"/tmp/raylab-step-cost-{workload}")


def _inputs(cfg: Any, workload: str, obs_shape: tuple[int, ...], dtype: Any, seed: int) -> list[Any]:
    """One call's input at the experiment's shapes: its chunks (PPO: a round; APPO: chunks_per_update) or its
    replay batches (DQN), random, with a few episode ends."""
    import numpy as np

    from raylab.types import Batch, Chunk

    rng = np.random.default_rng(seed)

    def obs(*lead: int) -> Any:
        if dtype == np.uint8:
            return rng.integers(0, 256, (*lead, *obs_shape), dtype=np.uint8)
        return rng.standard_normal((*lead, *obs_shape)).astype(np.float32)

    topo = cfg.topology
    if workload == "dqn":
        b = cfg.learner.batch_size
        return [
            Batch(
                obs=obs(b),
                actions=rng.integers(0, 6, b),
                rewards=rng.standard_normal(b).astype(np.float32),
                discounts=np.full(b, 0.99**3, np.float32),
                next_obs=obs(b),
                weights=np.ones(b, np.float32),
                indices=np.arange(k * b, (k + 1) * b),
            )
            for k in range(cfg.learner.updates_per_call)
        ]
    count = topo.num_workers if workload == "ppo" else cfg.algo.chunks_per_update
    steps, envs = topo.rollout_length, topo.envs_per_worker
    chunks = []
    for worker in range(count):
        terminated = rng.random((steps, envs)) < 0.005
        truncated = (rng.random((steps, envs)) < 0.002) & ~terminated
        final_index = np.argwhere(truncated)
        chunks.append(
            Chunk(
                obs=obs(steps + 1, envs),
                actions=rng.integers(0, 6, (steps, envs)),
                rewards=np.where(terminated, 1.0, 0.0).astype(np.float32),
                terminated=terminated,
                truncated=truncated,
                final_obs=obs(len(final_index)),
                final_index=final_index,
                policy_version=0,
                worker_id=worker,
                seq=0,
                log_probs=np.full((steps, envs), -np.log(6), np.float32),
            )
        )
    return chunks


def _top_level(events: list[Any]) -> list[Any]:
    """The aten ops no other aten op called (one dispatch from Python each)."""
    out = []
    for event in events:
        if not event.name.startswith("aten::"):
            continue
        parent = event.cpu_parent
        while parent is not None and not parent.name.startswith("aten::"):
            parent = parent.cpu_parent
        if parent is None:
            out.append(event)
    return out


def child(args: argparse.Namespace) -> dict[str, Any]:
    import numpy as np
    import torch

    from raylab.builders import build_learner
    from raylab.types import EnvSpaces

    shape, dtype = OBS[args.obs]
    cfg = _config(args.workload, args.override, real=args.real)
    spaces = EnvSpaces(shape, np.dtype(dtype), 6, "Discrete(6)", frames_per_step=4)
    learner = build_learner(cfg, spaces)
    torch.set_num_threads(1)
    inputs = [_inputs(cfg, args.workload, shape, np.dtype(dtype), seed) for seed in range(2)]
    for k in range(args.warmup):
        learner.update_many(inputs[k % 2])
    steps = 0
    start = time.perf_counter()
    for k in range(args.calls):
        steps += learner.update_many(inputs[k % 2]).updates  # each call ends in its one host sync
    seconds = time.perf_counter() - start
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        profiled = learner.update_many(inputs[0]).updates
    events = [e for e in prof.events() if e.name.startswith("aten::")]
    top = _top_level(list(prof.events()))
    return {
        "us_per_step": 1e6 * seconds / steps,
        "ms_per_call": 1e3 * seconds / args.calls,
        "steps_per_call": steps / args.calls,
        "aten_ops_per_step": len(events) / profiled,
        "top_level_ops_per_step": len(top) / profiled,
        "top_ops": dict(Counter(e.name for e in top).most_common(10)),
        "fused": bool(getattr(learner, "fused", False)),
    }


# -- parent: variants alternating ------------------------------------------------------------------------------
def parse_variants(texts: list[str]) -> dict[str, tuple[str, list[str]]]:
    """``NAME=TREE[,OVERRIDE...]`` -> {name: (tree, overrides)}, in the given order."""
    variants = {}
    for text in texts:
        name, _, rest = text.partition("=")
        tree, *overrides = rest.split(",")
        variants[name] = (tree, overrides)
    return variants


def child_output(script: str, tree: str, options: list[str]) -> dict[str, Any]:
    """Run ``script child OPTIONS`` in a fresh process importing raylab from ``tree``; its last stdout line's JSON."""
    path = [str(Path(tree).resolve()), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(path), "WANDB_MODE": "disabled"}  # TREE first
    cmd = [sys.executable, str(Path(script).resolve()), "child", *options]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=tree)
    if proc.returncode:
        raise SystemExit(f"{tree} {' '.join(options)} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def commit_of(tree: str) -> str:
    try:
        described = subprocess.run(
            ["git", "-C", tree, "describe", "--always", "--dirty"], capture_output=True, text=True
        )
    except OSError:  # no git program at all (a bare GPU machine): the record below
        described = None
    if described is not None and described.stdout.strip():
        return described.stdout.strip()
    # a tree without git: its .commit file (make bench-gpu-ab writes it), or RAYLAB_COMMIT for this one
    record = Path(tree) / ".commit"
    if record.is_file():
        return record.read_text().strip()[:7] or "?"
    here = Path(tree).resolve() == Path.cwd().resolve()
    return (here and os.environ.get("RAYLAB_COMMIT", "")[:7]) or "?"


def _run_child(tree: str, overrides: list[str], workload: str, obs: str, args: argparse.Namespace) -> dict[str, Any]:
    options = ["--workload", workload, "--obs", obs, "--warmup", str(args.warmup), "--calls", str(args.calls)]
    options += [f"--override={o}" for o in overrides] + (["--real"] if args.real else [])
    return child_output(__file__, tree, options)


def parent(args: argparse.Namespace) -> None:
    from raylab.bench.machine import machine_info

    variants = parse_variants(args.variant)
    names = list(variants)
    cells = [(w, o) for w in args.workloads for o in args.obs]
    rows: dict[str, dict[str, list[dict[str, Any]]]] = {n: {f"{w}/{o}": [] for w, o in cells} for n in names}
    for r in range(args.repeats):
        k = r % len(names)
        for workload, obs in cells:
            for name in names[k:] + names[:k]:
                tree, overrides = variants[name]
                load = [round(x, 2) for x in os.getloadavg()]
                row = _run_child(tree, overrides, workload, obs, args)
                rows[name][f"{workload}/{obs}"].append({**row, "repeat": r, "load_before": load})
                us, ops = row["us_per_step"], row["top_level_ops_per_step"]
                print(f"repeat {r} {name:6s} {workload}/{obs}: {us:8.0f} us/step, {ops:6.1f} ops/step", flush=True)
    summary: dict[str, Any] = {}
    for workload, obs in cells:
        cell = f"{workload}/{obs}"
        per = {}
        for name in names:
            got = rows[name][cell]
            per[name] = {
                "us_per_step": statistics.median(x["us_per_step"] for x in got),
                "aten_ops_per_step": statistics.median(x["aten_ops_per_step"] for x in got),
                "top_level_ops_per_step": statistics.median(x["top_level_ops_per_step"] for x in got),
                "steps_per_call": got[0]["steps_per_call"],
                "top_ops": got[-1]["top_ops"],
            }
        base = per[names[0]]["us_per_step"]
        for name in names:
            per[name]["time_ratio_vs_" + names[0]] = per[name]["us_per_step"] / base
        summary[cell] = per
    report = {
        "benchmark": "learner_step_cost",
        "protocol": (
            f"{args.repeats} repeats, variants alternating (order rotating), a fresh process each; {args.warmup} "
            f"warm-up calls, then {args.calls} timed; medians. Model: "
            + ("the experiment's own (--real)" if args.real else " ".join(WORK_OUT))
        ),
        "workloads": {w: WORKLOADS[w] for w in args.workloads},
        "variants": {n: {"tree": t, "commit": commit_of(t), "overrides": o} for n, (t, o) in variants.items()},
        "machine": machine_info(),
        "summary": summary,
        "rows": rows,
    }
    Path(args.output).write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {args.output}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("mode", nargs="?", default="parent", choices=["parent", "child"])
    p.add_argument("--variant", action="append", default=[], help="NAME=TREE[,OVERRIDE...]")
    p.add_argument("--workloads", nargs="+", default=list(WORKLOADS), choices=list(WORKLOADS))
    p.add_argument("--obs", nargs="+", default=list(OBS), choices=list(OBS))
    p.add_argument("--workload", choices=list(WORKLOADS))
    p.add_argument("--override", action="append", default=[])
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--calls", type=int, default=10)
    p.add_argument("--real", action="store_true", help="the experiment's own network and precision (the work kept)")
    p.add_argument("--output", default="benchmarks/learner_step_cost.json")
    args = p.parse_args()
    if args.mode == "child":
        args.obs = args.obs[0] if isinstance(args.obs, list) else args.obs
        print(json.dumps(child(args)))
    else:
        if not args.variant:
            raise SystemExit("name at least one --variant NAME=TREE")
        parent(args)


if __name__ == "__main__":
    main()

"""Where a learner call's time goes, by phase, raylab trees compared in one run (a sampling profile of the
learner as the builders make it, on its experiment's own network and settings).

    WANDB_MODE=disabled .venv/bin/python benchmarks/learner_profile.py --repeats 3 \\
        --variant old=/tmp/raylab-fefcb63 --variant new=. --output benchmarks/learner_profile.json

Workloads: ``pong_appo`` (the Nature CNN in bf16, a call of 2 chunks x 16 envs x 64 steps, 4 epochs x 8
minibatches of 256; 2 epochs until 2026-11-29, when the committed JSON was measured) and ``mario_dqn`` (the
dueling Nature CNN in bf16, 8 prioritized batches of 32), on random
inputs of their shapes, torch on ``--threads`` threads. Each child warms up, then runs ``--calls`` calls under
pyinstrument (a sample every 0.5 ms) and files every sample under the first phase function on its stack:

- ``join``: the call's chunks joined (``join_chunks``; ``RoundLoader.load``);
- ``value pass``: the round's values and log-probabilities (``round_values``);
- ``returns``: GAE or V-trace and the crash fix-up (``gae``, ``vtrace``, ``bootstrap_before_crashes``);
- ``minibatch``: drawing and gathering a minibatch, normalizing its advantages;
- ``transfer``: a replay batch onto the device (``Placement.tensors``, ``batch_arrays``);
- ``forward``: the loss's forward pass (the objective's ``loss``);
- ``backward``: ``Tensor.backward`` or ``torch.autograd.grad``;
- ``optimizer``: zeroing gradients, clipping, Adam;
- ``metrics``: adding and reading the step metrics (the call's host sync);
- ``other``: everything else in the call (the learner's own Python).

Variants alternate in every repeat; each phase's figure is its median share of a call and its median
milliseconds per call. The load average is recorded before each child.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from learner_step_cost import _inputs, child_output, commit_of, parse_variants  # the step-cost bench's harness

WORKLOADS = {"appo": "pong_appo", "dqn": "mario_dqn"}
PHASES: dict[str, tuple[str, ...]] = {
    "join": ("join_chunks", "load"),
    "value pass": ("round_values", "_recurrent_round_values"),
    "returns": ("gae", "vtrace", "bootstrap_before_crashes"),
    "minibatch": (
        "minibatch_indices",
        "minibatch_rows",
        "MinibatchGather.__call__",
        "Gather.__call__",
        "finish_minibatch",
        "<genexpr>",
    ),
    "transfer": ("tensors", "batch_arrays", "prepare"),
    "forward": ("loss",),
    "backward": ("backward", "grad"),  # Tensor.backward, or torch.autograd.grad
    "optimizer": ("_clip_and_step", "_clip_and_adam", "_clip_and_adam_math", "zero_grad", "_apply"),
    "metrics": ("_accumulate", "add", "read", "_read"),
}


def _phase(function: str, cls: str | None) -> str | None:
    qualified = f"{cls}.{function}" if cls else function
    for phase, names in PHASES.items():
        if function in names or qualified in names:
            return phase
    return None


def _attribute(frame: Any, out: dict[str, float]) -> None:
    """Each sample's time to the outermost phase function on its stack (children of a phase stay in it)."""
    phase = _phase(frame.function, frame.class_name)
    if phase is not None:
        out[phase] = out.get(phase, 0.0) + frame.time
        return
    inner = sum(child.time for child in frame.children)
    out["other"] = out.get("other", 0.0) + frame.time - inner
    for child in frame.children:
        _attribute(child, out)


def child(args: argparse.Namespace) -> dict[str, Any]:
    import numpy as np
    import torch
    from pyinstrument import Profiler

    from raylab.builders import build_learner
    from raylab.config import resolve
    from raylab.train import compose
    from raylab.types import EnvSpaces

    overrides = [f"+experiment={WORKLOADS[args.workload]}", "logger.console=false", *args.override]
    cfg = resolve(compose(overrides), run_dir=f"/tmp/raylab-profile-{args.workload}")
    shape = (4, 84, 84)
    spaces = EnvSpaces(shape, np.dtype(np.uint8), 7 if args.workload == "dqn" else 6, "Discrete", frames_per_step=4)
    learner = build_learner(cfg, spaces)
    torch.set_num_threads(args.threads)
    inputs = [_inputs(cfg, args.workload, shape, np.dtype(np.uint8), seed) for seed in range(2)]
    for k in range(args.warmup):
        learner.update_many(inputs[k % 2])
    profiler = Profiler(interval=0.0005)
    steps = 0
    start = time.perf_counter()
    profiler.start()
    for k in range(args.calls):
        steps += learner.update_many(inputs[k % 2]).updates
    profiler.stop()
    seconds = time.perf_counter() - start
    session = profiler.last_session
    assert session is not None
    call = session.root_frame()
    while call is not None and call.function != "update_many":
        call = max(call.children, key=lambda c: c.time) if call.children else None
    phases: dict[str, float] = {}
    if call is not None:
        for child_frame in call.children:
            _attribute(child_frame, phases)
        phases["other"] = phases.get("other", 0.0) + call.time - sum(c.time for c in call.children)
    total = sum(phases.values()) or 1.0
    return {
        "ms_per_call": 1e3 * seconds / args.calls,
        "steps_per_call": steps / args.calls,
        "ms_per_call_by_phase": {k: 1e3 * v / args.calls for k, v in phases.items()},
        "share_by_phase": {k: v / total for k, v in phases.items()},
    }


def _run_child(tree: str, overrides: list[str], workload: str, args: argparse.Namespace) -> dict[str, Any]:
    options = ["--workload", workload, "--calls", str(args.calls), "--warmup", str(args.warmup)]
    options += ["--threads", str(args.threads), *[f"--override={o}" for o in overrides]]
    return child_output(__file__, tree, options)


def parent(args: argparse.Namespace) -> None:
    from raylab.bench.machine import machine_info

    variants = parse_variants(args.variant)
    names = list(variants)
    rows: dict[str, dict[str, list[dict[str, Any]]]] = {n: {w: [] for w in args.workloads} for n in names}
    for r in range(args.repeats):
        k = r % len(names)
        for workload in args.workloads:
            for name in names[k:] + names[:k]:
                load = [round(x, 2) for x in os.getloadavg()]
                row = _run_child(*variants[name], workload, args)
                rows[name][workload].append({**row, "repeat": r, "load_before": load})
                print(f"repeat {r} {name:5s} {workload}: {row['ms_per_call']:8.1f} ms/call", flush=True)
    summary: dict[str, Any] = {}
    for workload in args.workloads:
        summary[workload] = {}
        for name in names:
            got = rows[name][workload]
            phases = sorted({p for x in got for p in x["share_by_phase"]})
            summary[workload][name] = {
                "ms_per_call": statistics.median(x["ms_per_call"] for x in got),
                "steps_per_call": got[0]["steps_per_call"],
                "ms_per_call_by_phase": {
                    p: statistics.median(x["ms_per_call_by_phase"].get(p, 0.0) for x in got) for p in phases
                },
                "share_by_phase": {p: statistics.median(x["share_by_phase"].get(p, 0.0) for x in got) for p in phases},
            }
    report = {
        "benchmark": "learner_profile",
        "protocol": (
            f"{args.repeats} repeats, variants alternating, a fresh process each; {args.warmup} warm-up calls, "
            f"{args.calls} profiled (pyinstrument, 0.5 ms); torch threads {args.threads}; medians"
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
    p.add_argument("--workload", choices=list(WORKLOADS))
    p.add_argument("--override", action="append", default=[])
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--calls", type=int, default=4)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--output", default="benchmarks/learner_profile.json")
    args = p.parse_args()
    if args.mode == "child":
        print(json.dumps(child(args)))
    elif not args.variant:
        raise SystemExit("name at least one --variant NAME=TREE")
    else:
        parent(args)


if __name__ == "__main__":
    main()

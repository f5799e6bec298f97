"""In-process microbenchmarks (no Ray) of the two paths the framework core changed, raylab trees compared:
the A3C worker's segment loop and the PPO learner's update call.

    cd /work/wt-perf && PYTHONPATH=/work/wt-perf WANDB_MODE=disabled /work/main/.venv/bin/python \\
        benchmarks/core_micro.py a3c_worker --repeats 11 --output benchmarks/core_micro_a3c_worker.json \\
        --variant old=/tmp/raylab-old --variant new=/tmp/raylab-new --variant fixed=/work/wt-perf
    ... benchmarks/core_micro.py ppo_learner --repeats 11 --output benchmarks/core_micro_ppo_learner.json \\
        --variant old=/tmp/raylab-old --variant new=/tmp/raylab-new --variant fixed=/work/wt-perf \\
        --variant fixed_prefetch=/work/wt-perf,learner.prefetch=true

(/tmp/raylab-old: a checkout of 83337f6; /tmp/raylab-new: ``git archive`` of the core's merge, 340ac9c; each
with its ``raylab/conf -> ../conf`` link.) A variant is ``NAME=TREE[,OVERRIDE...]``: every measurement is a
fresh child process with ``PYTHONPATH=TREE``, so each imports its own raylab and conf, with the overrides
added to the experiment's. Variants alternate within every repeat, the order rotating, so machine noise
spreads over all of them; figures are medians over repeats, ratios are to the first variant. The load
average is recorded before each measurement (the machine is shared).

``a3c_worker`` (+experiment=cartpole_a3c): one A3CWorker built as the a3c topology builds it
(``build_parameter_servers`` + ``build_a3c_worker``, torch on one thread as in a worker actor) against
in-process shards (ServerLink, applied at push time); ``--warmup`` segments, then ``--segments`` timed.
The shards' weights move as in a run. Reports env steps/s and microseconds per env step of every stage of
the worker's StageTimer (env, inference, learn, push, receive, sync, and the shards' server_apply).

``a3c_worker_paired`` and ``ppo_learner_paired`` run in one process instead, on this tree: the old code is
83337f6's own class (``git show 83337f6:raylab/algos/a3c/worker.py``, resp. ``.../ppo/learner.py``) executed on
this tree's modules, which the core left unchanged below it (returns, losses, envs, timers, parameter
server: ``git diff 83337f6 -- raylab/algos/returns.py ...`` shows moves and docstrings only). Variants:
``old`` (that class), ``new`` (the core as merged: the policy recording log-probabilities; the PPO plan
prefetched in a thread), ``fixed`` (this tree as built by raylab.builders). They take turns every
``--segments`` segments (``--calls`` calls) for ``--repeats`` rounds, so a busy machine slows them alike;
ratios are medians of the per-round ratios. The two-core machine is shared: these are the figures to trust
when its load average is above 1.

``ppo_learner`` (+experiment=cartpole_ppo): the learner as its topology builds it (83337f6:
``build_ppo_learner``, then ``update``; later: ``build_learner``, then ``update_many``) on rounds of real
chunks (``--rounds`` rounds of num_workers x envs_per_worker x rollout_length steps from
``build_rollout_worker``, cycled); ``--warmup`` calls, then ``--calls`` timed. Reports milliseconds per call
(epochs x minibatches optimizer steps) and optimizer steps/s.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

EXPERIMENTS = {"a3c_worker": "cartpole_a3c", "ppo_learner": "cartpole_ppo"}


# -- children: one measurement in the tree on PYTHONPATH -------------------------------------------------------
def _config(bench: str, overrides: list[str]) -> Any:
    from raylab.config import resolve
    from raylab.train import compose

    full = [f"+experiment={EXPERIMENTS[bench]}", "logger.console=false", *overrides]
    return resolve(compose(full), run_dir=f"/tmp/raylab-core-micro-{bench}")


def a3c_worker(args: argparse.Namespace) -> dict[str, Any]:
    import numpy as np
    import torch

    from raylab.builders import build_a3c_worker, build_parameter_server, build_parameter_servers
    from raylab.envs.registry import env_spaces
    from raylab.params import ServerLink

    torch.set_num_threads(1)
    cfg = _config(args.bench, args.override)
    spaces = env_spaces(cfg.env)
    _, bounds, slices = build_parameter_servers(cfg, spaces)
    servers = [build_parameter_server(cfg, np.array(s), k) for k, s in enumerate(slices)]
    worker = build_a3c_worker(cfg, spaces, 0, ServerLink(servers, bounds))
    worker.run(max_segments=args.warmup)
    start = time.perf_counter()
    report = worker.run(max_segments=args.segments)
    seconds = time.perf_counter() - start
    steps = report.env_steps
    us = {stage: 1e6 * s / steps for stage, s in report.timings.items()}
    return {
        "seconds": seconds,
        "segments": report.segments,
        "env_steps": steps,
        "env_steps_per_s": steps / seconds,
        "steps_per_segment": steps / report.segments,
        "us_per_step": {**us, "total": 1e6 * seconds / steps},
    }


def ppo_learner(args: argparse.Namespace) -> dict[str, Any]:
    import torch

    import raylab.builders as builders
    from raylab.envs.registry import env_spaces

    cfg = _config(args.bench, args.override)
    spaces = env_spaces(cfg.env)
    workers = [builders.build_rollout_worker(cfg, spaces, i) for i in range(cfg.topology.num_workers)]
    rounds = [[w.sample()[0] for w in workers] for _ in range(args.rounds)]
    if hasattr(builders, "build_ppo_learner"):  # 83337f6: PPO's own learner
        update = builders.build_ppo_learner(cfg, spaces).update
    else:
        update = builders.build_learner(cfg, spaces).update_many
    torch.set_num_threads(cfg.learner.num_threads)
    for k in range(args.warmup):
        update(rounds[k % len(rounds)])
    steps = 0
    start = time.perf_counter()
    for k in range(args.calls):
        steps += update(rounds[k % len(rounds)]).updates
    seconds = time.perf_counter() - start
    return {
        "seconds": seconds,
        "calls": args.calls,
        "optimizer_steps": steps,
        "ms_per_call": 1e3 * seconds / args.calls,
        "steps_per_s": steps / seconds,
    }


def old_module(commit: str, path: str) -> Any:
    """``path`` as of ``commit`` (this repository's history), executed as a module on this tree's raylab."""
    import types

    source = subprocess.run(["git", "show", f"{commit}:{path}"], check=True, capture_output=True, text=True).stdout
    name = "raylab_" + commit + "_" + path.replace("/", "_").removesuffix(".py")
    module = types.ModuleType(name)
    sys.modules[name] = module  # dataclasses look their module up
    exec(compile(source, f"{commit}:{path}", "exec"), module.__dict__)
    return module


def take_turns(args: argparse.Namespace, runs: dict[str, Any]) -> dict[str, Any]:
    """Call every variant's ``run()`` once per round, the order rotating; each returns its figures. Under
    callgrind (``--callgrind``) each call's instructions are dumped apart, named ``variant:round``."""
    names = list(runs)
    rows: dict[str, list[dict[str, Any]]] = {n: [] for n in names}
    for r in range(args.repeats):
        k = r % len(names)
        for name in names[k:] + names[:k]:
            load = [round(x, 2) for x in os.getloadavg()]
            if args.under_callgrind:
                callgrind_control("-z")
            row = runs[name]()
            if args.under_callgrind:
                callgrind_control("-d", f"{name}:{r}")
            rows[name].append({**row, "repeat": r, "load_before": load})
    return rows


def callgrind_control(*options: str) -> None:
    subprocess.run(["callgrind_control", *options, str(os.getpid())], check=True, capture_output=True)


def under_callgrind(args: argparse.Namespace) -> dict[str, Any]:
    """Run this paired benchmark again under valgrind's callgrind; add each call's instructions (Ir) per env
    step (A3C) or per update call (PPO) to its row. Instruction counts do not depend on the machine's load
    (they miss what the CPU makes of them: caches, and threads waiting on one another)."""
    import re
    import tempfile

    with tempfile.TemporaryDirectory(prefix="core-micro-callgrind-") as out:
        cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}/cg.%p.out", sys.executable, __file__]
        cmd += [args.bench, "--repeats", str(args.repeats), "--segments", str(args.segments), "--warmup"]
        cmd += [str(args.warmup), "--calls", str(args.calls), "--rounds", str(args.rounds), "--old-commit"]
        cmd += [args.old_commit, *[f"--override={o}" for o in args.override]]
        cmd += ["--under-callgrind", f"--output={out}/rows.json"]
        subprocess.run(cmd, check=True, capture_output=True, text=True)
        rows: dict[str, list[dict[str, Any]]] = json.loads(Path(out, "rows.json").read_text())["rows"]
        instructions: dict[str, int] = {}
        for dump in Path(out).glob("cg.*.out.*"):
            text = dump.read_text(errors="replace")
            hint = re.search(r"^desc: Trigger: dump (\S+)$", text, re.M)
            total = re.search(r"^summary: (\d+)$", text, re.M)
            if hint and total:
                instructions[hint.group(1)] = int(total.group(1))
    per = "env_steps" if args.bench.startswith("a3c_worker") else None
    for name, named_rows in rows.items():
        for row in named_rows:
            ir = instructions[f"{name}:{row['repeat']}"]
            row["instructions"] = ir
            row["instructions_per_unit"] = ir / row[per] if per else ir / args.calls
    return rows


def a3c_worker_paired(args: argparse.Namespace) -> dict[str, Any]:
    import numpy as np
    import torch

    from raylab.algos.a3c import A3CWorker
    from raylab.algos.actor_critic import ActorCriticPolicy
    from raylab.builders import build_a3c_worker, build_parameter_server, build_parameter_servers
    from raylab.envs.registry import env_spaces, make_vector_env
    from raylab.models.factory import build_actor_critic
    from raylab.params import ServerLink

    torch.set_num_threads(1)
    cfg = _config("a3c_worker", args.override)
    spaces, algo, topo = env_spaces(cfg.env), cfg.algo, cfg.topology
    old = old_module(args.old_commit, "raylab/algos/a3c/worker.py")

    def link() -> ServerLink:
        _, bounds, slices = build_parameter_servers(cfg, spaces)
        return ServerLink([build_parameter_server(cfg, np.array(s), k) for k, s in enumerate(slices)], bounds)

    def env() -> Any:
        return make_vector_env(cfg.env, topo.envs_per_worker, cfg.seed, worker_index=0)

    common = dict(
        worker_id=0, rollout_length=topo.rollout_length, gamma=algo.gamma, value_coef=algo.value_coef,
        entropy_coef=algo.entropy_coef, max_grad_norm=algo.max_grad_norm,
        cut_at_episode_end=algo.cut_at_episode_end, pushes_in_flight=cfg.params.pushes_in_flight,
    )  # fmt: skip
    seed = cfg.seed * 7919  # worker 0's sampling seed, in every variant
    recording = ActorCriticPolicy(build_actor_critic(cfg.model, spaces), seed, frozen=False, keep_log_probs=True)
    workers = {
        "old": old.A3CWorker(env(), build_actor_critic(cfg.model, spaces), link(), seed=seed, **common),
        "new": A3CWorker(env(), recording, link(), **common),
        "fixed": build_a3c_worker(cfg, spaces, 0, link()),
    }

    def timed(worker: Any) -> Any:
        def run() -> dict[str, Any]:
            start, cpu = time.perf_counter(), time.process_time()
            report = worker.run(max_segments=args.segments)
            seconds, steps = time.perf_counter() - start, report.env_steps
            us = {stage: 1e6 * s / steps for stage, s in report.timings.items()}
            return {
                "seconds": seconds,
                "env_steps": steps,
                "env_steps_per_s": steps / seconds,
                "cpu_us_per_step": 1e6 * (time.process_time() - cpu) / steps,
                "steps_per_segment": steps / report.segments,
                "us_per_step": {**us, "total": 1e6 * seconds / steps},
            }

        worker.run(max_segments=args.warmup)
        return run

    return take_turns(args, {name: timed(w) for name, w in workers.items()})


def ppo_learner_paired(args: argparse.Namespace) -> dict[str, Any]:
    import dataclasses

    import torch

    from raylab.builders import build_learner, build_rollout_worker
    from raylab.envs.registry import env_spaces
    from raylab.models.factory import build_actor_critic

    cfg = _config("ppo_learner", args.override)
    spaces, opt = env_spaces(cfg.env), cfg.learner
    workers = [build_rollout_worker(cfg, spaces, i) for i in range(cfg.topology.num_workers)]
    rounds = [[w.sample()[0] for w in workers] for _ in range(args.rounds)]
    old = old_module(args.old_commit, "raylab/algos/ppo/learner.py")
    torch.manual_seed(cfg.seed)
    old_learner = old.PPOLearner(
        build_actor_critic(cfg.model, spaces), cfg.algo, lr=opt.lr, adam_eps=opt.adam_eps,
        max_grad_norm=opt.max_grad_norm, device=opt.device, seed=cfg.seed,
    )  # fmt: skip
    threaded = build_learner(cfg, spaces)  # the core as merged: PPO's plan prefetched in a thread on the CPU
    plan = threaded.objective.plan
    threaded.objective.plan = lambda *a: dataclasses.replace(plan(*a), prefetch_on_cpu=True)  # type: ignore[method-assign]
    updates = {"old": old_learner.update, "new": threaded.update_many, "fixed": build_learner(cfg, spaces).update_many}
    torch.set_num_threads(opt.num_threads)

    def timed(update: Any) -> Any:
        def run() -> dict[str, Any]:
            steps, start, cpu = 0, time.perf_counter(), time.process_time()
            for k in range(args.calls):
                steps += update(rounds[k % len(rounds)]).updates
            seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
            return {
                "seconds": seconds,
                "ms_per_call": 1e3 * seconds / args.calls,
                "steps_per_s": steps / seconds,
                "cpu_ms_per_call": 1e3 * cpu / args.calls,
            }

        for k in range(args.warmup):
            update(rounds[k % len(rounds)])
        return run

    return take_turns(args, {name: timed(u) for name, u in updates.items()})


CHILDREN = {"a3c_worker": a3c_worker, "ppo_learner": ppo_learner}
PAIRED = {"a3c_worker_paired": a3c_worker_paired, "ppo_learner_paired": ppo_learner_paired}
HEADLINE = {"a3c_worker": ("env_steps_per_s", True), "ppo_learner": ("ms_per_call", False)}
HEADLINE.update({f"{bench}_paired": figure for bench, figure in HEADLINE.items()})
"""The figure each benchmark is judged by, and whether higher is better."""


# -- the parent: alternate the variants, summarize -------------------------------------------------------------
def measure(args: argparse.Namespace, tree: str, overrides: list[str]) -> dict[str, Any]:
    env = dict(os.environ, PYTHONPATH=tree, WANDB_MODE="disabled")
    cmd = [sys.executable, __file__, args.bench, "--child", "--segments", str(args.segments)]
    cmd += ["--warmup", str(args.warmup), "--calls", str(args.calls), "--rounds", str(args.rounds)]
    cmd += [f"--override={o}" for o in overrides]
    load = [round(x, 2) for x in os.getloadavg()]
    out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout
    row: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    row["load_before"] = load
    return row


def median_of(rows: list[dict[str, Any]], key: str) -> float:
    return statistics.median(r[key] for r in rows)


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    numbers = [k for k, v in rows[0].items() if isinstance(v, int | float) and k != "repeat"]
    out: dict[str, Any] = {k: median_of(rows, k) for k in numbers}
    if "us_per_step" in rows[0]:
        stages = sorted({s for r in rows for s in r["us_per_step"]})
        out["us_per_step"] = {s: statistics.median(r["us_per_step"].get(s, 0.0) for r in rows) for s in stages}
    return out


def line(row: dict[str, Any]) -> str:
    if "instructions_per_unit" in row:
        unit = "env step" if "us_per_step" in row else "call"
        return f"{row['instructions_per_unit']:12,.0f} instructions/{unit}"
    if "us_per_step" in row:
        stages = " ".join(f"{k} {v:.1f}" for k, v in sorted(row["us_per_step"].items()))
        cpu = f"  CPU {row['cpu_us_per_step']:.1f} us/step" if "cpu_us_per_step" in row else ""
        per_segment = f"{row['steps_per_segment']:5.2f} steps/seg"
        return f"{row['env_steps_per_s']:7.0f} env steps/s{cpu}  {per_segment}  us/step: {stages}"
    cpu = f"  CPU {row['cpu_ms_per_call']:.2f} ms/call" if "cpu_ms_per_call" in row else ""
    return f"{row['ms_per_call']:7.2f} ms/call{cpu}  {row['steps_per_s']:6.1f} optimizer steps/s"


def cross_tree(args: argparse.Namespace) -> tuple[dict[str, list[dict[str, Any]]], dict[str, Any]]:
    """Every variant's rows, each repeat a fresh child process per variant, the order rotating."""
    variants: dict[str, tuple[str, list[str]]] = {}
    for text in args.variant:
        name, _, spec = text.partition("=")
        tree, *overrides = spec.split(",")
        variants[name] = (tree, overrides)
    names = list(variants)
    rows: dict[str, list[dict[str, Any]]] = {n: [] for n in names}
    for repeat in range(args.repeats):
        k = repeat % len(names)
        for name in names[k:] + names[:k]:
            row = measure(args, *variants[name])
            row["repeat"] = repeat
            rows[name].append(row)
            print(f"repeat {repeat:2d} {name:14s} {line(row)}  load {row['load_before']}", flush=True)
    return rows, {n: {"tree": t, "overrides": o} for n, (t, o) in variants.items()}


def main() -> None:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("bench", choices=sorted([*CHILDREN, *PAIRED]))
    p.add_argument("--variant", action="append", default=[], help="NAME=TREE[,OVERRIDE...] (repeatable)")
    p.add_argument("--repeats", type=int, default=11)
    p.add_argument("--segments", type=int, default=1500, help="a3c_worker: segments timed (per round if paired)")
    p.add_argument("--warmup", type=int, default=None, help="segments (a3c_worker) or calls (ppo_learner)")
    p.add_argument("--calls", type=int, default=40, help="ppo_learner: update calls timed (per round if paired)")
    p.add_argument("--rounds", type=int, default=4, help="ppo_learner: distinct rounds of chunks, cycled")
    p.add_argument("--old-commit", default="83337f6", help="paired: the commit whose class is 'old'")
    p.add_argument("--override", action="append", default=[], help="config overrides (paired; cross-tree: internal)")
    p.add_argument("--output", default=None)
    p.add_argument("--callgrind", action="store_true", help="paired: count instructions (valgrind) instead")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--under-callgrind", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.warmup is None:
        args.warmup = 200 if args.bench.startswith("a3c_worker") else 3
    if args.child:
        print(json.dumps(CHILDREN[args.bench](args)))
        return
    variants: dict[str, Any] = {"old": f"{args.old_commit}'s class", "new": "the core as merged", "fixed": "this tree"}
    key_override: tuple[str, bool] | None = None
    if args.callgrind and args.bench in PAIRED:
        rows = under_callgrind(args)
        key_override = ("instructions_per_unit", False)
    elif args.bench in PAIRED:
        rows = PAIRED[args.bench](args)
        for name, named_rows in rows.items():
            for row in named_rows:
                print(f"round {row['repeat']:2d} {name:6s} {line(row)}  load {row['load_before']}")
    else:
        rows, variants = cross_tree(args)
    names = list(rows)
    key, higher = key_override or HEADLINE[args.bench]
    summary = {n: summarize(rows[n]) for n in names}
    base = names[0]
    ratios = {n: summary[n][key] / summary[base][key] for n in names}
    paired = {  # per repeat, against the base variant's measurement of the same repeat
        n: statistics.median(a[key] / b[key] for a, b in zip(rows[n], rows[base], strict=True)) for n in names
    }
    cpu_key = next((k for k in ("cpu_us_per_step", "cpu_ms_per_call") if k in rows[base][0]), None)
    cpu_key = None if args.callgrind else cpu_key  # valgrind's own pace
    cpu_ratios = (
        {n: statistics.median(a[cpu_key] / b[cpu_key] for a, b in zip(rows[n], rows[base], strict=True)) for n in names}
        if cpu_key
        else None
    )
    print(f"medians over {args.repeats} repeats ({key}, {'higher' if higher else 'lower'} is better):")
    for n in names:
        cpu = f", CPU time x{cpu_ratios[n]:.3f}" if cpu_ratios else ""
        print(f"  {n:14s} {line(summary[n])}  x{ratios[n]:.3f} {base} (per-repeat ratio x{paired[n]:.3f}{cpu})")
    if args.output:
        a3c = args.bench.startswith("a3c_worker")
        report = {
            "benchmark": f"core_micro {args.bench}",
            "command": " ".join([Path(sys.executable).name, *sys.argv]),
            "experiment": EXPERIMENTS[args.bench.removesuffix("_paired")],
            "overrides": args.override if args.bench in PAIRED else [],
            "protocol": {
                "repeats": args.repeats,
                "warmup": args.warmup,
                **({"segments": args.segments} if a3c else {"calls": args.calls, "rounds": args.rounds}),
                "statistic": "medians over repeats; variants alternate within a repeat, the order rotating",
                "measure": "instructions (valgrind --tool=callgrind)" if args.callgrind else "wall and CPU time",
            },
            "variants": variants,
            "headline": {"figure": key, "higher_is_better": higher},
            "summary": summary,
            f"ratio_to_{base}": ratios,
            f"per_repeat_ratio_to_{base}": paired,
            **({f"per_repeat_cpu_time_ratio_to_{base}": cpu_ratios} if cpu_ratios else {}),
            "machine": machine(),
            "rows": rows,
        }
        Path(args.output).write_text(json.dumps(report, indent=2) + "\n")


def machine() -> dict[str, Any]:
    try:
        from raylab.bench.machine import machine_info

        return dict(machine_info())
    except ImportError:
        return {}


if __name__ == "__main__":
    main()

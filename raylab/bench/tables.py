"""Markdown tables of the committed benchmark results, made from their JSON so that no figure can drift from
its data.

    python -m raylab.bench.tables                      # every table, from ./benchmarks
    python -m raylab.bench.tables e2e_cartpole a3c_scaling --benchmarks path/to/benchmarks

The documentation site renders them when it is built (docs/hooks.py: a ``<!-- raylab:bench NAME -->`` line
in a page becomes table NAME), so its benchmark pages are always the JSON's. Each table is followed by the
machine every file was measured on (its ``machine`` field: date, CPU, cores, GPU, versions, commit).
tests/unit/test_benchmark_tables.py renders every table over the committed files. Standard library only.
"""

from __future__ import annotations

import argparse
import ast
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
"""The committed benchmark results (a checkout's benchmarks/)."""

Json = dict[str, Any]


@dataclass(frozen=True)
class Table:
    files: tuple[str, ...]
    """The JSON files under benchmarks/ the table is made from."""
    render: Callable[[list[Json]], str]
    """Their parsed contents (in ``files``' order) -> the Markdown table."""
    title: str
    """What it measures, in a few words."""


# ---------------------------------------------------------------------------------------------------------------
# Number formatting


def _int(x: float) -> str:
    return f"{round(x):,}"


def _sig(x: float, digits: int = 3) -> str:
    """``digits`` significant digits, trailing zeros kept (1.60, 27.3); whole numbers from 1,000 on."""
    return _int(x) if abs(x) >= 10 ** (digits - 1) * 10 else f"{x:#.{digits}g}".rstrip(".")


def _s(x: float | None) -> str:
    return "—" if x is None else f"{x:.1f} s"


def _pct(x: float) -> str:
    """A share as a percentage: two significant digits under 10 % (0.026 %, 2.8 %), whole ones above."""
    return f"{100 * x:#.2g} %" if x < 0.1 else f"{100 * x:.0f} %"


def _ratio(x: float) -> str:
    return f"{x:.2f}×"


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:]


def _rows(header: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def machine_line(data: Json) -> str:
    """Where and when ``data`` was measured, from its ``machine`` field."""
    m = data.get("machine")
    if not m:
        return "machine not recorded"
    gpu = m.get("cuda") or "no GPU"
    versions = ", ".join(
        f"{name} {m[key]}" for name, key in (("Python", "python"), ("torch", "torch"), ("Ray", "ray")) if m.get(key)
    )
    when = m["date"].replace("T", " ")[:16]
    return f"{when}, {m['cpu']}, {m['cores']} cores, {gpu}; {versions}; commit {m.get('git_commit')}"


# ---------------------------------------------------------------------------------------------------------------
# The tables


def learn(data: list[Json]) -> str:
    """``raylab.bench learn``: each variant's runs to the target (cartpole_*_learning.json)."""
    (d,) = data
    episodes = sorted({run["final_eval_episodes"] for run in d["runs"]})
    target = d["runs"][0]["target"]  # None: the runs stopped at a training return (stop.train_return), not a greedy one
    header = [
        "variant",
        "overrides",
        f"reached {target:g}" if target is not None else "reached its stop target",
        "train time (median / max)",
        "whole command (median)",
        "env steps (median)",
        "env steps/s",
        "learner updates/s",
        f"final eval, per seed ({' / '.join(map(str, episodes))} episodes)",
    ]
    rows = []
    for variant, summary in d["summary"].items():
        runs = sorted((r for r in d["runs"] if r["variant"] == variant), key=lambda r: r["seed"])
        overrides = " ".join(f"`{o}`" for o in [*d["overrides"], *d["variants"][variant]])
        rows.append(
            [
                f"`{variant}`",
                overrides,
                f"{summary['reached'] if target is not None else _stopped_by_target(runs)} / {summary['runs']}",
                f"{_s(summary['median_train_seconds'])} / {_s(summary['max_train_seconds'])}",
                _s(summary["median_process_seconds"]),
                _int(summary["median_env_steps"]),
                _int(summary["median_env_steps_per_s"]),
                _int(summary["median_updates_per_s"]),
                ", ".join(f"{r['final_eval_return']:.1f}" for r in runs),
            ]
        )
    return _rows(header, rows)


def _stopped_by_target(runs: list[Json]) -> int:
    return sum(str(r.get("stop_reason", "")).startswith(("training return", "eval return")) for r in runs)


def before_after(data: list[Json]) -> str:
    """Several ``raylab.bench learn`` runs of the same variants (e.g. old and new commits), one experiment each:
    time to the target and env steps/s per variant, and each as a ratio to the file's first variant."""
    header = [
        "experiment",
        "variant",
        "reached",
        "time to target (median / max)",
        "× first",
        "env steps/s (median)",
        "× first",
        "learner updates/s",
        "final eval, per seed",
    ]
    rows = []
    for d in data:
        experiment = " ".join(f"`{o}`" for o in d["overrides"])
        first = next(iter(d["summary"].values()))
        for variant, summary in d["summary"].items():
            runs = sorted((r for r in d["runs"] if r["variant"] == variant), key=lambda r: r["seed"])
            rows.append(
                [
                    experiment,
                    f"`{variant}`",
                    f"{summary['reached']} / {summary['runs']}",
                    f"{_s(summary['median_train_seconds'])} / {_s(summary['max_train_seconds'])}",
                    _ratio(summary["median_train_seconds"] / first["median_train_seconds"]),
                    _int(summary["median_env_steps_per_s"]),
                    _ratio(summary["median_env_steps_per_s"] / first["median_env_steps_per_s"]),
                    _int(summary["median_updates_per_s"]),
                    ", ".join(f"{r['final_eval_return']:.1f}" for r in runs),
                ]
            )
    return _rows(header, rows)


LEARNER_VARIANTS = ("eager_fp32", "amp", "compile", "amp_compile")
"""The variants of a learner JSON written before ``variant_options`` was recorded."""

LEARNER_LABELS = {
    "tf32": "TF32",
    "bf16": "bf16 autocast",
    "fp16": "fp16 + GradScaler",
    "compile": "torch.compile",
    "compile_ro": "compile, reduce-overhead (CUDA graphs)",
    "bf16_compile": "bf16 + compile",
    "bf16_compile_ro": "bf16 + compile, reduce-overhead",
    "fp16_compile_ro": "fp16 + compile, reduce-overhead",
}


def learner(data: list[Json]) -> str:
    """``raylab.bench learner``: learner updates/s per speed option and batch size (learner_*.json)."""
    (d,) = data
    first = next(iter(d["batch_sizes"].values()))
    variants = list(d.get("variant_options") or LEARNER_VARIANTS)
    amp = first["precision"].get("amp")
    labels = {**LEARNER_LABELS, "amp": f"AMP ({amp} autocast)", "amp_compile": f"AMP ({amp}) + compile"}
    labels["eager_fp32"] = "eager fp32, no TF32" if d.get("device", "").startswith("cuda") else "eager fp32"
    best = {b: max(r["updates_per_s"], key=r["updates_per_s"].get) for b, r in d["batch_sizes"].items()}
    header = ["minibatch" if d.get("algo") == "ppo" else "batch", *(labels[v] for v in variants), "best"]
    rows = []
    for batch, result in d["batch_sizes"].items():
        ups, ratio = result["updates_per_s"], result["ratio_vs_eager_fp32"]
        cells = [f"{_sig(ups[v])} ({_ratio(ratio[v])})" for v in variants]
        cells[0] = f"{_sig(ups['eager_fp32'])} updates/s"
        rows.append([batch, *cells, f"{labels[best[batch]]}: {_ratio(ratio[best[batch]])}"])
    gpu = f" ({d['gpu']})" if d.get("gpu") else ""
    notes = (
        f"\n{d['network']}. {_sentence(d['protocol'])}; torch threads: {d['torch_threads']}, "
        f"device: {d['device']}{gpu}.\n"
    )
    return _rows(header, rows) + notes


def snake_loop(data: list[Json]) -> str:
    """``raylab.bench snake_dqn_loop``: seed 004's Snake DQN loop, env steps/s per variant."""
    (d,) = data
    notes = module_bullets(BENCHMARKS.parent / "raylab" / "bench" / "snake_loop.py")
    published = d["seed_004_steps_per_s"]
    header = ["loop", "env steps/s", f"vs seed 004's published {published:,} (its machine)", "vs `seed004` here"]
    rows = [
        [
            f"`{v}`" + (f": {notes[v]}" if v in notes else ""),
            _int(steps),
            _ratio(d["vs_seed_004_published"][v]),
            _ratio(d["vs_seed004_same_machine"][v]),
        ]
        for v, steps in d["median_steps_per_s"].items()
    ]
    return _rows(header, rows) + f"\n{_sentence(d['protocol'])}.\n"


def ppo_vs_rllib(data: list[Json]) -> str:
    """benchmarks/ppo_vs_rllib.py: raylab PPO against RLlib PPO (CartPole, Pendulum), to a training return."""
    (d,) = data
    s = d["summary"]
    target = f"{d.get('target', 475):g}"  # files written before Pendulum was added are CartPole's
    header = [
        "rollout workers × envs each",
        f"raylab: train time to {target} (median)",
        "RLlib",
        "RLlib / raylab",
        "raylab env steps/s",
        "RLlib env steps/s",
        "raylab / RLlib",
        f"env steps to {target} (raylab / RLlib)",
        "whole command (raylab / RLlib)",
    ]
    rows = []
    for key in sorted(k.removeprefix("ratio_") for k in s if k.startswith("ratio_")):
        ours, theirs, ratio = s[f"raylab_ppo_{key}"], s[f"rllib_ppo_{key}"], s[f"ratio_{key}"]
        rows.append(
            [
                key.replace("x", " × "),
                f"{_s(ours['median_train_s'])} ({ours['reached']} / {ours['runs']})",
                f"{_s(theirs['median_train_s'])} ({theirs['reached']} / {theirs['runs']})",
                _ratio(ratio["wall_time_rllib_over_raylab"]),
                _int(ours["median_env_steps_per_s"]),
                _int(theirs["median_env_steps_per_s"]),
                _ratio(ratio["env_steps_per_s_raylab_over_rllib"]),
                f"{ours['median_env_steps'] / 1000:.0f}k / {theirs['median_env_steps'] / 1000:.0f}k",
                f"{_s(ours['median_process_s'])} / {_s(theirs['median_process_s'])}",
            ]
        )
    return _rows(header, rows) + f"\nCriterion: {d['criterion']} (RLlib {d['rllib']}).\n"


def appo_vs_peers(data: list[Json]) -> str:
    """benchmarks/appo_vs_peers.py: raylab APPO against Sample Factory APPO and RLlib PPO, to a training return."""
    (d,) = data
    s = d["summary"]
    target = f"{d['target']:g}"
    header = ["framework and algorithm", "rollout workers × envs each", f"train time to {target} (median)",
              "reached", f"env steps to {target} (median)", "env steps/s (median)", "raylab's env steps/s ×",
              "raylab's time to target ×", "whole command (median)"]  # fmt: skip
    names = {"raylab_appo": "raylab APPO", "sf_appo": "Sample Factory APPO", "rllib_ppo": "RLlib PPO"}
    rows = []
    for key, r in s.items():
        if "_vs_" in key:
            continue
        framework, shape = key.rsplit("_", 1)
        ratio = s.get(f"raylab_appo_{shape}_vs_{key}")
        rows.append([
            names[framework], shape.replace("x", " × "), _s(r["median_train_s"]), f"{r['reached']} / {r['runs']}",
            f"{r['median_env_steps'] / 1000:.0f}k", _int(r["median_env_steps_per_s"]),
            _ratio(ratio["env_steps_per_s_ratio"]) if ratio else "—",
            _ratio(ratio["time_to_target_ratio"]) if ratio else "—", _s(r["median_process_s"]),
        ])  # fmt: skip
    versions = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in d["versions"].items())
    return _rows(header, rows) + f"\nCriterion: {d['criterion']}; the ratios at the same shape ({versions}).\n"


def policy_inference(data: list[Json]) -> str:
    """benchmarks/policy_inference.py: a rollout actor's act() in torch and through its NumPy copy."""
    (d,) = data
    header = ["experiment's model", "batch", "torch (µs per act)", "NumPy copy (µs per act)", "torch / NumPy"]
    rows = []
    for experiment, batches in d["median_us"].items():
        for batch, med in batches.items():
            rows.append([f"`{experiment}`", batch, f"{med['torch']:.1f}", f"{med['numpy']:.1f}",
                         _ratio(d["torch_over_numpy"][experiment][batch])])  # fmt: skip
    return _rows(header, rows) + f"\n{d['protocol']}.\n"


def dqn_fused_update(data: list[Json]) -> str:
    """benchmarks/dqn_fused_update.py: a DQN update through autograd and through learner.fused's NumPy step."""
    header = ["network", "batch", "autograd (µs per update)", "fused (µs per update)", "autograd / fused"]
    return _fused_table(data, header, lambda r: [str(r["batch_size"])], "us_per_update", "{:.0f}")


def ppo_fused_update(data: list[Json]) -> str:
    """benchmarks/ppo_fused_update.py: a PPO/APPO learner call through autograd and through learner.fused."""
    header = ["experiment", "samples per call", "optimizer steps per call", "autograd (ms per call)",
              "fused (ms per call)", "autograd / fused"]  # fmt: skip
    return _fused_table(
        data, header, lambda r: [f"{r['samples_per_call']:,}", str(r["updates_per_call"])], "ms_per_call", "{:.2f}"
    )


def _fused_table(data: list[Json], header: list[str], cells: Callable[[Json], list[str]], key: str, fmt: str) -> str:
    """One row per case of a fused-update benchmark: its name, ``cells``, both variants' ``key``, the ratio."""
    (d,) = data
    rows = [
        [f"`{name}`", *cells(r), fmt.format(r[key]["autograd"]), fmt.format(r[key]["fused"]), _ratio(r["speedup"])]
        for name, r in d["results"].items()
    ]
    return _rows(header, rows) + f"\n{d['protocol']}.\n"


def sampling_sink_weights(data: list[Json]) -> str:
    """benchmarks/sampling_sink_weights.py: the sampling sink's weights through the object store and inline."""
    (d,) = data
    r = d["results"]
    labels = {"object_store": "through the object store (`ray.put`, before)", "inline": "inline, by value (after)"}
    rows = [[labels[name], _int(rate)] for name, rate in r["agent_steps_per_s"].items()]
    ratio = _ratio(r["ratio_inline_over_object_store"])
    return (
        _rows(["weights handed out", "agent steps/s (median)"], rows)
        + f"\nInline / object store: {ratio}; {d['protocol']}.\n"
    )


def a3c_scaling(data: list[Json]) -> str:
    """``raylab.bench scaling``: seed 000's A3C worker-scaling protocol, beside seed 000's own figures."""
    (d,) = data
    piped, sync, seed = d["summary"]["pushes_in_flight=1"], d["summary"].get("pushes_in_flight=0", {}), d["seed_000"]
    header = [
        "workers",
        "total_s initial / final",
        "wait_s initial / final",
        "wait share (initial)",
        "speed-up initial / final",
        "synchronous pushes: total_s initial / final",
        "its wait share",
        "seed 000 total_s initial / final",
        "seed 000 wait share",
    ]
    rows = []
    for workers, r in piped.items():
        s, o = sync.get(workers), seed["rows"].get(workers)
        rows.append(
            [
                workers,
                f"{r['initial_total_s']:.2f} / {r['final_total_s']:.2f}",
                f"{r['initial_wait_s']:.3f} / {r['final_wait_s']:.3f}",
                _pct(r["initial_wait_share"]),
                f"{r['initial_speedup']:.2f} / {r['final_speedup']:.2f}",
                f"{s['initial_total_s']:.2f} / {s['final_total_s']:.2f}" if s else "—",
                _pct(s["initial_wait_share"]) if s else "—",
                f"{_sig(o['initial_total_s'])} / {_sig(o['final_total_s'])}" if o else "—",
                _pct(o["initial_wait_s"] / o["initial_total_s"]) if o else "—",
            ]
        )
    p = d["protocol"]
    notes = (
        f"\n{p['segments_per_row']} segments of up to {p['rollout_length']} steps per row, {p['statistic']} of "
        f"{p['repeats']}, {p['num_shards']} server shard(s), {d['cores_available']} cores available; plateau: "
        + "; ".join(f"{k}: {v}" for k, v in d["plateau"].items())
        + f". Seed 000: {seed['source']}.\n"
    )
    return _rows(header, rows) + notes


FRAMEWORKS = {"raylab": "raylab apex_dqn", "rllib": "RLlib DQN"}


def e2e_cartpole(data: list[Json]) -> str:
    """``raylab.bench e2e``: apex_dqn end to end beside RLlib's DQN, and where raylab's time went."""
    (d,) = data
    header = [
        "framework",
        "env steps/s",
        "learner updates/s",
        "samples trained per env step",
        f"training return ≥ {d['target']:g} (last 100 episodes)",
        "best training return, per seed",
        f"greedy eval ≥ {d['target']:g}, per seed",
    ]
    rows = []
    for name, s in d["summary"].items():
        reached = s["greedy_eval_target_reached_s"]
        rows.append(
            [
                FRAMEWORKS.get(name, name),
                _int(s["env_steps_per_s"]),
                _int(s["updates_per_s"]),
                f"{s['samples_per_env_step']:.1f}",
                s["reached_475"].replace("/", " / "),
                ", ".join(f"{x:.0f}" for x in s["best_return_mean"]),
                "at " + ", ".join(_s(x) for x in reached) if any(x is not None for x in reached) else "—",
            ]
        )
    out = _rows(header, rows)
    if "raylab_over_rllib" in d:
        r = d["raylab_over_rllib"]
        out += (
            f"\nraylab / RLlib: {_ratio(r['env_steps_per_s'])} the env steps/s, "
            f"{_ratio(r['samples_per_env_step'])} the samples per env step; {d['seconds']:.0f} s of training per run.\n"
        )
    share = d["summary"]["raylab"].get("busy_share")
    if share:
        out += "\n" + _rows(["raylab stage", "share of training time"], ([f"`{k}`", _pct(v)] for k, v in share.items()))
    return out


def e2e_mario(data: list[Json]) -> str:
    """``raylab.bench e2e`` on Mario: as configured and with collection free-running."""
    header = [
        "mario_dqn, overrides",
        "env steps/s (frames/s)",
        "learner updates/s",
        "samples per env step",
        "rollout worker time: env / inference / weight sync",
        "learner busy",
        "sampling efficiency",
    ]
    rows = []
    for d in data:
        s, eff = d["summary"]["raylab"], d["sampling_efficiency"]
        share = s["busy_share"]
        worker = " / ".join(_pct(share[f"rollout/{k}_s (per worker)"]) for k in ("env", "inference", "weight_sync"))
        rows.append(
            [
                " ".join(f"`{o}`" for o in d["raylab_overrides"]) or "as configured",
                f"{_int(s['env_steps_per_s'])} ({_int(eff['e2e_env_frames_per_s'])})",
                f"{s['updates_per_s']:.1f}",
                f"{s['samples_per_env_step']:.1f}",
                worker,
                _pct(share["learner/update_s"]),
                _pct(eff["efficiency"]),
            ]
        )
    eff = data[0]["sampling_efficiency"]
    notes = (
        f"\nSampling efficiency: end-to-end frames/s over {eff['workers']} workers × the single-process raw "
        f"emulator rate ({eff['raw_env_frames_per_s_one_process']:,} frames/s); {data[0]['seconds']:.0f} s per run.\n"
    )
    return _rows(header, rows) + notes


ENV_STAGES = (
    ("raw", "raw env"),
    ("wrapped", "+ preprocessing"),
    ("vector", "vector env"),
    ("worker", "one rollout worker"),
)


def envs(data: list[Json]) -> str:
    """``raylab.bench envs``: raw throughput per env family and pipeline stage, one process."""
    (d,) = data
    header = ["family (experiment)", "observation", *(label for _, label in ENV_STAGES), "worker time: env / inference"]
    rows = []
    for family, f in d["families"].items():
        cells = []
        for stage, _ in ENV_STAGES:
            rate = f["stages"][stage]
            cells.append(_int(rate["agent_steps_per_s"]))
            if rate["frames_per_s"] != rate["agent_steps_per_s"]:
                cells[-1] += f" ({_int(rate['frames_per_s'])} frames)"
        cells[2] += f", {f['envs_per_worker']} envs"
        share = f["worker_time_share"]
        rows.append(
            [
                f"{family} (`{f['experiment']}`)",
                f"{tuple(f['obs_shape'])} {f['obs_dtype']}",
                *cells,
                f"{_pct(share['env'])} / {_pct(share['inference'])}",
            ]
        )
    notes = (
        "\nAgent steps/s (emulator frames in brackets where a step skips frames); "
        f"{d['rounds']} rounds × {d['seconds_per_stage']:g} s per stage, medians.\n"
    )
    return _rows(header, rows) + notes


def timer_overhead(data: list[Json]) -> str:
    """``raylab.bench timer_overhead``: ns per timed stage, and runs with timing on against off."""
    (d,) = data
    micro = _rows(
        ["timer", "ns per `with timer.stage(...)`"], ([k, _int(v)] for k, v in d["micro_ns_per_stage"].items())
    )
    p = d["protocol"]
    header = ["run", "overrides", "env steps/s, timing off", "timing on", "on / off"]
    rows = [
        [
            f"`{name}`",
            " ".join(f"`{o}`" for o in s["overrides"]),
            _int(s["timing_off"]["env_steps_per_s"]),
            _int(s["timing_on"]["env_steps_per_s"]),
            f"{s['ratio_on_over_off']['env_steps_per_s']:.3f}",
        ]
        for name, s in d["summary"].items()
    ]
    notes = f"\n{p['rounds']} rounds × {p['seconds']:g} s, {p['statistic']}.\n"
    return micro + "\n" + _rows(header, rows) + notes


def replay_snapshot(data: list[Json]) -> str:
    """``raylab.bench replay_snapshot``: writing and loading a full replay shard, and a run with vs without."""
    (d,) = data
    header = ["replay", "transitions", "on disk", "write", "load"]
    rows = []
    for name, s in d["per_snapshot"].items():
        mib = s["file_bytes"] / 2**20
        rows.append(
            [
                f"`{name}`",
                _int(s["transitions"]),
                f"{mib:.1f} MiB" if mib < 100 else f"{mib:,.0f} MiB",
                _duration(s["write_s"]),
                _duration(s["load_s"]),
            ]
        )
    run, p = d["run"], d["protocol"]
    notes = (
        f"\nA run ({' '.join(f'`{o}`' for o in p['run_overrides'])}, {p['seconds']:g} s, a checkpoint every "
        f"{p['checkpoint_every_seconds']:g} s, {p['rounds']} rounds, {p['statistic']}): "
        f"{_int(run['snapshots_on']['env_steps_per_s'])} env steps/s with snapshots, "
        f"{_int(run['snapshots_off']['env_steps_per_s'])} without "
        f"({run['ratio_on_over_off']['env_steps_per_s']:.2f}×); {_duration(run['snapshots_on']['snapshot_s'])} "
        "of the run spent writing snapshots.\n"
    )
    return _rows(header, rows) + notes


def fault_run(data: list[Json]) -> str:
    """benchmarks/fault_run.py: cartpole_dqn with actors SIGKILLed during training, beside a clean run."""
    (d,) = data
    header = [
        "variant",
        "kills (actor at s)",
        "restarts counted",
        "final greedy eval",
        "first periodic eval at target",
        "train time",
    ]
    rows = []
    for variant, runs in d["results"].items():
        for r in runs:
            kills = ", ".join(f"{k['actor']} {k['at_s']:.0f}" for k in r["kills"]) or "none"
            counted = ", ".join(f"{k.removeprefix('restarts/')} {v:,}" for k, v in r["restarts"].items() if v)
            rows.append(
                [
                    variant,
                    kills,
                    counted or "0",
                    f"{r['final_eval']:.1f}",
                    _s(r["first_eval_at_target_s"]),
                    _s(r["train_s"]),
                ]
            )
    p = d["protocol"]
    notes = (
        f"\nA rollout actor killed every {p['kill_every']:g} s, the learner at {p['learner_at']:g} s, the replay "
        f"shard at {p['replay_at']:g} s; runs of at most {p['seconds']:g} s, {p['seeds']} seed per variant. "
        "A kill after the training time landed during the final evaluation.\n"
    )
    return _rows(header, rows) + notes


def arena(data: list[Json]) -> str:
    """``raylab.bench arena``: the arena's agent steps/s with N snakes per board (snake_arena_throughput.json)."""
    (d,) = data
    header = ["snakes per board", "board", "boards per worker", "raw env (1 process)", "rollout worker",
              "rollout worker, 2 policies (ratio)", "end to end (snake_arena_ppo)",
              "random policy: foods / return per episode"]  # fmt: skip
    rows = []
    for n, r in d["snakes"].items():
        e2e = r["e2e_agent_steps_per_s"]
        rand = r["random_policy"]
        two = r.get("worker_2_policies_agent_steps_per_s")
        missing = "— (one snake per board)" if n == "1" else "not measured"
        rows.append([
            n, f"{r['dim']}×{r['dim']}", str(r["boards_per_worker"]), _int(r["raw_agent_steps_per_s"]),
            _int(r["worker_agent_steps_per_s"]),
            f"{_int(two)} ({r['two_policies_vs_one']:.2f}×)" if two else missing,
            _int(e2e) if e2e is not None else "not run", f"{rand['foods_per_episode']:.2f} / {rand['return_mean']:.2f}",
        ])  # fmt: skip
    notes = (
        f"\nAgent steps/s, {d['slots_per_worker']} snakes per worker; raw and worker: medians of {d['rounds']} "
        f"alternating rounds of {d['seconds_per_stage']:g} s, one process and one torch thread; end to end: "
        f"`+experiment=snake_arena_ppo` (2 rollout actors and the learner on Ray) for {d['e2e_seconds']:g} s.\n"
    )
    return _rows(header, rows) + notes


def fixed_budget_learning(data: list[Json]) -> str:
    """``raylab.bench learn`` runs with a fixed time budget (no target), each variant against the uniformly
    random policy on the same env: multi-agent learning (snake_arena_learning.json, spread_learning.json)."""
    d, *baseline = data
    header = ["variant", "overrides", "seeds", "train time", "env steps (median)", "env steps/s",
              "final greedy eval, per seed", "training episodes (last 100): mean extras"]  # fmt: skip
    rows = []
    for variant in d["summary"]:
        runs = sorted((r for r in d["runs"] if r["variant"] == variant), key=lambda r: r["seed"])
        overrides = " ".join(f"`{o}`" for o in [*d["overrides"], *d["variants"][variant]])
        extras = "; ".join(
            ", ".join(f"{k} {v:.1f}" for k, v in sorted(r["episode_extras"].items())) or "—" for r in runs
        )
        if not any(r["episode_extras"] for r in runs):
            extras = "—"
        rows.append([
            f"`{variant}`", overrides, str(len(runs)), _s(d["summary"][variant]["median_train_seconds"]),
            _int(d["summary"][variant]["median_env_steps"]), _int(d["summary"][variant]["median_env_steps_per_s"]),
            ", ".join(f"{r['final_eval_return']:.2f} ± {r['final_eval_std']:.2f}" for r in runs), extras,
        ])  # fmt: skip
    notes = _random_notes(d)
    if baseline:
        rand = baseline[0]["snakes"]["4"]["random_policy"]
        notes = (
            f"\nA uniformly random policy on the same arena (4 snakes, 14×14): return {rand['return_mean']:.2f} and "
            f"{rand['foods_per_episode']:.2f} foods per episode over {rand['episodes']:,} episodes "
            "(`benchmarks/snake_arena_throughput.json`).\n"
        )
    return _rows(header, rows) + notes


def _random_notes(d: Json) -> str:
    """A line per variant on the uniformly random policy measured with ``bench learn --random-episodes``."""
    return "".join(
        f"\nA uniformly random policy on `{variant}`'s env: return {rand['return_mean']:.2f} ± "
        f"{rand['return_std']:.2f} over {rand['episodes']:,} episodes"
        + (
            "; per agent: " + ", ".join(f"{a} {r:.2f}" for a, r in rand["by_agent"].items())
            if len(set((rand.get("by_agent") or {}).values())) > 1
            else ""
        )
        + ".\n"
        for variant, rand in (d.get("random_policy") or {}).items()
    )


def policies_learning(data: list[Json]) -> str:
    """``raylab.bench learn`` runs of several policies beside one shared policy on the same agents, a fixed time
    budget each: every policy's final greedy evaluation and foods, and the throughput against the shared
    policy's in the same alternating run (snake_arena_policies.json)."""
    (d,) = data
    variants = list(d["summary"])
    base = d["summary"][variants[0]]["median_env_steps_per_s"]
    header = ["variant", "policy", "final greedy eval, per seed", "against random opponents, per seed",
              "the arena's foods per life (last 100 training episodes)", "agent steps/s (median)",
              "vs the first variant"]  # fmt: skip
    rows = []
    for variant in variants:
        runs = sorted((r for r in d["runs"] if r["variant"] == variant and r["ok"]), key=lambda r: r["seed"])
        rate = d["summary"][variant]["median_env_steps_per_s"]
        ratio = f"{rate / base:.2f}×" if base and rate else "—"
        names = list(runs[0].get("policies") or {}) if runs else []
        for name in names or ["(shared)"]:
            if names:
                evals = [r["policies"][name]["final_eval_return_mean"] for r in runs]
                foods = [r["policies"][name].get("episode_score_mean_last100") for r in runs]
            else:
                evals = [r["final_eval_return"] for r in runs]
                foods = [r["episode_extras"].get("score") for r in runs]
            versus = [(r.get("against_random") or {}).get(name) for r in runs]
            rows.append([
                f"`{variant}`", name, ", ".join(f"{v:.2f}" for v in evals if v is not None),
                ", ".join(f"{v:.2f}" for v in versus if v is not None) or "—",
                ", ".join(f"{v:.1f}" for v in foods if v is not None) or "—", _int(rate), ratio,
            ])  # fmt: skip
    return _rows(header, rows) + _random_notes(d)


def sampling(data: list[Json]) -> str:
    """``raylab.bench sampling``: the rollout path alone against W x the env-only rate (sampling_*.json)."""
    header = ["experiment", "envs per worker", "env only (1 process)", "workers", "sampled agent steps/s",
              "efficiency", "env", "inference", "weight sync", "transport and the rest"]  # fmt: skip
    rows = []
    for d in data:
        name = " ".join(o.removeprefix("+experiment=") for o in d["overrides"])
        for w, r in d["workers"].items():
            rows.append([
                f"`{name}`", str(d["envs_per_worker"]), _int(d["env_only_agent_steps_per_s"]), w,
                _int(r["agent_steps_per_s"]), f"{r['efficiency']:.0%}", f"{r['env_share']:.0%}",
                f"{r['inference_share']:.0%}", f"{r['sync_share']:.0%}", f"{r['transport_share']:.0%}",
            ])  # fmt: skip
    notes = (
        f"\nMedians of {data[0]['rounds']} alternating rounds of {data[0]['seconds']:g} s. Efficiency: sampled ÷ "
        "(workers × env only). The shares split the workers' wall time by their own stage timers.\n"
    )
    for d in data:
        if "in_process_agent_steps_per_s" in d:  # measured since the in-process line was added
            name = " ".join(o.removeprefix("+experiment=") for o in d["overrides"])
            notes += (
                f"\nIn process, without Ray, one rollout worker of `{name}` samples "
                f"{_int(d['in_process_agent_steps_per_s'])} agent steps/s, {d['in_process_efficiency']:.0%} of env "
                "only: the rest of the efficiency lost above is the calls' and the transport's.\n"
            )
    return _rows(header, rows) + notes


def sampling_revisions(data: list[Json]) -> str:
    """benchmarks/sampling_revisions.py: ``bench sampling`` at two git revisions, alternating in one run."""
    (d,) = data
    r = d["results"]
    before, after = r["revisions"]["before"], r["revisions"]["after"]
    header = ["workers", f"agent steps/s at {before}", f"at {after}", "after / before",
              "efficiency before → after", "weight sync before → after", "transport before → after"]  # fmt: skip
    rows = []
    for shape, row in r["summary"].items():
        if shape == "env_only_agent_steps_per_s":
            continue
        b, a = row["before"], row["after"]
        rows.append([
            shape, _int(b["agent_steps_per_s"]), _int(a["agent_steps_per_s"]), _ratio(row["ratio"]),
            f"{_pct(b['efficiency'])} → {_pct(a['efficiency'])}", f"{_pct(b['sync_share'])} → {_pct(a['sync_share'])}",
            f"{_pct(b['transport_share'])} → {_pct(a['transport_share'])}",
        ])  # fmt: skip
    env = r["summary"]["env_only_agent_steps_per_s"]
    return (
        _rows(header, rows)
        + f"\nEnv only (one process): {_int(env['before'])} / {_int(env['after'])} agent steps/s in the two "
        f"revisions' runs. {_sentence(d['protocol'])}.\n"
    )


def _duration(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms" if seconds < 1 else f"{seconds:.2f} s"


TABLES: dict[str, Table] = {
    "cartpole_dqn_learning": Table(("cartpole_dqn_learning.json",), learn, "Ape-X DQN on CartPole to a greedy 475"),
    "cartpole_ppo_learning": Table(("cartpole_ppo_learning.json",), learn, "PPO on CartPole to a greedy 475"),
    "cartpole_appo_learning": Table(("cartpole_appo_learning.json",), learn, "APPO on CartPole to a greedy 475"),
    "cartpole_a3c_learning": Table(("cartpole_a3c_learning.json",), learn, "A3C on CartPole to a greedy 475"),
    "pendulum_ppo_learning": Table(("pendulum_ppo_learning.json",), learn, "PPO on Pendulum (continuous actions)"),
    "snake_arena_learning": Table(
        ("snake_arena_learning.json", "snake_arena_throughput.json"),
        fixed_budget_learning,
        "the multi-snake arena, one shared policy, fixed budget",
    ),
    "snake_arena_policies": Table(
        ("snake_arena_policies.json",), policies_learning, "the arena: two policies against one shared, fixed budget"
    ),
    "simple_adversary_learning": Table(
        ("simple_adversary_learning.json",), policies_learning, "mpe2 simple_adversary: two teams, two policies"
    ),
    "spread_learning": Table(("spread_learning.json",), fixed_budget_learning, "mpe2 simple_spread, shared policy"),
    "cartpole_ppo_tuning": Table(
        ("cartpole_ppo_tuning.json",), learn, "cartpole_ppo's sweep winner over 3 seeds, to a training return of 475"
    ),
    "cartpole_appo_envs": Table(
        ("cartpole_appo_envs.json",), learn, "cartpole_appo at 32 envs x 32 steps against 8 x 64, 5 seeds"
    ),
    "cartpole_appo_envs_scan": Table(
        ("cartpole_appo_envs_scan.json",), learn, "cartpole_appo's envs per worker scanned, 3 seeds, 2M env-step cap"
    ),
    "halfcheetah_learning": Table(
        ("halfcheetah_learning.json",), fixed_budget_learning, "HalfCheetah-v5, 20 minutes, PPO and APPO"
    ),
    "snake_arena_throughput": Table(("snake_arena_throughput.json",), arena, "the multi-snake arena's agent steps/s"),
    "core_before_after": Table(
        tuple(f"core_before_after_{algo}.json" for algo in ("dqn", "ppo", "appo", "a3c")),
        before_after,
        "before and after the framework core, to a greedy 475",
    ),
    "learner_cpu": Table(("learner_cpu.json",), learner, "DQN learner updates/s"),
    "learner_ppo_cpu": Table(("learner_ppo_cpu.json",), learner, "PPO learner updates/s"),
    "learner_cuda_dqn": Table(("learner_cuda_dqn.json",), learner, "DQN learner updates/s on an H100"),
    "learner_cuda_ppo": Table(("learner_cuda_ppo.json",), learner, "PPO learner updates/s on an H100"),
    "snake_dqn_loop": Table(("snake_dqn_loop.json",), snake_loop, "seed 004's Snake DQN loop"),
    "cartpole_ppo_vs_rllib": Table(("cartpole_ppo_vs_rllib.json",), ppo_vs_rllib, "PPO against RLlib"),
    "cartpole_ppo_vs_rllib_first_fused": Table(
        ("cartpole_ppo_vs_rllib_first_fused.json",), ppo_vs_rllib, "the same, the first run with the fused update"
    ),
    "cartpole_ppo_vs_rllib_autograd": Table(
        ("cartpole_ppo_vs_rllib_autograd.json",), ppo_vs_rllib, "the same, before the fused actor-critic update"
    ),
    "cartpole_appo_vs_peers": Table(
        ("cartpole_appo_vs_peers.json",), appo_vs_peers, "APPO against Sample Factory and RLlib"
    ),
    "cartpole_appo_vs_peers_first_fused": Table(
        ("cartpole_appo_vs_peers_first_fused.json",), appo_vs_peers, "the same, the first run with the fused update"
    ),
    "cartpole_appo_vs_peers_autograd": Table(
        ("cartpole_appo_vs_peers_autograd.json",), appo_vs_peers, "the same, before the fused actor-critic update"
    ),
    "cartpole_appo_vs_peers_torch": Table(
        ("cartpole_appo_vs_peers_torch.json",), appo_vs_peers, "the same, the first run (acting in torch)"
    ),
    "pendulum_ppo_vs_rllib": Table(("pendulum_ppo_vs_rllib.json",), ppo_vs_rllib, "PPO against RLlib on Pendulum"),
    "pendulum_ppo_vs_rllib_autograd": Table(
        ("pendulum_ppo_vs_rllib_autograd.json",), ppo_vs_rllib, "the same, before the fused actor-critic update"
    ),
    "a3c_scaling": Table(("a3c_scaling.json",), a3c_scaling, "A3C worker scaling"),
    "a3c_scaling_16core": Table(("a3c_scaling_16core.json",), a3c_scaling, "A3C worker scaling on 16 cores"),
    "e2e_cartpole": Table(("e2e_cartpole.json",), e2e_cartpole, "apex_dqn end to end against RLlib DQN"),
    "e2e_mario": Table(("e2e_mario.json", "e2e_mario_free.json"), e2e_mario, "apex_dqn end to end on Mario"),
    "envs": Table(("envs.json",), envs, "raw env throughput"),
    "sampling": Table(
        tuple(f"sampling_{n}.json" for n in ("cartpole", "snake", "mario", "coinrun")),
        sampling,
        "the rollout path alone against the env-only limit",
    ),
    "sampling_after": Table(
        tuple(f"sampling_{n}_after.json" for n in ("snake", "mario", "coinrun")),
        sampling,
        "Snake, Mario and CoinRun's rollout paths, re-measured at 2594d24",
    ),
    "sampling_cartpole_after": Table(
        ("sampling_cartpole_after.json",), sampling, "CartPole's rollout path at 32 envs, 1 and 2 calls in flight"
    ),
    "cartpole_appo_chunks_in_flight": Table(
        ("cartpole_appo_chunks_in_flight.json",), learn, "cartpole_appo with 1 and 2 chunks in flight, 5 seeds"
    ),
    "cartpole_appo_rollout_length": Table(
        ("cartpole_appo_rollout_length.json",), learn, "cartpole_appo with 32- and 64-step chunks, 5 seeds"
    ),
    "cartpole_appo_rollout_length_c1": Table(
        ("cartpole_appo_rollout_length_c1.json",),
        learn,
        "cartpole_appo with 32-step chunks, 2 per update, and 64-step chunks, 1 per update, 5 seeds",
    ),
    "cartpole_appo_rollout_length_10seeds": Table(
        ("cartpole_appo_rollout_length_10seeds.json",),
        learn,
        "cartpole_appo with 32- and 64-step chunks, 10 more seeds",
    ),
    "sampling_cartpole_r64": Table(
        ("sampling_cartpole_r64.json",), sampling, "CartPole's rollout path with 64-step chunks"
    ),
    "sampling_cartpole_numpy": Table(
        ("sampling_cartpole_numpy.json",), sampling, "CartPole's rollout path acting in NumPy, 1 and 2 calls in flight"
    ),
    "sampling_sink_weights": Table(
        ("sampling_sink_weights.json",), sampling_sink_weights, "the sampling sink's weights: object store or inline"
    ),
    "sampling_cartpole_weight_load": Table(
        ("sampling_cartpole_weight_load.json",),
        sampling_revisions,
        "CartPole's rollout path before and after the direct weight load",
    ),
    "sampling_snake_weight_load": Table(
        ("sampling_snake_weight_load.json",),
        sampling_revisions,
        "Snake's rollout path before and after the direct weight load",
    ),
    "sampling_cartpole_niceness": Table(
        ("sampling_cartpole_niceness.json",),
        sampling_revisions,
        "CartPole's rollout path with the actors at Ray's nice 15 and at the driver's priority",
    ),
    "sampling_cartpole_inline": Table(
        ("sampling_cartpole_inline.json",), sampling, "CartPole's rollout path, the sink's weights inline"
    ),
    "sampling_snake_inline": Table(
        ("sampling_snake_inline.json",), sampling, "Snake's rollout path, the sink's weights inline"
    ),
    "sampling_cartpole_inprocess": Table(
        ("sampling_cartpole_inprocess.json",), sampling, "CartPole's rollout path, with the worker alone in process"
    ),
    "sampling_cartpole_envpool": Table(
        ("sampling_cartpole_envpool.json",), sampling, "CartPole's rollout path with env.backend=envpool"
    ),
    "cartpole_appo_envpool": Table(
        ("cartpole_appo_envpool.json",), learn, "cartpole_appo on gymnasium's and on EnvPool's CartPole, 5 seeds"
    ),
    "cartpole_appo_envpool_threads": Table(
        ("cartpole_appo_envpool_threads.json",), learn, "the same with EnvPool's default threads (the first version)"
    ),
    "policy_inference": Table(("policy_inference.json",), policy_inference, "act() in torch and in NumPy"),
    "dqn_fused_update": Table(("dqn_fused_update.json",), dqn_fused_update, "a DQN update: autograd and fused"),
    "ppo_fused_update": Table(("ppo_fused_update.json",), ppo_fused_update, "a PPO/APPO call: autograd and fused"),
    "cartpole_appo_fused": Table(("cartpole_appo_fused.json",), learn, "cartpole_appo through autograd and fused"),
    "cartpole_ppo_fused": Table(("cartpole_ppo_fused.json",), learn, "cartpole_ppo through autograd and fused"),
    "halfcheetah_ppo_fused": Table(
        ("halfcheetah_ppo_fused.json",), learn, "halfcheetah_ppo through autograd and fused, 120 s each"
    ),
    "cartpole_dqn_fused": Table(
        ("cartpole_dqn_fused.json",), learn, "cartpole_dqn through autograd and torch acting, and fused, 3 seeds"
    ),
    "cartpole_appo_numpy_inference": Table(
        ("cartpole_appo_numpy_inference.json",), learn, "cartpole_appo acting in torch and in NumPy, 5 seeds"
    ),
    "cartpole_ppo_numpy_inference": Table(
        ("cartpole_ppo_numpy_inference.json",), learn, "cartpole_ppo acting in torch and in NumPy, 5 seeds"
    ),
    "timer_overhead": Table(("timer_overhead.json",), timer_overhead, "the cost of per-stage timing"),
    "replay_snapshot": Table(("replay_snapshot.json",), replay_snapshot, "replay snapshots: size and seconds"),
    "fault_run": Table(("fault_run.json",), fault_run, "a run with actors killed, beside a clean one"),
}
"""Every table, by the name a docs page asks for it with."""


def table(name: str, benchmarks: Path = BENCHMARKS, link: Callable[[str], str] | None = None) -> str:
    """Table ``name`` from the JSON under ``benchmarks``, then its sources and machines. ``link`` turns a
    file name into a link target (the docs site's copy of the JSON); without it files are named plainly."""
    spec = TABLES[name]
    data = [json.loads((benchmarks / file).read_text()) for file in spec.files]
    sources = "; ".join(
        f"{f'[`{file}`]({link(file)})' if link else f'`benchmarks/{file}`'}: {machine_line(d)}"
        for file, d in zip(spec.files, data, strict=True)
    )
    return f"{spec.render(data)}\n*Data: {sources}.*\n"


def module_bullets(path: Path) -> dict[str, str]:
    """``{name: text}`` of the ``- ``name``: text`` items in a module's docstring (read with ast, nothing
    imported): a benchmark's variants described where they are defined."""
    doc = ast.get_docstring(ast.parse(path.read_text())) or ""
    items: dict[str, str] = {}
    current = None
    for line in doc.splitlines():
        if line.startswith("- ``") and "``:" in line:
            current, _, text = line[4:].partition("``:")
            items[current] = text.strip().replace("``", "`")
        elif current and line.startswith("  "):
            items[current] += " " + line.strip().replace("``", "`")
        else:
            current = None
    return items


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m raylab.bench.tables", description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", help=f"tables to print (default: all): {', '.join(TABLES)}")
    parser.add_argument("--benchmarks", type=Path, default=BENCHMARKS, help="the benchmark JSON folder")
    args = parser.parse_args(argv)
    unknown = [name for name in args.names if name not in TABLES]
    if unknown:
        parser.error(f"unknown table(s) {', '.join(unknown)}: choose from {', '.join(TABLES)}")
    for name in args.names or TABLES:
        print(f"### {TABLES[name].title}\n\n{table(name, args.benchmarks)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

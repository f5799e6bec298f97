"""The tables of one component's speed measured alone: the learner's update (per speed option, and fused against
autograd), a rollout actor's act(), a reference Snake DQN loop, the stage timer's cost, and replay snapshots."""

from __future__ import annotations

from collections.abc import Callable

from .format import ROOT, Json, _duration, _int, _ratio, _rows, _sentence, _sig, module_bullets

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
    "frames64": "eager fp32, 64x64 frames",
    "frames64_narrow": "eager fp32, 64x64 frames, convolutions 16/32/32",
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


def nature_cnn_layers(data: list[Json]) -> str:
    """``benchmarks/nature_cnn_layers.py``: each Nature CNN layer's forward and forward + backward time per batch
    size, the GFLOP/s each reaches, and what a double DQN update's layers add up to."""
    (d,) = data
    header = ["batch", "layer", "forward", "forward GFLOP/s", "forward + backward", "forward + backward GFLOP/s"]
    rows, sums = [], []
    for batch, result in d["batch_sizes"].items():
        for name, r in result["layers"].items():
            rows.append([
                batch, name, f"{_sig(r['forward_ms'])} ms", f"{r['forward_gflop_per_s']:.0f}",
                f"{_sig(r['forward_backward_ms'])} ms", f"{r['forward_backward_gflop_per_s']:.0f}",
            ])  # fmt: skip
        update = result["dqn_update_ms"]
        sums.append(f"batch {batch}: {_sig(update)} ms ({_sig(1e3 / update)} updates/s)")
    notes = (
        f"\n{d['dtype']}, {d['layout'].replace('_', '-')}, {d['torch_threads']} torch thread; medians of "
        f"{d['repeats']} timings of 10 calls. conv1's backward computes its weights' gradient only (the frames "
        f"need none): 2x its forward FLOPs, the other layers' 3x. A double DQN update's layers (forward + "
        f"backward, and 2 forward passes without gradients): {'; '.join(sums)}.\n"
    )
    return _rows(header, rows) + notes


def frame_conversion(data: list[Json]) -> str:
    """``benchmarks/frame_conversion.py``: uint8 frames to a CNN's channels-last input, in one step against bytes
    laid out first, alone per shape and inside mario_dqn's learner update."""
    (d,) = data
    header = ["input", "shape", "dtype", "one step (before)", "bytes laid out first (after)", "after / before"]
    rows = [
        [name, " x ".join(map(str, d["shapes"][name])), d["dtypes"][name], f"{_sig(r['before'])} µs",
         f"{_sig(r['after'])} µs", _ratio(r["ratio"])]
        for name, r in d["conversion_us"].items()
    ]  # fmt: skip
    for frame, r in d["learner_updates_per_s"].items():
        rows.append([
            f"mario_dqn's learner, batch {d['learner_batch']}", f"{frame} x {frame} frames", "float32",
            f"{_sig(r['before'])} updates/s", f"{_sig(r['after'])} updates/s", _ratio(r["ratio"]),
        ])  # fmt: skip
    notes = (
        f"\n{d['torch_threads']} torch thread; the variants alternate round by round, medians of {d['rounds']} "
        f"rounds. A conversion's ratio below 1 is faster; the learner's above 1 is faster.\n"
    )
    return _rows(header, rows) + notes


def mario_frame_copy(data: list[Json]) -> str:
    """``benchmarks/mario_frame_copy.py``: Mario frames out of nes-py, a strided copy of its RGB view against one
    channel swap of its BGRx buffer, in MarioEnv.step and in a rollout actor's vector env."""
    (d,) = data
    header = [
        "timing", "copy of the RGB view (before)", "swap from BGRx (after)", "after / before",
        "rounds' own after / before (median, range)",
    ]  # fmt: skip
    names = {
        "env_frames_per_s": ("`MarioEnv.step` (one emulator frame)", "frames/s"),
        "vector_agent_steps_per_s": (
            f"rollout actor's vector env ({d['vector_envs']} envs, frame skip {d['frame_skip']}, 64 x 64)",
            "agent steps/s",
        ),
    }
    rows = []
    for key, (name, unit) in names.items():
        r, rounds = d[key], d[f"{key}_rounds"]
        paired = [a / b for a, b in zip(rounds["after"], rounds["before"], strict=True)]
        rows.append([
            name, f"{_sig(r['before'])} {unit}", f"{_sig(r['after'])} {unit}", _ratio(r["ratio"]),
            f"{_ratio(r['paired_ratio'])} ({_ratio(min(paired))}-{_ratio(max(paired))})",
        ])  # fmt: skip
    notes = (
        f"\nOne process; the variants alternate on the same envs ({d['order']}), medians of {d['rounds']} rounds "
        f"of {d['seconds']:g} s. Above 1 is faster.\n"
    )
    return _rows(header, rows) + notes


def snake_loop(data: list[Json]) -> str:
    """``raylab.bench snake_dqn_loop``: the Snake DQN reference loop and raylab's, env steps/s."""
    (d,) = data
    notes = module_bullets(ROOT / "raylab" / "bench" / "snake_loop.py")
    published = d["reference_published_steps_per_s"]
    published_ratio = f"vs the reference's published {published:,} (its machine)"
    header = ["loop", "env steps/s", published_ratio, "vs the reference loop here"]
    rows = [
        [
            f"`{v}`" + (f": {notes[v]}" if v in notes else ""),
            _int(steps),
            _ratio(d["vs_reference_published"][v]),
            _ratio(d["vs_reference_same_machine"][v]),
        ]
        for v, steps in d["median_steps_per_s"].items()
    ]
    return _rows(header, rows) + f"\n{_sentence(d['protocol'])}.\n"


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


def fused_vs_compile(data: list[Json]) -> str:
    """benchmarks/fused_vs_compile.py: one learner call through autograd, torch.compile and the fused step."""
    (d,) = data
    header = ["case", "autograd (ms per call)", "torch.compile", "fused", "compile / autograd speed-up",
              "fused / compile speed-up", "compile warm-up"]  # fmt: skip
    rows = []
    for name, r in d["results"].items():
        ms = r["ms_per_call"]
        rows.append([
            f"`{name}`", f"{ms['autograd']:.2f}", f"{ms['compiled']:.2f}", f"{ms['fused']:.2f}",
            _ratio(r["compiled_over_autograd"]), _ratio(r["fused_over_compiled"]), f"{r['warmup_s']['compiled']:.0f} s",
        ])  # fmt: skip
    return _rows(header, rows) + f"\n{d['protocol']}.\n"


def code_shape(data: list[Json]) -> str:
    """benchmarks/code_shape.py: the actor seam and the package's shape at two revisions."""
    (d,) = data
    before, after = d["results"]["before"], d["results"]["after"]

    def longest(s: Json) -> str:
        top = s["longest_functions_topology_driver"][0]
        return f"{top['lines']} (`{top['where'].split(':')[0].removeprefix('raylab/')}` {top['where'].split()[-1]})"

    def big(s: Json) -> str:
        return ", ".join(f"`{p.removeprefix('raylab/')}` {n}" for p, n in s["modules_over_400_lines"].items()) or "none"

    def pairs(s: Json) -> str:
        return ", ".join(" ↔ ".join(p) for p in s["package_pairs_importing_each_other"]) or "none"

    def kinds(s: Json) -> str:
        return ", ".join(f"{k} {n}" for k, n in s["files_naming_each_actor_kind"].items())

    rows = [
        ["lines of the actor seam", str(before["seam_lines"]), str(after["seam_lines"])],
        ["files naming each actor kind's classes", kinds(before), kinds(after)],
        ["Backend methods named after an actor kind", ", ".join(before["backend_methods_named_after_a_kind"]),
         ", ".join(after["backend_methods_named_after_a_kind"]) or "none (one `spawn`)"],
        ["longest function in topology/ and driver/", longest(before), longest(after)],
        ["largest topology file (lines)", *(str(max(s["topology_files"].values())) for s in (before, after))],
        ["modules over 400 lines", big(before), big(after)],
        ["packages that import each other", pairs(before), pairs(after)],
    ]  # fmt: skip
    header = ["", f"before (`{before['revision']}`)", f"after (`{after['revision']}`)"]
    return _rows(header, rows) + f"\n{d['protocol']}.\n"


STEP_COST_CELLS = {
    "appo/vector": "pong_appo's shapes, 4-float observations",
    "appo/frames": "pong_appo's shapes, 4 x 84 x 84 frames",
    "ppo/vector": "pong_ppo's shapes, 4-float observations",
    "ppo/frames": "pong_ppo's shapes, 4 x 84 x 84 frames",
    "dqn/vector": "mario_dqn's shapes, 4-float observations",
    "dqn/frames": "mario_dqn's shapes, 4 x 84 x 84 frames",
}


def learner_step_cost(data: list[Json]) -> str:
    """benchmarks/learner_step_cost.py: the learner's cost per optimizer step with the work taken out, and the
    aten ops it runs per step, per tree."""
    (d,) = data
    names = list(d["variants"])
    base = names[0]
    header = ["workload", *(f"{n}: µs / step" for n in names), *(f"{n}: ops / step" for n in names)]
    if len(names) > 1:
        header.insert(1 + len(names), f"{names[-1]} / {base}")
    rows = []
    for cell, per in d["summary"].items():
        us = [_int(per[n]["us_per_step"]) for n in names]
        ops = [f"{per[n]['top_level_ops_per_step']:.0f} ({per[n]['aten_ops_per_step']:.0f})" for n in names]
        ratio = [_ratio(per[names[-1]]["us_per_step"] / per[base]["us_per_step"])] if len(names) > 1 else []
        rows.append([STEP_COST_CELLS.get(cell, cell), *us, *ratio, *ops])
    trees = "; ".join(f"`{n}`: {v['commit']}" + (f" with {' '.join(v['overrides'])}" if v["overrides"] else "")
                      for n, v in d["variants"].items())  # fmt: skip
    notes = (
        f"\nOps: aten operations per optimizer step that Python dispatched (in brackets, all of them, nested "
        f"ones included), counted by torch.profiler over one call. Trees: {trees}. {_sentence(d['protocol'])}.\n"
    )
    return _rows(header, rows) + notes


def learner_profile(data: list[Json]) -> str:
    """benchmarks/learner_profile.py: a learner call's milliseconds by phase, per tree, on real networks."""
    (d,) = data
    names = list(d["variants"])
    rows = []
    for workload, per in d["summary"].items():
        phases = sorted({p for n in names for p in per[n]["ms_per_call_by_phase"]},
                        key=lambda p: -per[names[0]]["ms_per_call_by_phase"].get(p, 0.0))  # fmt: skip
        for phase in ["call", *phases]:
            cells = []
            for n in names:
                if phase == "call":
                    cells.append(f"**{_sig(per[n]['ms_per_call'])} ms** ({per[n]['steps_per_call']:.0f} steps)")
                else:
                    ms, share = per[n]["ms_per_call_by_phase"].get(phase, 0.0), per[n]["share_by_phase"].get(phase, 0.0)
                    cells.append(f"{_sig(ms)} ms ({100 * share:.1f} %)")
            rows.append([d["workloads"][workload], "the whole call" if phase == "call" else phase, *cells])
    header = ["experiment", "phase", *(f"`{n}`" for n in names)]
    return _rows(header, rows) + f"\n{_sentence(d['protocol'])}.\n"

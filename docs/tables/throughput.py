"""The throughput tables: the rollout path against the env-only limit (and at two revisions), the sampling
sink's weights, raw env throughput per pipeline stage, the multi-snake arena, and A3C's worker scaling."""

from __future__ import annotations

import statistics

from .format import Json, _int, _pct, _ratio, _rows, _sentence, _sig, machine_line


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


def a3c_scaling(data: list[Json]) -> str:
    """``raylab.bench scaling``: a reference C++ A3C's worker-scaling protocol, beside its own figures."""
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
        "C++ reference total_s initial / final",
        "C++ reference wait share",
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
        + f". C++ reference: {seed['source'].split(': ', 1)[-1]}, on its own machine.\n"
    )
    return _rows(header, rows) + notes


GPU_RUNS = {
    "old": "fefcb63, per-actor inference",
    "new": "today's learner (compiled), per-actor inference",
    "central": "today's learner (compiled), central inference",
}
"""benchmarks/gpu_learner_ab.sh's Pong runs, in the table's order, with their column heads."""


def gpu_learner_ab(data: list[Json]) -> str:
    """benchmarks/gpu_learner_ab.json: pong_appo with 14 rollout actors on a GPU machine, an older learner against
    today's, per-actor against central inference, and the machine's env-only limit."""
    (d,) = data
    runs = {name: d["runs"][name] for name in GPU_RUNS if name in d["runs"]}
    phases = d["phases"]

    def share(key: str) -> list[str]:
        return [_pct(r[key]) if r.get(key) is not None else "—" for r in runs.values()]

    def busy(name: str) -> str:
        p = phases.get(f"pong_{name}", {})
        return "—" if p.get("gpu_busy_median") is None else f"{p['gpu_busy_median']:.0f} % ({p['gpu_busy_p90']:.0f} %)"

    def ended(name: str) -> str:
        code = phases.get(f"pong_{name}", {}).get("exit")
        return {0: "its own stop", 124: "the call's time limit for it"}.get(code, f"exit {code}")

    def evals(r: Json) -> str:
        last = r["evals"][-1] if r["evals"] else None
        return "none" if last is None else f"{last['return_mean']:.1f} at {last['time_s']:.0f} s"

    rows = [
        ["env frames/s", *(_int(r["env_frames_per_s"]) for r in runs.values())],
        ["optimizer steps/s (minibatches of 256)", *(_int(r["updates_per_s"]) for r in runs.values())],
        ["rollout actors parked (waiting for the learner)", *(f"{r['parked_workers']:g}" for r in runs.values())],
        ["learner: updating", *share("share/learner/update")],
        ["learner: waiting for chunks", *share("share/learner/wait")],
        ["rollout actor: env", *share("share/rollout/env")],
        ["rollout actor: inference (central: waiting on the inference actor)", *share("share/rollout/inference")],
        ["rollout actor: waiting for the driver", *share("share/rollout/wait")],
        ["GPU busy, median (p90) of 1-s samples", *(busy(n) for n in runs)],
        ["first optimizer step", *(f"{r['first_update_row_s']:.0f} s" for r in runs.values())],
        ["training return at the end", *(f"{r['last_training_return']:.1f} at {r['last_row']['time_s']:.0f} s"
                                         for r in runs.values())],
        ["greedy evaluation (10 games), last", *(evals(r) for r in runs.values())],
        ["ended by", *(ended(n) for n in runs)],
    ]  # fmt: skip
    limit = d.get("env_limit")
    cells = ", ".join(f"{row['processes']}: {_int(row['frames_per_s'])}" for row in limit["rows"]) if limit else ""
    path = d.get("frame_path_agent_steps_per_s") or {}
    notes = (
        f"\nMedians over each run's rows once the learner trains, the first and the last row left out. Measured "
        f"{machine_line(d)}. "
        f"The machine's env-only limit, the sum of P processes stepping Pong's 16-env vector with random actions "
        f"(benchmarks/env_limit.py), in frames/s per P: {cells}."
    )
    if path:
        notes += (
            " The frame path script reached only "
            + ", ".join(f"`{k}` {_int(v * 4)} frames/s" for k, v in path.items())
            + " before the call's deadline."
        )
    head = ["", *GPU_RUNS.values()][: len(runs) + 1]
    return _rows(head, rows) + notes + "\n"


def timed_variants(data: list[Json]) -> str:
    """``benchmarks/timed_variants.py``: config variants under ``bench timed``, alternating and repeated; per
    variant the median env frames/s, its ratio to the first variant, each run's frames/s in the order they ran, the
    median updates a second over the timed budget and the median CPU used. Several files: one table each."""
    return "\n".join(_timed_variants(d) for d in data)


def _timed_variants(d: Json) -> str:
    first = next(iter(d["variants"]))
    medians = d["median_average_fps"]
    header = ["variant", "overrides", "runs", "env frames/s (median)", f"÷ {first}", "each run (in order)",
              "updates/s over the budget (median)", "CPU used (median)"]  # fmt: skip
    rows = []
    for name, extra in d["variants"].items():
        runs = sorted((r for r in d["runs"] if r["variant"] == name), key=lambda r: r["repeat"])
        updates = statistics.median(r["total_updates"] / (d["minutes"] * 60) for r in runs)
        rows.append([
            name, " ".join(f"`{o}`" for o in extra) or "—", str(len(runs)), _int(medians[name]),
            _ratio(medians[name] / medians[first]), ", ".join(_int(r["average_fps"]) for r in runs),
            f"{updates:.1f}", f"{statistics.median(r['cpu_utilization'] for r in runs):.0%}",
        ])  # fmt: skip
    base = " ".join(f"`{o}`" for o in d["overrides"])
    shape = f"{d['minutes']:g} minutes of training a run ({d['mode']}), each a fresh process"
    note = f"\n{base}, {shape}, the variants alternating.\n"
    return _rows(header, rows) + note

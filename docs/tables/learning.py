"""The learning runs' tables: ``raylab.bench learn`` to a target or for a fixed time budget (one policy or
several), old against new commits, and a run with its actors killed."""

from __future__ import annotations

import statistics

from .atari import _at_frames
from .format import Json, _int, _ratio, _ret, _rows, _s, commit_text, fps_cells, run_cpu


def learn(data: list[Json]) -> str:
    """``raylab.bench learn``: each variant's runs to the target (cartpole_*_learning.json)."""
    (d,) = data
    episodes = sorted({run["final_eval_episodes"] for run in d["runs"]})
    target = d["runs"][0]["target"]  # None: the runs stopped at a training return (stop.train_return), not a greedy one
    targets = {r["variant"]: r["target"] for r in d["runs"]}
    several = len(set(targets.values())) > 1  # variants of several envs, each to its own target
    header = [
        "variant",
        "overrides",
        "reached (its target)"
        if several
        else f"reached {target:g}"
        if target is not None
        else "reached its stop target",
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
                f"{summary['reached'] if target is not None else _stopped_by_target(runs)} / {summary['runs']}"
                + (f" ({targets[variant]:g})" if several else ""),
                f"{_s(summary['median_train_seconds'])} / {_s(summary['max_train_seconds'])}",
                _s(summary["median_process_seconds"]),
                _int(summary["median_env_steps"]),
                _int(summary["median_env_steps_per_s"]),
                _int(summary["median_updates_per_s"]),
                ", ".join(_ret(r["final_eval_return"]) for r in runs),
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


def throughput_before_after(data: list[Json]) -> str:
    """``raylab.bench learn`` runs of a fixed duration (no target), variants alternating seed by seed: env steps/s
    and learner updates/s per variant, each as a ratio to the file's first variant, and every seed's env steps/s."""
    header = ["experiment", "variant", "runs", "env steps/s (median)", "× first", "learner updates/s (median)",
              "× first", "env steps/s, per seed"]  # fmt: skip
    rows = []
    for d in data:
        experiment = " ".join(f"`{o}`" for o in d["overrides"] if not o.startswith(("stop.", "eval.")))
        first = next(iter(d["summary"].values()))
        for variant, summary in d["summary"].items():
            runs = sorted((r for r in d["runs"] if r["variant"] == variant), key=lambda r: r["seed"])
            rows.append([
                experiment, f"`{variant}`", str(summary["runs"]), _int(summary["median_env_steps_per_s"]),
                _ratio(summary["median_env_steps_per_s"] / first["median_env_steps_per_s"]),
                _int(summary["median_updates_per_s"]),
                _ratio(summary["median_updates_per_s"] / first["median_updates_per_s"]),
                ", ".join(_int(r["env_steps_per_s"]) for r in runs),
            ])  # fmt: skip
    return _rows(header, rows)


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


def soak(data: list[Json]) -> str:
    """benchmarks/soak.py: long runs with a rollout actor SIGKILLed on a schedule and the learner once; every
    process kind's RSS and fds, the object store and the run directory early and at the end, and their growth."""
    (d,) = data
    p = d["protocol"]
    early, end = f"{p['early']:g} min", f"{p['minutes']:g} min"
    header = [
        "run",
        "process kind",
        "processes",
        f"RSS at {early} / {end}",
        "ratio",
        f"RSS slope, last {p['window']:g} min",
        f"fds at {early} / {end}",
        "flat",
    ]
    rows = []
    for run in d["runs"]:
        for kind, k in run["summary"]["kinds"].items():
            rss, fds = k["rss_mb"], k["fds"]
            if rss["early"] is None or rss["end"] is None:
                continue  # a process that did not live through both times (an idle worker, a startup helper)
            rows.append(
                [
                    f"`{run['experiment']}`",
                    kind,
                    str(k["processes"]),
                    f"{rss['early']:.0f} / {rss['end']:.0f} MB",
                    _ratio(rss["ratio"]) if rss["ratio"] is not None else "—",
                    _slope(rss["slope_per_min"], "MB"),
                    f"{fds['early']:g} / {fds['end']:g}",
                    _flat(rss["flat"], fds["flat"]),
                ]
            )
    header2 = [
        "run",
        f"object store used at {early} / {end}",
        f"run dir at {early} / {end}",
        "kills (rollout, learner)",
        "restarts counted",
        "checkpoint files at the end",
        "exit status",
        "load average (median / max)",
    ]
    rows2 = []
    for run in d["runs"]:
        s = run["summary"]
        store, size = s["object_store_mb"], s["run_dir_mb"]
        counted = ", ".join(f"{k} {v:,}" for k, v in s["restarts"].items()) or "0"
        rows2.append(
            [
                f"`{run['experiment']}`",
                f"{_mb(store['early'])} / {_mb(store['end'])} ({_slope(store['slope_per_min'], 'MB')})",
                f"{_mb(size['early'])} / {_mb(size['end'])} ({_slope(size['slope_per_min'], 'MB')})",
                f"{s['kills']['rollout']}, {s['kills']['learner']}",
                counted,
                ", ".join(f"`{f}`" for f in s["checkpoint_files_at_end"]) or "none",
                f"{s['returncode']}, final.pt {'written' if s['final_pt'] else 'missing'}",
                f"{s['load1']['median']:.1f} / {s['load1']['max']:.1f}",
            ]
        )
    notes = (
        f"\nRSS: the median over the kind's live processes at the sample nearest each time (a replaced rollout actor"
        f" or learner is a new process); slope: least squares over the kind's per-sample median in the last "
        f"{p['window']:g} min, per minute. Flat: RSS slope under {p['flat_slope_mb_min']:g} MB/min and end/early "
        f"under {p['flat_ratio']:g}×, fds slope under {p['flat_fds_slope']:g}/min. A rollout actor SIGKILLed every "
        f"{p['kill_every']:g} min, the learner at {p['learner_at']:g} min; checkpoints every "
        f"{p['checkpoint_every']:g} s, {p['keep']} kept; samples every {p['sample_every']:g} s; "
        f"{d['machine']['nproc']} cores shared with other work (load average above).\n"
    )
    return _rows(header, rows) + "\n" + _rows(header2, rows2) + notes


def _slope(x: float | None, unit: str) -> str:
    return "—" if x is None else f"{x:+.2f} {unit}/min"


def _mb(x: float | None) -> str:
    return "—" if x is None else f"{x:.1f} MB"


def _flat(rss: bool | None, fds: bool | None) -> str:
    if rss is None or fds is None:
        return "—"
    grows = [name for name, flat in (("RSS", rss), ("fds", fds)) if not flat]
    return "yes" if not grows else f"no: {' and '.join(grows)} grow"


def gcs_task_events(data: list[Json]) -> str:
    """benchmarks/gcs_task_events.py: Ray's GCS memory over a long run, with Ray's task-event buffer as it
    ships and capped as raylab's embedded Ray now starts it."""
    (d,) = data
    series = d["gcs_rss_mb"]
    times = [t for t, _ in series["ray_default"] if t % 60 < 10 or t == series["ray_default"][-1][0]]
    header = ["task events kept by the GCS", *[f"GCS RSS at {t / 60:.1f} min" for t in times]]
    rows = []
    for name, label in (("ray_default", "100,000 (Ray's default)"), ("capped_10000", "10,000 (raylab's embedded Ray)")):
        at = dict((t, mb) for t, mb in series[name])
        rows.append([label, *[f"{at[t]:.0f} MB" if t in at else "—" for t in times]])
    return _rows(header, rows) + f"\n\n{d['experiment']}; {d['note']}. `{d['command']}`"


def learning_summary(data: list[Json]) -> str:
    """Several ``raylab.bench learn`` files in one table, a row per variant: the time and env steps each algorithm
    took to its target, and the commit and date each file was measured at (cartpole_*_learning.json)."""
    header = ["experiment", "variant", "reached", "train time (median / max)", "env steps (median)", "env steps/s",
              "measured"]  # fmt: skip
    rows = []
    for d in data:
        experiment = " ".join(o.split("=", 1)[1] for o in d["overrides"] if o.startswith("+experiment="))
        machine = d.get("machine") or {}
        measured = f"{machine.get('date', '')[:10]}, {commit_text(machine.get('git_commit'))}"
        for variant, summary in d["summary"].items():
            rows.append(
                [
                    f"`{experiment}`",
                    f"`{variant}`",
                    f"{summary['reached']} / {summary['runs']}",
                    f"{_s(summary['median_train_seconds'])} / {_s(summary['max_train_seconds'])}",
                    _int(summary["median_env_steps"]),
                    _int(summary["median_env_steps_per_s"]),
                    measured,
                ]
            )
    return _rows(header, rows)


def equal_frames(data: list[Json]) -> str:
    """Two runs read at the same frame counts (pong_appo_central_equal_frames.json): each one's training return
    and latest greedy evaluation at each mark, then the frames and time each took to a greedy 18."""
    (d,) = data
    names = list(d["runs"])
    header = ["frames", *[f"{n}: training / greedy" for n in names]]
    rows = [
        [f"{m['frames'] / 1e6:g}M", *[f"{_opt(m[n]['train'])} / {_opt(m[n]['greedy'])}" for n in names]]
        for m in d["table"]
    ]
    reached = []
    for n in names:
        hit = d["to_18"][n]
        run = d["runs"][n]
        where = f"{run.get('commit', '?')}, {run.get('date', d['machine']['date'])[:10]}"
        reached.append(f"{_int(hit['frames'])} frames, {_s(hit['seconds'])}" if hit else f"not yet ({where})")
    rows.append(["to a greedy 18", *reached])
    return _rows(header, rows)


def _opt(value: float | None) -> str:
    return "—" if value is None else _ret(value)


MARIO_ANCHORS = (
    'PPO (vietnh1009/Super-mario-bros-PPO-pytorch, 8 envs × 512 steps an update) completed 1-1 "around 900 '
    'episode update[s]", about 3.7M agent steps '
    "([a user's report](https://github.com/vietnh1009/Super-mario-bros-PPO-pytorch/issues/11))",
    "MadMario, the source of PyTorch's Mario DDQN tutorial: 40,000 episodes, \"around 80 hours on CPU and 20 hours "
    'on GPU" ([yuansongFeng/MadMario](https://github.com/yuansongFeng/MadMario))',
)
"""Published anchors for World 1-1 (agent steps at frame skip 4), beside raylab's table."""


def _first(run: Json, key: str, at_least: float) -> Json | None:
    """The first greedy evaluation whose ``key`` mean reached ``at_least`` (eval_extras rows), or None."""
    for time_s, steps, extras in run.get("eval_extras") or []:
        value = extras.get(key)
        if value is not None and value >= at_least:
            return {"time_s": time_s, "env_steps": steps}
    return None


def _hm(seconds: float) -> str:
    """1 h 05 min, 42 min, 30 s: a long run's time."""
    if seconds < 60:
        return f"{seconds:.0f} s"
    minutes = round(seconds / 60)
    return f"{minutes // 60} h {minutes % 60:02d} min" if minutes >= 60 else f"{minutes} min"


def _when(hit: Json | None, frame_skip: int) -> str:
    if hit is None:
        return "not reached"
    steps = hit["env_steps"]
    return f"{_hm(hit['time_s'])}, {_int(steps)} steps ({steps * frame_skip / 1e6:.2f}M frames)"


def mario_learning(data: list[Json]) -> str:
    """``make bench-mario-learning`` (``raylab.bench learn`` on ``+experiment=mario_dqn``, mario_dqn_learning.json; the
    recipe table mario_learning.json the same way):
    per seed, when the greedy evaluations (10 episodes each, every 10 minutes) first reached the flag and first
    reached a flag rate of 0.8, the best and final greedy x-position, agent steps, frames and frames/s; the
    published anchors under it."""
    (d,) = data
    frame_skip = 4  # the mario env's frame skip: agent steps x 4 = frames
    header = ["variant", "seed", "stopped by", "train time", "agent steps (frames)", "frames/s", "first greedy flag",
              "greedy flag rate ≥ 0.8", "best greedy x-position",
              "final greedy: flag rate (95 % interval), x"]  # fmt: skip
    rows = []
    runs = sorted(d["runs"], key=lambda r: (r["variant"], r["seed"]))
    done = [run for run in runs if run["ok"]]
    cells = fps_cells([(r.get("env_frames_per_s") or 0, run_cpu(r, d)) for r in done])
    fps = dict(zip(map(id, done), cells, strict=True))
    for run in runs:
        if not run["ok"]:
            rows.append([f"`{run['variant']}`", str(run["seed"]), "failed", *["—"] * 7])
            continue
        evals = run.get("eval_extras") or []
        best_x = max((e[2].get("x_pos", 0.0) for e in evals), default=None)
        final = run.get("final_eval_extras") or {}
        final_text = "—"
        if {"flag_get", "x_pos"} <= set(final):
            episodes = run.get("final_eval_episodes")
            low, high = wilson_interval(final["flag_get"], episodes) if episodes else (None, None)
            interval = "" if low is None or high is None else f" ({low:.2f}-{high:.2f})"
            final_text = f"{final['flag_get']:.1f}{interval}, {final['x_pos']:,.0f}"
        steps = run["env_steps"]
        rows.append([
            f"`{run['variant']}`", str(run["seed"]), str(run["stop_reason"]), _hm(run["train_seconds"]),
            f"{_int(steps)} ({steps * frame_skip / 1e6:.2f}M)", fps[id(run)],
            _when(_first(run, "flag_get", 0.1), frame_skip), _when(_first(run, "flag_get", 0.8), frame_skip),
            "—" if best_x is None else f"{best_x:,.0f}", final_text,
        ])  # fmt: skip
    anchors = "".join(f"\n- {a}." for a in MARIO_ANCHORS)
    return _rows(header, rows) + f"\nPublished anchors for World 1-1 (agent steps, frame skip 4):\n{anchors}\n"


def wilson_interval(rate: float, episodes: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval (95 % at z 1.96) of a success rate measured over ``episodes`` trials: how far
    the true flag rate may lie from 8 of 10 (0.49-0.94), where the normal approximation would leave [0, 1]."""
    n = float(episodes)
    centre = (rate + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * (rate * (1 - rate) / n + z * z / (4 * n * n)) ** 0.5
    return max(0.0, centre - half), min(1.0, centre + half)


def mario_repress_jump(data: list[Json]) -> str:
    """``benchmarks/mario_repress_jump.py`` (mario_repress_jump.json): each trained policy scored over the same
    greedy episodes with env.options.repress_jump off and on: the flag rate and where each episode ended."""
    (d,) = data
    header = ["run", "checkpoint (version)", "seed", "repress_jump", "flag rate", "x-position of each episode"]
    rows = []
    for e in d["evaluations"]:
        rows.append([
            f"`{e['run']}`", f"{e['checkpoint']} ({_int(e['policy_version'])})", str(e["seed"]),
            "on" if e["repress_jump"] else "off", f"{sum(e['flag_get']):.0f} of {e['episodes']}",
            ", ".join(f"{x:,.0f}" for x in e["x_pos"]),
        ])  # fmt: skip
    return _rows(header, rows)


def _settings(overrides: list[str]) -> dict[str, str]:
    """``key=value`` overrides as a dict (``stop.*`` left out: a trial's budget is not a recipe change)."""
    pairs = (o.split("=", 1) for o in overrides if "=" in o and not o.startswith("stop."))
    return {key.lstrip("+~"): value for key, value in pairs}


def _base_variant(trial: list[str], variants: dict[str, list[str]]) -> str | None:
    """The learning run's variant a trial changes: of those whose every key the trial also sets, the one whose
    values the trial keeps most of, then the one that sets most keys (``stall_steps=300`` with ``flag_stall``'s other
    settings changes ``flag_stall``'s 150; it is not a variant without a stall plus a stall). A variant with the
    trial's very settings is left out: the trial changes nothing of it (a long run made of a trial that did well is
    that trial again, not its base). Two variants still level are an error: the trial does not say which it
    changes."""
    mine = _settings(trial)
    near: dict[str, tuple[int, int]] = {}
    for name, overrides in variants.items():
        theirs = _settings(overrides)
        if set(theirs) <= set(mine) and theirs != mine:
            near[name] = (sum(mine[key] == value for key, value in theirs.items()), len(theirs))
    if not near:
        return None
    best = max(near.values())
    tied = [name for name, score in near.items() if score == best]
    if len(tied) > 1:
        raise ValueError(f"a trial ({' '.join(trial)}) is equally near the variants {tied}: name the base's settings")
    return tied[0]


def _x_at(run: Json, steps: float) -> str:
    """The last periodic greedy evaluation at or before ``steps`` agent steps: flag rate, mean x-position."""
    before = [e for e in run.get("eval_extras") or [] if e[1] <= steps]
    if not before or not {"flag_get", "x_pos"} <= set(before[-1][2]):
        return "—"
    _, at_steps, extras = before[-1]
    return f"{extras['flag_get']:.1f}, {extras['x_pos']:,.0f} (at {_int(at_steps)})"


def _per_seed(cells: list[tuple[int, str]]) -> str:
    return "; ".join(f"seed {seed}: {text}" for seed, text in cells) or "—"


def mario_trials(data: list[Json]) -> str:
    """Recipe changes tried on mario_dqn (mario_recipe_trials.json), each a short run set beside the learning
    table's runs (mario_learning.json) of the variant it changes, at the same agent steps: the training return (the
    recent episodes, exploring) per seed and as a ratio to their median, and the greedy evaluation (10 episodes;
    the trial's is its final one, fresh; the base's the last periodic one at or before the trial's steps)."""
    trials, table = data
    frame_skip = 4  # the mario env's frame skip: agent steps x 4 = frames
    header = ["trial", "changes", "of", "agent steps (time)", "training return: trial", "training return: base",
              "trial ÷ base (median)", "greedy flag rate, x: trial (final)", "greedy flag rate, x: base (last before)",
              "frames/s: trial", "frames/s: base"]  # fmt: skip
    rows = []
    for run in trials["runs"]:
        overrides = trials["variants"][run["variant"]]
        base = _base_variant(overrides, table["variants"])
        kept = _settings(table["variants"].get(base) or [])
        changed = [f"`{key}={value}`" for key, value in _settings(overrides).items() if kept.get(key) != value]
        named = [f"`{run['variant']}`", ", ".join(changed) or "—", f"`{base}`" if base else "—"]
        if not run["ok"]:
            rows.append([*named, "failed", *["—"] * 7])
            continue
        bases = sorted((r for r in table["runs"] if r["ok"] and r["variant"] == base), key=lambda r: r["seed"])
        steps = run["env_steps"]
        mine = _at_frames(run.get("train_curve") or [], steps * frame_skip)
        theirs = [(b["seed"], _at_frames(b.get("train_curve") or [], steps * frame_skip)) for b in bases]
        known = [t for _, t in theirs if t is not None]
        median = statistics.median(known) if known else None
        final = run.get("final_eval_extras") or {}
        fps = fps_cells([(run.get("env_frames_per_s") or 0, run_cpu(run, trials))]
                        + [(b.get("env_frames_per_s") or 0, run_cpu(b, table)) for b in bases])  # fmt: skip
        rows.append([
            *named, f"{_int(steps)} ({_hm(run['train_seconds'])})", "—" if mine is None else _ret(mine),
            _per_seed([(seed, "—" if t is None else _ret(t)) for seed, t in theirs]),
            "—" if mine is None or not median else _ratio(mine / median),
            f"{final['flag_get']:.1f}, {final['x_pos']:,.0f}" if {"flag_get", "x_pos"} <= set(final) else "—",
            _per_seed([(b["seed"], _x_at(b, steps)) for b in bases]), fps[0],
            _per_seed([(b["seed"], cell) for b, cell in zip(bases, fps[1:], strict=True)]),
        ])  # fmt: skip
    return _rows(header, rows)

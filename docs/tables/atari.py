"""The tables of the image workloads: a CNN's inference on the CPU, the frame path stage by stage, and Pong
against Sample Factory and RLlib."""

from __future__ import annotations

from .format import Json, _int, _pct, _ratio, _ret, _rows, _sentence, _sig, fps_cells, run_cpu

INFERENCE_LABELS = {
    "fp32": "fp32 (ms)",
    "bf16": "bf16 copy",
    "autocast_bf16": "bf16 autocast",
    "channels_last": "channels-last",
    "channels_last_weights": "channels-last weights",
    "bf16_channels_last": "bf16 + channels-last",
    "compile": "torch.compile",
    "int8_linear": "int8 Linear",
}
WORKLOAD_LABELS = {
    "pong": "Pong, Nature CNN",
    "coinrun": "CoinRun, Nature CNN",
    "coinrun_impala": "CoinRun, IMPALA CNN",
}


def cnn_inference(data: list[Json]) -> str:
    """benchmarks/cnn_inference.py: a rollout actor's act() per variant, ms and the ratio to fp32."""
    (d,) = data
    variants = list(next(iter(next(iter(d["results"].values()))["batches"].values()))["median_ms"])
    header = ["network", "batch", *(INFERENCE_LABELS.get(v, v) for v in variants)]
    rows = []
    for experiment, r in d["results"].items():
        for batch, b in r["batches"].items():
            cells = [f"{b['median_ms']['fp32']:.2f}"]
            cells += [f"{b['median_ms'][v]:.2f} ({_ratio(b['vs_fp32'][v])})" for v in variants[1:]]
            rows.append([f"{r['model']} `{experiment}`", batch, *cells])
    worst = max(
        (b["max_prob_diff"][v], v)
        for r in d["results"].values()
        for b in r["batches"].values()
        for v in ("bf16", "bf16_channels_last")
        if v in b["max_prob_diff"]
    )
    return (
        _rows(header, rows)
        + f"\n{_sentence(d['protocol'])}; torch {d['torch']}. The largest difference of an action's probability "
        f"from fp32's, bf16 variants: {worst[0]:.4f}.\n"
    )


def frame_path(data: list[Json]) -> str:
    """benchmarks/frame_path.py: env only, env + inference in one process, W rollout actors; fp32 and bf16."""
    (d,) = data
    header = ["workload", "stage", "fp32: frames/s", "bf16: frames/s", "bf16 / fp32", "full path / (W × in process)"]
    rows = []
    for name, r in d["results"].items():
        med = r["median_frames_per_s"]
        label = WORKLOAD_LABELS.get(name, name) + f", {r['envs_per_worker']} envs"
        rows.append([label, "env only (one core's limit)", _int(med["env_only"]), "—", "—", "—"])
        rows.append([label, "env + inference, one process", _int(med["in_process/fp32"]),
                     _int(med["in_process/bf16"]), _ratio(r["bf16_over_fp32"]["in_process"]), "—"])  # fmt: skip
        for w in d["workers"]:
            key = f"{w}_workers"
            rows.append([
                label, f"{w} rollout actor{'s' if w > 1 else ''} on Ray", _int(med[f"{key}/fp32"]),
                _int(med[f"{key}/bf16"]), _ratio(r["bf16_over_fp32"][key]),
                f"fp32 {_pct(r['full_over_in_process'][key + '/fp32'])}, bf16 "
                f"{_pct(r['full_over_in_process'][key + '/bf16'])}",
            ])  # fmt: skip
    return _rows(header, rows) + f"\n{_sentence(d['protocol'])}.\n"


def frame_path_ab(data: list[Json]) -> str:
    """benchmarks/frame_path_ab.py: the frame path of two commits, alternating: each stage's median frames/s per
    commit and new / old, with every run's figure."""
    (d,) = data
    old, new = (d["sources"][k]["commit"] or k for k in ("old", "new"))
    header = ["workload", "stage", f"before ({old}): frames/s", f"after ({new}): frames/s", "after / before",
              "before, per run", "after, per run"]  # fmt: skip
    stages = {"env_only": "env only", "in_process": "env + inference, one process"}
    rows = []
    for name, r in d["results"].items():
        label = WORKLOAD_LABELS.get(name, name)
        frames = r["frame_skip"]
        for key, m in r["measurements"].items():
            stage, _, precision = key.partition("/")
            if stage.endswith("_workers"):
                w = int(stage.split("_")[0])
                stage_text = f"{w} rollout actor{'s' if w > 1 else ''} on Ray"
            else:
                stage_text = stages.get(stage, stage)
            rows.append([
                label, stage_text + (f", {precision} rollouts" if precision else ""),
                _int(m["old_median_frames_per_s"]), _int(m["new_median_frames_per_s"]), _ratio(m["new_over_old"]),
                ", ".join(_int(v * frames) for v in m["old_agent_steps_per_s"]),
                ", ".join(_int(v * frames) for v in m["new_agent_steps_per_s"]),
            ])  # fmt: skip
    return _rows(header, rows) + f"\n{_sentence(d['protocol'])}.\n"


def atari_vs_peers(data: list[Json]) -> str:
    """benchmarks/atari_vs_peers.py: Pong (or CoinRun) frames/s, CPU per 1,000 frames by role, peak memory per
    framework."""
    (d,) = data
    names = {"raylab": "raylab APPO (`breakout_appo` then: fp32, 2 epochs)", "sf": "Sample Factory 2.1.1 APPO",
             "rllib": "RLlib PPO", "raylab_bf16": "raylab APPO (`pong_appo` then: bf16, 2 epochs)"}  # fmt: skip
    if d.get("game") == "coinrun":
        names.update(
            raylab="raylab APPO (`coinrun_appo`)", sf="Sample Factory 2.1.1 APPO (its EnvPool example on CoinRun)"
        )
    mine = [r for r in ("raylab", "raylab_bf16") if f"{r}_over" in d]
    header = ["framework", "env frames/s", *(f"{names[r].split(' (')[0]} {'bf16 ' if r.endswith('bf16') else ''}/ it"
              for r in mine), "CPU ms per 1k frames: rollout workers", "separate inference", "learner", "the rest",
              "total", "peak memory (PSS, MB)"]  # fmt: skip
    rows = []
    for f, fps in d["median_frames_per_s"].items():
        cpu = d["median_cpu_ms_per_1k_frames"][f]
        rest = sum(v for k, v in cpu.items() if k not in ("rollout", "inference", "learner"))
        rows.append([
            names.get(f, f), _int(fps), *(_ratio(d[f"{r}_over"][f]) if f in d[f"{r}_over"] else "—" for r in mine),
            *(_sig(cpu[r]) if r in cpu else "—" for r in ("rollout", "inference", "learner")), _sig(rest),
            _sig(sum(cpu.values())), _int(d["median_peak_pss_mb"][f]),
        ])  # fmt: skip
    return (
        _rows(header, rows)
        + f"\n{_sentence(d['protocol'])}. The rest: the driver, evaluation, Ray's own processes. "
        + (
            "RLlib's learner runs in its driver process (its default, no separate learner), "
            if "rllib" in d["median_frames_per_s"]
            else ""
        )
        + "Sample Factory's inference in its own worker.\n"
    )


def pong_learning(data: list[Json]) -> str:
    """benchmarks/pong_learning.py: each run's time and frames to a greedy 18 on Pong, and where it ended."""
    (d,) = data
    r = d["results"]
    names = {"raylab": f"raylab `{r['experiment']}`", "sf": "Sample Factory 2.1.1 (its Atari example)"}
    header = ["run", "budget", "greedy >= 18 at", "frames then", "best greedy (10 games)", "final greedy",
              "frames in the run", "frames/s", "training return at the end"]  # fmt: skip
    rows = []
    for run in r["runs"]:
        curve = run.get("curve") or []
        if run["framework"] == "raylab":
            at = f"{run['seconds_to_target'] / 60:.1f} min" if run["reached"] else "not reached"
            frames_then = f"{run['frames_to_target'] / 1e6:.2f} M" if run["reached"] else "—"
            best = "—" if run.get("best_greedy_return") is None else f"{run['best_greedy_return']:.1f}"
        else:  # no greedy evaluation during its training: its training return's first 18, and no best
            at = (f"{run['seconds_to_training_target'] / 60:.1f} min (training return)"
                  if run["reached_in_training"] else "not reached (training return)")  # fmt: skip
            frames_then = (f"{run['frames_to_training_target'] / 1e6:.2f} M"
                           if run["reached_in_training"] else "—")  # fmt: skip
            best = "—"
        final = run.get("final_greedy_return")
        final_text = "—" if final is None else f"{final:.1f} ({run.get('final_greedy_games')} games)"
        rows.append([
            f"{names[run['framework']]}, seed {run['seed']}", f"{run['cap_s'] / 60:.0f} min", at, frames_then, best,
            final_text, f"{(run.get('frames') or 0) / 1e6:.2f} M",
            "—" if run.get("frames_per_s") is None else _int(run["frames_per_s"]),
            f"{curve[-1][2]:.1f}" if curve else "—",
        ])  # fmt: skip
    return _rows(header, rows) + f"\n{_sentence(d['protocol'].split(chr(10) + chr(10))[0])}\n"


def autosize_sweep(data: list[Json]) -> str:
    """benchmarks/autosize_sweep.py: the workers auto chose, against a sweep of worker counts."""
    (d,) = data
    workers = sorted({int(w) for r in d["results"].values() for w in r["median_frames_per_s"]})
    first = any("first_rule" in r for r in d["results"].values())
    header = ["workload", *(f"W={w}: frames/s" for w in workers), "sweep's best", "auto chose", "auto / best",
              *(["first rule (no spare): chose, / best"] if first else []),
              "what the probe measured (per env step, one core)", "probe"]  # fmt: skip
    rows = []
    for name, r in d["results"].items():
        p = r["probe"]
        med = r["median_frames_per_s"]
        measured = "—"
        if p.get("rollout_s_per_step") is not None:
            measured = (f"rollout {p['rollout_s_per_step'] * 1e3:.3f} ms, learner {p['learner_s_per_step'] * 1e3:.3f}"
                        f" ms, {p['cpus']} cpus")  # fmt: skip
        elif p.get("reason"):
            measured = p["reason"]
        rows.append([
            f"`{name}`", *(_int(med[str(w)]) if str(w) in med else "—" for w in workers), str(r["sweep_best_workers"]),
            str(r["auto_workers"]), _pct(r["auto_over_best"]) if r["auto_over_best"] is not None else "—",
            *([f"{r['first_rule']['auto_workers']}, {_pct(r['first_rule']['auto_over_best'])}"
               if "first_rule" in r else "—"] if first else []),
            measured, f"{p['wall_s']:.0f} s",
        ])  # fmt: skip
    rounds = ", ".join(f"`{n}` {r.get('rounds', '?')}" for n, r in d["results"].items())
    return (
        _rows(header, rows) + "\nFrames/s: Pong's env frames (4 per agent step), CartPole's env steps, over each run "
        f"after its first seconds; medians over rounds ({rounds}). How it was run: {d['command']}.\n"
    )


def transport_dedup(data: list[Json]) -> str:
    """benchmarks/transport_dedup.py: a Pong chunk's bytes and CPU per chunk, plain and with frames sent once."""
    (d,) = data
    med, size = d["median_cpu_ms_per_chunk"], d["bytes_per_chunk"]
    header = ["transport", "bytes per chunk", "sender CPU ms per chunk", "receiver CPU ms per chunk", "both"]
    names = {"plain": "the stacks as they are", "dedup": "each frame once (frames + ids)"}
    rows = [
        [names[v], f"{size[v] / 2**20:.2f} MiB", _sig(med[f"{v}/send"]), _sig(med[f"{v}/receive"]),
         _sig(med[f"{v}/send"] + med[f"{v}/receive"])]
        for v in ("plain", "dedup")
    ]  # fmt: skip
    extra = d["extra_cpu_ms_per_chunk"]
    link = d["link_ms_saved_per_chunk"]
    return (
        _rows(header, rows) + f"\n{_sentence(d['protocol'])}. Each frame once: {_ratio(d['bytes_ratio'])} fewer bytes "
        f"({_pct(d['stacks_sent_whole_share'])} of the stacks sent whole, after a reset), for "
        f"{_sig(extra['send'] + extra['receive'])} ms more CPU per chunk of {d['agent_steps_per_chunk']:,} agent "
        f"steps; the bytes it saves would take {_sig(link['1_gbit'])} ms on a 1 Gb/s link and "
        f"{_sig(link['10_gbit'])} ms on a 10 Gb/s link.\n"
    )


CLEANRL_PPO_ATARI = {
    "Pong": ("20.45 ± 0.09", "20.36 ± 0.20", "20.39 ± 0.24", 20.45),
    "BeamRider": ("2,501.85 ± 210.52", "1,915.93 ± 484.58", "2,478.44 ± 336.55", 2501.85),
    "Breakout": ("211.24 ± 151.84", "414.66 ± 28.09", "430.09 ± 8.12", 211.24),
    "SpaceInvaders": ("—", "—", "1,188.82 ± 80.52", 1188.82),
    "Qbert": ("—", "—", "17,246.27 ± 605.40", 17246.27),
}
"""CleanRL's PPO documentation (https://docs.cleanrl.dev/rl-algorithms/ppo/, all at 10M agent steps, 40M frames,
mean ± std over seeds): ppo_atari_envpool.py's figure, ppo_atari.py's, ppo_atari_envpool_xla_jax.py's (the same
EnvPool protocol and settings in JAX, without value-loss clipping: its 57-game table), and the reference the goal
is judged against: ppo_atari_envpool.py's mean, or the JAX script's where the PyTorch one has no figure."""


def atari_table(data: list[Json]) -> str:
    """``make bench-atari-table`` (atari_table.json): per game, raylab's greedy score (10 whole games, raw reward)
    and training score (the last 100 whole games, sampled actions) at its budget, the frames, wall time and
    frames/s, beside CleanRL's PPO at 40M frames and raylab's greedy score as a share of CleanRL's envpool one."""
    (d,) = data
    header = [
        "game", "raylab greedy (10 games)", "raylab training (last 100 games)", "frames", "wall time",
        "frames/s", "CleanRL `ppo_atari_envpool`, 40M frames", "CleanRL `ppo_atari`, 40M frames",
        "CleanRL `ppo_atari_envpool_xla_jax`, 40M frames", "greedy ÷ CleanRL envpool",
    ]  # fmt: skip
    rows = []
    for run in sorted((r for r in d["runs"] if r["ok"]), key=lambda r: r["variant"]):
        game = run["variant"]
        envpool, gym_figure, jax_figure, mean = CLEANRL_PPO_ATARI.get(game, ("—", "—", "—", None))
        greedy = f"{_ret(run['final_eval_return'])} ± {_ret(run['final_eval_std'])}"
        train = run.get("final_train_return")
        frames = run["env_steps"] * 4  # frame skip 4: atari_appo's env
        rows.append([
            game, greedy, "—" if train is None else _ret(train), f"{frames / 1e6:.2f}M",
            f"{run['train_seconds'] / 60:.0f} min", _int(run.get("env_frames_per_s") or frames / run["train_seconds"]),
            envpool, gym_figure, jax_figure,
            "—" if mean is None else _pct(run["final_eval_return"] / mean) + ("" if envpool != "—" else " (JAX's)"),
        ])  # fmt: skip
    missing = [name for name in d["variants"] if not any(r["variant"] == name and r["ok"] for r in d["runs"])]
    note = f"\nNot run to its budget yet: {', '.join(missing)}.\n" if missing else ""
    return _rows(header, rows) + note


def _at_frames(curve: list[list[float]], frames: float) -> float | None:
    """The training return (the recent whole games) at the last point of ``curve`` (time, steps, frames, return)
    at or before ``frames``."""
    before = [point[3] for point in curve if point[2] <= frames]
    return before[-1] if before else None


def _budget(run: Json) -> str | None:
    """The step budget a run stopped at (``stop.env_steps=2500000``), None for a run stopped by anything else."""
    clause = str(run.get("stop_reason") or "").rpartition(">= ")[2]
    return clause if clause.startswith("stop.env_steps=") else None


def _greedy_at(run: Json, trial: Json) -> float | None:
    """The last greedy evaluation of ``run`` by the agent steps ``trial`` reached: ``run``'s final one (10 whole
    games at its end) when the trial got there too (as many steps, or stopped by the same budget: the last
    rollout may overshoot it by a different amount), else its last periodic one (time, steps, return, ...)."""
    budget = _budget(run)
    reached = run["env_steps"] <= trial["env_steps"] or (budget is not None and budget == _budget(trial))
    if reached and run.get("final_eval_return") is not None:
        return run["final_eval_return"]
    before = [e[2] for e in run.get("evals") or [] if e[1] <= trial["env_steps"]]
    return before[-1] if before else None


def atari_trials(data: list[Json]) -> str:
    """Settings tried against the Atari recipe (a learn JSON of trials), each run on one game for a short
    budget and set beside the recipe's own run of that game at the same frames (the second JSON: the table of
    the recipe they were tried against): the training return there (the recent whole games, sampled actions)
    and the recipe's last greedy evaluation by then (10 whole games; its final one for a trial run to its end)."""
    trials, table = data
    recipe = {r["variant"]: r for r in table["runs"] if r["ok"]}
    header = [
        "trial", "game", "changed", "frames", "training: trial", "training: recipe", "trial ÷ recipe",
        "greedy: trial (final)", "greedy: recipe (last by then)", "frames/s: trial", "frames/s: recipe",
    ]  # fmt: skip
    rows = []
    for run in (r for r in trials["runs"] if r["ok"]):
        overrides = trials["variants"][run["variant"]]
        game = next(o.split("=", 1)[1].removesuffix("-v5") for o in overrides if o.startswith("env.id="))
        changed = ", ".join(f"`{o}`" for o in overrides if not o.startswith(("env.id=", "stop.")))  # stop: frames
        base = recipe.get(game)
        frames = run["env_steps"] * 4  # frame skip 4: atari_appo's env
        mine = _at_frames(run.get("train_curve") or [], frames)
        theirs = _at_frames(base.get("train_curve") or [], frames) if base else None
        greedy = run["final_eval_return"]
        base_greedy = _greedy_at(base, run) if base else None
        fps = fps_cells([(run["env_frames_per_s"], run_cpu(run, trials))]
                        + ([(base["env_frames_per_s"], run_cpu(base, table))] if base else []))  # fmt: skip
        rows.append([
            run["variant"], game, changed, f"{frames / 1e6:.2f}M", "—" if mine is None else _ret(mine),
            "—" if theirs is None else _ret(theirs),
            "—" if mine is None or theirs is None or theirs <= 0 else _ratio(mine / theirs),
            "—" if greedy is None else _ret(greedy), "—" if base_greedy is None else _ret(base_greedy),
            fps[0], fps[1] if base else "—",
        ])  # fmt: skip
    return _rows(header, rows)


def _machine(run: Json, report: Json) -> str:
    """Where a learn table's run trained: its GPU (or none), cores and rollout actors."""
    m = run.get("recorded") or report.get("machine") or {}
    workers = (run.get("config") or {}).get("topology", {}).get("num_workers", "?")  # the run's resolved settings
    return f"{m.get('cuda') or 'no GPU'}, {m.get('cores', '?')} cores, {workers} actors"


def atari_machines(data: list[Json]) -> str:
    """The Atari recipe on a larger machine (the machine's settings only: actors, the learner's device, precision
    and compile), set beside the Atari table's run of each game (the last JSON): the frames and wall time each
    reached, its frames/s, the greedy score at its end (10 whole games) and by 10M frames (its final one for a
    run stopped by the 10M-frame budget, else its last periodic one by then), the training return at 10M
    frames (the recent whole games, sampled actions), and CleanRL's figure at 40M frames."""
    *larger, table = data
    base = {r["variant"]: r for r in table["runs"] if r["ok"]}
    ten_m = 2_500_000  # agent steps: 10M frames at frame skip 4
    header = [
        "game", "machine", "frames", "training time", "frames/s", "greedy at the end", "greedy by 10M frames",
        "training return at 10M frames", "CleanRL at 40M frames", "greedy at the end ÷ CleanRL",
    ]  # fmt: skip
    rows = []
    for report in larger:
        for run in (r for r in report["runs"] if r["ok"]):
            overrides = report["variants"][run["variant"]]
            game = next(o.split("=", 1)[1].removesuffix("-v5") for o in overrides if o.startswith("env.id="))
            envpool, _, jax_figure, mean = CLEANRL_PPO_ATARI.get(game, ("—", "—", "—", None))
            for r, rep in ((base.get(game), table), (run, report)):
                if r is None:
                    continue
                by_10m = _greedy_at(r, {"env_steps": ten_m, "stop_reason": "stop.env_steps=2500000"})
                train = _at_frames(r.get("train_curve") or [], 4 * ten_m)
                rows.append([
                    game, _machine(r, rep), f"{4 * r['env_steps'] / 1e6:.1f}M", f"{r['train_seconds'] / 60:.1f} min",
                    _int(r["env_frames_per_s"]), f"{_ret(r['final_eval_return'])} ± {_ret(r['final_eval_std'])}",
                    "—" if by_10m is None else _ret(by_10m), "—" if train is None else _ret(train),
                    envpool if envpool != "—" else f"{jax_figure} (JAX)",
                    "—" if mean is None else _pct(r["final_eval_return"] / mean),
                ])  # fmt: skip
    return _rows(header, rows)


def atari_seeds(data: list[Json]) -> str:
    """More seeds of the Atari table's games (learn JSONs of the same recipe and budget, after the table's own):
    per game, every seed's final greedy score (10 whole games) and training return (the recent whole games,
    sampled actions; "—" for a run that recorded none, left out of the mean), the means over the seeds, and the
    greedy mean as a share of CleanRL's 40M-frame figure (the JAX script's where the PyTorch one has none). Each
    seed's CPU is named: the recipe's precision comes from the machine (bf16 where the CPU computes it natively)."""
    runs: dict[str, list[Json]] = {}
    for report in data:
        for run in (r for r in report["runs"] if r["ok"]):
            runs.setdefault(run["variant"], []).append({**run, "cpu": run_cpu(run, report)})
    header = ["game", "seeds", "CPU per seed", "greedy per seed (10 games each)", "greedy: mean", "training per seed",
              "training: mean", "CleanRL at 40M frames", "greedy mean ÷ CleanRL"]  # fmt: skip
    rows = []
    for game, group in sorted(runs.items()):
        if len(group) < 2:
            continue  # the table's own row says it
        group.sort(key=lambda r: r["seed"])
        greedy = [r["final_eval_return"] for r in group]
        train = [r.get("final_train_return") for r in group]  # None where a run recorded none: "—" in its place
        known = [t for t in train if t is not None]
        envpool, _, jax_figure, mean = CLEANRL_PPO_ATARI.get(game, ("—", "—", "—", None))
        rows.append([
            game, ", ".join(str(r["seed"]) for r in group), ", ".join(r["cpu"] for r in group),
            ", ".join(f"{_ret(r['final_eval_return'])} ± {_ret(r['final_eval_std'])}" for r in group),
            _ret(sum(greedy) / len(greedy)), ", ".join("—" if t is None else _ret(t) for t in train),
            _ret(sum(known) / len(known)) if known else "—", envpool if envpool != "—" else f"{jax_figure} (JAX)",
            "—" if mean is None else _pct(sum(greedy) / len(greedy) / mean),
        ])  # fmt: skip
    return _rows(header, rows)


ATARI_TIME_LIMIT = 27_000
"""Agent steps a game may last when env.max_episode_steps is null (raylab/envs/atari.py): 108,000 frames."""


def _timed_out(run: Json) -> str:
    """How many of a run's final greedy games ran to the game's time limit (a policy waiting on a screen: the
    Learning page's lost-life wait), "not kept" for a record from before the games' lengths were kept."""
    games = run.get("final_eval_games")
    if not games:
        return "not kept"
    limit = ((run.get("config") or {}).get("env") or {}).get("max_episode_steps") or ATARI_TIME_LIMIT
    return f"{sum(1 for _, steps in games if steps >= limit)} of {len(games)}"


def atari_recipe_change(data: list[Json], before: str, after: str) -> str:
    """Two runs of the Atari table, the recipe before and after one change (each a learn JSON of the same games):
    per game, the training return at the frames both runs reached (the recent whole games, sampled actions), the
    final greedy score (10 whole games), the wall time and the frames/s of each (with its CPU when the two runs
    trained on different ones); and where either JSON kept its final games' lengths, how many of those games ran
    to the time limit."""
    old, new = data
    earlier = {r["variant"]: r for r in old["runs"] if r["ok"]}
    lengths = any(r.get("final_eval_games") for d in data for r in d["runs"] if r["ok"])
    header = [
        "game", "frames", f"training: {before}", f"training: {after}", f"{after} ÷ {before}",
        f"greedy: {before}", f"greedy: {after}", f"wall time: {before}", f"wall time: {after}",
        f"frames/s: {before}", f"frames/s: {after}",
    ] + ([f"greedy games to the time limit: {before}", f"… {after}"] if lengths else [])  # fmt: skip
    rows = []
    for run in sorted((r for r in new["runs"] if r["ok"]), key=lambda r: r["variant"]):
        base = earlier.get(run["variant"])
        if base is None:
            continue
        frames = min(run["env_steps"], base["env_steps"]) * 4  # frame skip 4: atari_appo's env
        mine = _at_frames(run.get("train_curve") or [], frames)
        theirs = _at_frames(base.get("train_curve") or [], frames)
        rows.append([
            run["variant"], f"{frames / 1e6:.2f}M", "—" if theirs is None else _ret(theirs),
            "—" if mine is None else _ret(mine),
            "—" if mine is None or theirs is None or theirs <= 0 else _ratio(mine / theirs),  # Pong's start below 0
            f"{_ret(base['final_eval_return'])} ± {_ret(base['final_eval_std'])}",
            f"{_ret(run['final_eval_return'])} ± {_ret(run['final_eval_std'])}",
            f"{base['train_seconds'] / 60:.0f} min", f"{run['train_seconds'] / 60:.0f} min",
            *fps_cells([(base["env_frames_per_s"], run_cpu(base, old)), (run["env_frames_per_s"], run_cpu(run, new))]),
            *([_timed_out(base), _timed_out(run)] if lengths else []),
        ])  # fmt: skip
    missing = sorted(name for name in earlier if not any(r["variant"] == name and r["ok"] for r in new["runs"]))
    unmatched = sorted(r["variant"] for r in new["runs"] if r["ok"] and r["variant"] not in earlier)
    note = f"\nNot run again yet: {', '.join(missing)}.\n" if missing else ""
    note += f"\nNot in the earlier table: {', '.join(unmatched)}.\n" if unmatched else ""
    return _rows(header, rows) + note


def pong_recipe_change(data: list[Json], before: str, after: str) -> str:
    """Pong timed to a greedy 18 (confirmed over 30 games) before and after one change to the recipe: the earlier
    run from benchmarks/pong_learning.py's JSON (raylab's runs), the later from a learn JSON of ``+experiment=
    pong_appo`` with the change; per run, the time and frames to 18, that evaluation's score, the greedy
    evaluations on the way, the frames/s (with the CPU when they differ) and the optimizer steps a second."""
    old, new = data
    rows: list[tuple[str, int, float | None, float | None, float | None, list[float], float, str, float]] = []
    for run in (r for r in old["results"]["runs"] if r["framework"] == "raylab"):
        hit = next((e for e in run["evals"] if e[2] >= old["results"]["target"]), None)
        rows.append((before, run["seed"], run["seconds_to_target"] if run["reached"] else None,
                     run["frames_to_target"] if run["reached"] else None, hit[2] if hit else None,
                     [e[2] for e in run["evals"]], run["frames_per_s"], run_cpu({}, old),
                     run["updates"] / run["train_s"]))  # fmt: skip
    for run in (r for r in new["runs"] if r["ok"]):
        hit = next((e for e in run["evals"] if e[2] >= run["target"]), None) if run["reached"] else None
        rows.append((after, run["seed"], run["target_hit_seconds"], None if hit is None else 4 * hit[1],
                     hit[2] if hit else None, [e[2] for e in run["evals"]], run["env_frames_per_s"],
                     run_cpu(run, new), run["updates_per_s"]))  # fmt: skip
    header = ["recipe", "seed", "greedy >= 18 at", "frames then", "that evaluation (30 games)",
              "greedy evaluations (10 games; the last with the 20 that confirm it)", "frames/s",
              "optimizer steps/s"]  # fmt: skip
    fps = fps_cells([(row[6], row[7]) for row in rows])
    return _rows(header, [
        [name, str(seed), "not reached" if at is None else f"{at / 60:.1f} min",
         "—" if frames is None else f"{frames / 1e6:.2f}M", "—" if score is None else _ret(score),
         ", ".join(str(round(e)) for e in evals), fps[i], f"{steps:.1f}"]
        for i, (name, seed, at, frames, score, evals, _, _, steps) in enumerate(rows)
    ])  # fmt: skip


RESET_LABELS = {"envpool": "EnvPool's FIRE (the recipe)", "baselines": "FIRE, then action 2 (`reset_actions=[2]`)"}


def atari_life_restart(data: list[Json]) -> str:
    """benchmarks/atari_life_restart.py: per game and reset, the agent step of the first lost life (random play),
    the actions that leave the game waiting after it (to the time limit, or past the patience), and for each action
    the agent steps until the game went on: a reward, another lost life or the game's end; "waits to the time
    limit (N)" where the game stood until its 27,000-step limit came N steps later; and a game played NOOP from its
    start: its first lost life, the rewarded steps before it, and what NOOP did after it."""
    (d,) = data

    def cell(r: Json) -> str:
        if r["outcome"] == "time limit":
            return f"waits to the time limit ({r['steps']:,})"
        return f"waits ≥ {r['steps']:,}" if r["outcome"] == "waits" else f"{r['steps']:,} ({r['outcome']})"

    def noop_cell(r: Json) -> str:
        if r["first_lost_life"] is None:
            return "no life lost before the game's end"
        return f"{r['first_lost_life']:,}, {r['rewards_before']:.0f}, {cell(r)}"

    header = ["game", "after a reset", "first lost life (agent step)", "actions that wait",
              "agent steps until the game goes on, action 0, 1, …",
              "NOOP from the start: first lost life, rewarded steps before it, then"]  # fmt: skip
    rows = []
    for g in d["games"]:
        waiting = ", ".join(str(a) for a in g["waiting_actions"]) or "none"
        rows.append([
            g["game"], RESET_LABELS.get(g["variant"], g["variant"]), str(g["rows"][0]["first_lost_life"]),
            f"{waiting} (of {g['actions']})", "; ".join(cell(r) for r in g["rows"]), noop_cell(g["noop_from_start"]),
        ])  # fmt: skip
    return _rows(header, rows)

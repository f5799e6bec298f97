"""``learn``: wall time and env steps to a greedy-evaluation target, over seeds and variants.

    python -m raylab.bench learn --seeds 0 1 2 --output benchmarks/cartpole_dqn_learning.json \\
        --variant apex_dqn= --variant local=topology=local +experiment=cartpole_dqn

Every run is the real CLI (``python -m raylab.train``) in a fresh process, so ``process_seconds`` includes
Ray's start-up and the final evaluation while ``train_seconds`` counts from the moment every actor is up to
the stop. Variants alternate seed by seed so that machine noise spreads over all of them. The JSON records
the machine; the PNG plots each run's periodic greedy evaluations against training time.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from raylab.bench import plots
from raylab.bench.checks import output_file
from raylab.bench.machine import machine_info
from raylab.bench.same_settings import SettingsCheck, difference, refuse_or_move_aside, settings
from raylab.errors import ConfigError, RaylabError
from raylab.metrics.numbers import fmt_return


def add_parser(commands: Any) -> None:
    p = commands.add_parser("learn", help="time and env steps to a greedy-eval target, over seeds/variants")
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument(
        "--variant",
        action="append",
        default=[],
        metavar="NAME=OVERRIDES",
        help="a named set of extra overrides, space-separated (repeatable), e.g. local=topology=local",
    )
    p.add_argument(
        "--source",
        action="append",
        default=[],
        metavar="NAME=DIR",
        help="run variant NAME from the raylab source tree DIR (its PYTHONPATH), e.g. old=/tmp/raylab-83337f6: "
        "a before/after comparison of two commits in one alternating run",
    )
    p.add_argument("--output", type=output_file, required=True, help="JSON to write; the PNG goes next to it")
    p.add_argument("--runs-dir", default=None, help="where the runs' output dirs go (default: outputs/bench/<name>)")
    p.add_argument(
        "--random-episodes",
        type=int,
        default=0,
        help="also measure a uniformly random policy over this many episodes of each variant's env (the baseline "
        "a learning run is held to)",
    )
    p.add_argument(
        "--against-random",
        action="store_true",
        help="runs of several policies: after each run, score each policy against opponents that act uniformly at "
        "random (raylab.evaluate against_random=<the others>), the fair test of learning in a competitive game",
    )
    p.add_argument(
        "--reuse",
        action="store_true",
        help="read a run whose directory already holds a finished benchmark_metrics.json instead of running it "
        "again (e.g. after the baseline measurement of an earlier invocation failed); such runs keep the "
        "process_seconds --output recorded for them, and have none where it did not. A run whose directory is "
        "gone but which --output already records, finished, with the same overrides, is kept from there; so are "
        "the output's runs of variants this invocation does not name. A run read back must have run with the settings "
        "its overrides resolve to now (a recipe changed under the same overrides is run again: its directory moved "
        "aside with --restart-unfinished, refused without it); a variant of --source is not checked",
    )
    p.add_argument(
        "--restart-unfinished",
        action="store_true",
        help="with --reuse: a run an earlier invocation left unfinished (killed, or stopped by Ctrl-C or SIGTERM) "
        "is moved aside to "
        "<its dir>.unfinished-<time> and run again, so a long table resumes run by run; a finished one that ran "
        "with other settings than its overrides resolve to now, to <its dir>.other-settings-<time> (nothing is "
        "deleted)",
    )
    p.add_argument(
        "--resume-unfinished",
        action="store_true",
        help="with --reuse: as --restart-unfinished, except that a run an earlier invocation left unfinished "
        "(killed, or stopped by Ctrl-C or SIGTERM) continues from its newest checkpoint (raylab.train resume=<its "
        "dir>) when it wrote one (checkpoint.every_seconds) and ran with the settings its overrides resolve to now; "
        "its report then covers the whole run, and only the training after that checkpoint is done again. With "
        "--restart-unfinished too, that one wins",
    )
    p.set_defaults(func=run)


def parse_variant(text: str) -> tuple[str, list[str]]:
    name, _, overrides = text.partition("=")
    if not name:
        raise ConfigError(f"--variant needs NAME=OVERRIDES, got '{text}': e.g. --variant serial='topology=local'")
    return name, overrides.split()


def run(args: argparse.Namespace, overrides: list[str]) -> int:
    """One invocation: its table's runs dir held for the whole of it (_run)."""
    with contextlib.ExitStack() as guard:
        return _run(args, overrides, guard)


def _run(args: argparse.Namespace, overrides: list[str], guard: contextlib.ExitStack) -> int:
    from raylab.driver.outputs import check_not_in_use, check_not_under_a_file, hold_dir
    from raylab.train import check_overrides

    variants = [parse_variant(v) for v in args.variant] or [("default", [])]
    sources = dict(parse_source(s, [name for name, _ in variants]) for s in args.source)
    for _, extra in variants:  # every run's overrides, checked before the first run starts
        check_overrides([*overrides, *extra])
    output = Path(args.output)
    runs_dir = Path(args.runs_dir or Path("outputs") / "bench" / output.stem)
    names = [f"{name}_seed{seed}" for seed in args.seeds for name, _ in variants]
    resume_unfinished = args.resume_unfinished
    restart = args.restart_unfinished or resume_unfinished
    for flag, given in (("--restart-unfinished", args.restart_unfinished), ("--resume-unfinished", resume_unfinished)):
        if given and not args.reuse:
            raise ConfigError(f"{flag} goes with --reuse (finished runs read back): add --reuse")
    earlier = earlier_report(output, overrides) if args.reuse else {}  # refused before anything is changed
    planned = {(name, seed) for seed in args.seeds for name, _ in variants}
    # a finished run of another recipe is not this table's, though its overrides read the same (a variant run from
    # another tree with --source resolves its settings there, and is not checked)
    check = SettingsCheck({name: [*overrides, *extra] for name, extra in variants if name not in sources})
    stale = check.other_run_dirs(runs_dir, sorted(planned)) if args.reuse else {}
    # held until this invocation ends: a second one of the same table (the make target run twice) is refused before
    # it moves, continues or reads a run; and a run another command is training in one of its dirs now is left alone
    check_not_under_a_file(runs_dir, "--runs-dir")
    runs_dir.mkdir(parents=True, exist_ok=True)
    busy = "another bench learn is running this table's runs now: wait for it to end, or stop it, then run this again"
    guard.enter_context(hold_dir(runs_dir, f"{runs_dir} is in use: {busy} (nothing was changed)"))
    for name in names:
        check_not_in_use(runs_dir / name, "wait for it to end, or stop it, then run this again")
    refuse_or_move_aside(runs_dir, stale, restart)
    # --restart-unfinished wins: the way to start over a run that --resume-unfinished (the make target's) cannot resume
    resuming = resume_unfinished and not args.restart_unfinished
    resumable = resumable_runs(runs_dir, sorted(planned), check) if resuming else set()
    if restart:
        move_unfinished_aside(runs_dir, [name for name in names if name not in resumable])
    check_no_runs_over(runs_dir, [name for name in names if name not in resumable], args.reuse)
    gone = {key for key in planned if not finished(runs_dir / f"{key[0]}_seed{key[1]}")}
    recorded = {
        key: r for key, r in recorded_runs(earlier, dict(variants)).items() if f"{key[0]}_seed{key[1]}" not in stale
    }
    recorded = check.same_records(recorded, gone)  # a moved run's record went with it, unjudged
    kept = [r for key, r in recorded.items() if key not in planned]  # other variants' and other seeds' runs
    named = {name for name, _ in variants}
    kept_variants = {name: extra for name, extra in (earlier.get("variants") or {}).items() if name not in named}
    for r in kept:
        print(f"{r['variant']} seed {r['seed']}: kept from {output} (not run by this invocation)", flush=True)
    results: list[dict[str, Any]] = []
    for k, seed in enumerate(args.seeds):
        for name, extra in variants if k % 2 == 0 else variants[::-1]:  # who goes first alternates too
            run_dir = runs_dir / f"{name}_seed{seed}"
            from_output = False  # only its figures are left: no run directory to score again
            if args.reuse and finished(run_dir):
                result = same_run_timing(read_run(name, seed, run_dir, None), recorded.get((name, seed)))
            elif (name, seed) in recorded:  # its directory is gone (another machine, a cleaned tree)
                result, from_output = recorded[(name, seed)], True
                print(f"{name} seed {seed}: {run_dir} is gone; kept from {output}", flush=True)
            else:
                resume = run_dir.name in resumable
                result = run_one(name, [*overrides, *extra], seed, run_dir, sources.get(name), resume=resume)
                if resume and not result["ok"]:
                    print(
                        f"{run_dir}: the resume failed; to start it over instead, add --restart-unfinished", flush=True
                    )
            if args.against_random and not from_output and result["ok"] and result.get("policies"):
                result["against_random"] = against_random(
                    run_dir, list(result["policies"]), result["final_eval_episodes"]
                )
            results.append(result)
            print(_line(result), flush=True)
            # written after every run, so that a long table stopped part-way keeps what it finished
            write_report(
                make_report(args, overrides, variants, kept_variants, sources, [*kept, *results], earlier), output
            )
    random_policy = {
        name: random_policy_return(_env_config([*overrides, *extra]), args.random_episodes)
        for name, extra in variants
        if args.random_episodes > 0
    }
    report = make_report(args, overrides, variants, kept_variants, sources, [*kept, *results], earlier)
    report["random_policy"].update(random_policy)
    write_report(report, output)
    for name, summary in report["summary"].items():
        print(f"{name}: {json.dumps(summary)}")
    print(f"wrote {output} and {output.with_suffix('.png')}")
    return 0 if all(r["ok"] for r in results) else 1


def make_report(
    args: argparse.Namespace,
    overrides: list[str],
    variants: list[tuple[str, list[str]]],
    kept_variants: dict[str, list[str]],
    sources: dict[str, Path],
    results: list[dict[str, Any]],
    earlier: dict[str, Any],
) -> dict[str, Any]:
    """The JSON of a learn invocation: its settings, the machine, each variant's summary and every run so far;
    with the variants, random-policy baselines and sources an earlier invocation recorded and this one kept."""
    every = {**kept_variants, **dict(variants)}
    earlier_random = earlier.get("random_policy") or {}
    earlier_sources = earlier.get("sources") or {}
    return {
        "benchmark": "learn",
        "random_policy": {name: earlier_random[name] for name in every if name in earlier_random},
        "overrides": overrides,
        "variants": every,
        "sources": {
            **{name: earlier_sources[name] for name in kept_variants if name in earlier_sources},
            **{name: _describe(tree) for name, tree in sources.items()},
        },
        "seeds": sorted({*args.seeds, *(r["seed"] for r in results)}),
        "machine": machine_info(),
        "summary": {name: summarize([r for r in results if r["variant"] == name]) for name in every},
        "runs": results,
    }


def write_report(report: dict[str, Any], output: Path) -> None:
    output.parent.mkdir(parents=True, exist_ok=True)
    partial = output.with_name(output.name + ".partial")
    partial.write_text(json.dumps(report, indent=2) + "\n")
    partial.replace(output)  # whole or not at all: a stop mid-write leaves the last complete report
    plot(report, output.with_suffix(".png"))


def earlier_report(output: Path, overrides: list[str]) -> dict[str, Any]:
    """The learn table an earlier invocation wrote to ``output`` ({} when there is none); one made with other
    overrides is refused, since this invocation would write over it."""
    if not output.exists():
        return {}
    try:
        earlier = json.loads(output.read_text())
    except json.JSONDecodeError:
        raise ConfigError(f"{output} is not JSON, and --reuse would write over it: move it aside") from None
    if not isinstance(earlier, dict) or earlier.get("benchmark") != "learn":
        raise ConfigError(
            f"{output} is not a bench learn table, and --reuse would write over it: choose another --output"
        )
    if earlier.get("overrides") != overrides:
        raise ConfigError(
            f"{output} holds runs of other overrides ({' '.join(earlier.get('overrides') or []) or 'none'}), which "
            f"--reuse would write over: choose another --output, or move it aside (nothing was changed)"
        )
    return earlier


def recorded_runs(earlier: dict[str, Any], variants: dict[str, list[str]]) -> dict[tuple[str, int], dict[str, Any]]:
    """The finished runs of an earlier table, by (variant, seed): each of a variant whose own overrides are the
    same here, or that this invocation does not name (a variant named with other overrides is run anew)."""
    same = {name for name, extra in (earlier.get("variants") or {}).items() if variants.get(name, extra) == extra}
    machine = earlier.get("machine", {})
    return {
        (r["variant"], r["seed"]): {**r, "recorded": r.get("recorded") or machine}
        for r in earlier.get("runs", [])
        if r.get("ok") and r.get("variant") in same
    }


def same_run_timing(result: dict[str, Any], earlier: dict[str, Any] | None) -> dict[str, Any]:
    """A run read back from its directory keeps the process time and machine stamp that the output recorded for
    that same run (same steps and training time) when the invocation that ran it timed it: reading it back for the
    next game of a long table loses neither."""
    same = (
        earlier is not None
        and result.get("ok")
        and earlier.get("env_steps") == result.get("env_steps")
        and earlier.get("train_seconds") == result.get("train_seconds")
    )
    if not same:
        return result
    assert earlier is not None
    kept = {key: earlier[key] for key in ("process_seconds_last_part",) if key in earlier}
    return {**result, "process_seconds": earlier.get("process_seconds"), "recorded": earlier["recorded"], **kept}


def _env_config(overrides: list[str]) -> Any:
    import tempfile

    from raylab.config import resolve
    from raylab.train import compose

    return resolve(compose(overrides), run_dir=tempfile.mkdtemp(prefix="raylab-bench-learn-")).env


def random_policy_return(env_cfg: Any, episodes: int, seed: int = 123) -> dict[str, Any]:
    """Mean episode return (raw) of uniformly random actions on ``env_cfg`` (every agent slot of a multi-agent
    env), over the first ``episodes`` episodes to end in 4 envs."""
    import gymnasium as gym
    import numpy as np

    from raylab.envs.registry import make_vector_env

    venv = make_vector_env(env_cfg, 4, seed=seed)
    venv.reset()
    space = sampling_space(venv)
    rng = np.random.default_rng(seed)
    agents = list(getattr(venv, "agents", []))
    returns: list[float] = []
    by_agent: dict[str, list[float]] = {agent: [] for agent in agents}
    while len(returns) < episodes:
        if isinstance(space, gym.spaces.Discrete):
            actions = rng.integers(0, int(space.n), venv.num_envs)
        else:
            assert isinstance(space, gym.spaces.Box)
            actions = rng.uniform(space.low, space.high, (venv.num_envs, *space.shape)).astype(np.float32)
        for slot, record in venv.step(actions).episodes:
            if len(returns) < episodes:
                returns.append(record["return"])
                if agents:
                    by_agent[agents[slot % len(agents)]].append(record["return"])
    venv.close()
    values = np.array(returns)
    out: dict[str, Any] = {
        "episodes": episodes,
        "return_mean": round(float(values.mean()), 3),
        "return_std": round(float(values.std()), 3),
    }
    if agents:  # a multi-agent env: each agent's mean (a policy's random baseline is its agents')
        out["by_agent"] = {a: round(float(np.mean(r)), 3) for a, r in by_agent.items() if r}
    return out


def sampling_space(venv: Any) -> Any:
    """The action space to draw uniformly random actions from: the env's own bounds for a Box, which the shared
    stack's ClipAction (last wrapper, there for the Gaussian policy's unbounded samples) advertises as
    (-inf, inf)."""
    import gymnasium as gym
    import numpy as np

    space = venv.single_action_space
    if isinstance(space, gym.spaces.Box) and not (np.isfinite(space.low).all() and np.isfinite(space.high).all()):
        first = (getattr(venv, "envs", None) or [None])[0]
        if isinstance(first, gym.wrappers.ClipAction):
            return first.env.action_space
        raise ValueError(
            f"--random-episodes draws uniformly random actions, and {space} has no finite bounds to draw them from: "
            f"give the env's Box action space finite low/high, or leave out --random-episodes"
        )
    return space


def against_random(run_dir: Path, policies: list[str], episodes: int) -> dict[str, float | None]:
    """Each policy's mean return over ``episodes`` greedy episodes (its agents' share of them) with every other
    policy acting uniformly at random (raylab.evaluate against_random=...)."""
    from raylab.evaluate import EvaluateArgs, evaluate

    out = {}
    for name in policies:
        others = ",".join(p for p in policies if p != name)
        scored = evaluate(EvaluateArgs(run_dir=str(run_dir), episodes=episodes, against_random=others))
        mean = scored["policies"][name]["return_mean"]  # None: none of its agents' episodes among them
        out[name] = round(float(mean), 3) if mean is not None else None
    return out


def parse_source(text: str, variants: list[str]) -> tuple[str, Path]:
    name, _, tree = text.partition("=")
    if name not in variants or not (Path(tree) / "raylab" / "__init__.py").is_file():
        raise ConfigError(f"--source needs NAME=DIR, a --variant NAME and DIR/raylab: got '{text}'")
    if not (Path(tree) / "raylab" / "conf").exists():  # an editable install maps raylab.conf to its own conf/
        raise ConfigError(f"{tree}/raylab/conf is missing: ln -s ../conf {tree}/raylab/conf")
    return name, Path(tree).resolve()


def _describe(tree: Path) -> dict[str, str]:
    """The source tree and its commit (when it is a git checkout)."""
    head = subprocess.run(["git", "-C", str(tree), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return {"path": str(tree), "commit": head.stdout.strip() if head.returncode == 0 else "unknown"}


def move_unfinished_aside(runs_dir: Path, names: list[str]) -> list[Path]:
    """Each run of ``names`` that holds files but no benchmark_metrics.json (stopped before its end) renamed to
    ``<dir>.unfinished-<time>``, never deleted; the new places, each said in one line."""
    from raylab.driver.outputs import run_files

    stamp = time.strftime("%Y%m%d-%H%M%S")
    moved = []
    for name in names:
        run_dir = runs_dir / name
        if run_dir.is_dir() and run_files(run_dir) and not finished(run_dir):
            aside = run_dir.with_name(f"{name}.unfinished-{stamp}")
            run_dir.rename(aside)
            print(f"{run_dir} was not finished: moved to {aside}, running it again", flush=True)
            moved.append(aside)
    return moved


def check_no_runs_over(runs_dir: Path, names: list[str], reuse: bool) -> None:
    """Before the first run: none of them would train over a run an earlier benchmark left (a finished one is
    taken back with --reuse; one it did not finish would be trained over even then)."""
    from raylab.driver.outputs import run_files

    for name in names:
        run_dir = runs_dir / name
        held = run_files(run_dir) if run_dir.is_dir() else []
        if held and not (reuse and finished(run_dir)):
            again = (
                "continue it with --resume-unfinished or start it over with --restart-unfinished, "
                if reuse
                else "take its finished runs back with --reuse, "
            )
            raise ConfigError(
                f"{run_dir} already holds a run ({held[0]}) that this benchmark would train over: {again}choose "
                f"another --runs-dir, or move {runs_dir} aside (nothing was changed)"
            )


def resumable_runs(runs_dir: Path, planned: list[tuple[str, int]], check: SettingsCheck) -> set[str]:
    """The run directories of ``planned`` (variant, seed) that an earlier invocation left unfinished with a
    checkpoint of the settings asked for now (a variant of --source: unchecked, as its finished runs are), which
    ``--resume-unfinished`` continues; each said in one line, as is why another unfinished one starts over."""
    from raylab.driver.outputs import run_files
    from raylab.driver.resume import newest_checkpoint
    from raylab.learner.checkpoint import load_checkpoint

    found = set()
    for variant, seed in planned:
        run_dir = runs_dir / f"{variant}_seed{seed}"
        if not run_dir.is_dir() or not run_files(run_dir) or finished(run_dir):
            continue
        try:
            path = newest_checkpoint(run_dir)
            state = load_checkpoint(path)
        except RaylabError as err:  # no checkpoint, or a corrupt one: it starts over (moved aside, not deleted)
            print(f"{run_dir} cannot be resumed ({err}): it starts over", flush=True)
            continue
        checked = variant in check.overrides
        changed = difference(state.get("config") or {}, check.asked(variant, seed)) if checked else None
        if changed is not None:
            print(f"{run_dir} ran with other settings ({changed}): it starts over", flush=True)
            continue
        steps = int((state.get("counters") or {}).get("env_steps", 0))
        print(f"{run_dir} was not finished: resuming it from {path.name} at {steps:,} env steps", flush=True)
        report = run_dir / "benchmark_metrics.json"
        if report.exists():  # stopped from outside (Ctrl-C, SIGTERM): its partial report is kept beside, not replaced
            aside = report.with_name(f"benchmark_metrics.{_stop_reason(report)}-{time.strftime('%Y%m%d-%H%M%S')}.json")
            report.rename(aside)
            print(f"{report} is the report of a stopped run: moved to {aside.name}", flush=True)
        found.add(run_dir.name)
    return found


def finished(run_dir: Path) -> bool:
    """Whether ``run_dir`` holds a run that ran to its end: a benchmark_metrics.json whose run was not stopped from
    outside (Ctrl-C, SIGTERM: such a run writes one too, its stop reason ``interrupted`` or ``terminated``)."""
    from raylab.driver.stop import INTERRUPTED

    report = run_dir / "benchmark_metrics.json"
    return report.exists() and _stop_reason(report) not in INTERRUPTED


def _stop_reason(report: Path) -> str:
    try:
        return str(json.loads(report.read_text()).get("stop_reason"))
    except (ValueError, AttributeError):
        return "unreadable"


def run_one(
    variant: str, overrides: list[str], seed: int, run_dir: Path, source: Path | None = None, resume: bool = False
) -> dict[str, Any]:
    """One ``python -m raylab.train`` run; ``source``: the raylab tree it imports (Ray's workers inherit it);
    ``resume``: continue the unfinished run in ``run_dir`` from its newest checkpoint (its ``process_seconds`` are then
    None, the whole run's not being known, and ``process_seconds_last_part`` this part's)."""
    cmd = [sys.executable, "-m", "raylab.train", *overrides, f"seed={seed}", f"hydra.run.dir={run_dir.resolve()}"]
    if resume:
        cmd.append(f"resume={run_dir.resolve()}")
    env = {**os.environ, "WANDB_MODE": os.environ.get("WANDB_MODE", "disabled")}
    if source is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(source), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=source)
    process_seconds = time.perf_counter() - start
    if proc.returncode != 0 or not finished(run_dir):
        error = (proc.stderr or proc.stdout).strip().splitlines()[-5:]
        return {"variant": variant, "seed": seed, "run_dir": str(run_dir), "ok": False, "error": error}
    if not resume:
        return read_run(variant, seed, run_dir, round(process_seconds, 2))
    result = read_run(variant, seed, run_dir, None)
    del result["reused"]  # it ran here, in part
    return {**result, "process_seconds_last_part": round(process_seconds, 2)}


def read_run(variant: str, seed: int, run_dir: Path, process_seconds: float | None) -> dict[str, Any]:
    """One finished run's figures, from its benchmark_metrics.json (``process_seconds``: None for a run read
    back with --reuse, whose command was not timed by this invocation)."""
    result: dict[str, Any] = {"variant": variant, "seed": seed, "run_dir": str(run_dir)}
    result["process_seconds"] = process_seconds
    if process_seconds is None:
        result["reused"] = True
    bm = json.loads((run_dir / "benchmark_metrics.json").read_text())
    result["config"] = settings(bm.get("config") or {})  # what it ran with: a later --reuse checks it
    stop = bm["config"]["stop"]
    target = stop["mean_return"]
    extras_target: dict[str, float] = dict(stop.get("eval_extras") or {})  # Mario's flag_get: 0.8
    hit = next((e for e in bm["evals"] if meets(e, target, extras_target)), None)
    # a run to RLlib's criterion (stop.train_return, greedy evaluations off) reached it when that stopped it
    train_target = stop.get("train_return") if target is None and not extras_target else None
    train_seconds = bm["duration_hours"] * 3600
    final = bm["eval"]["return_mean"]
    final_extras = bm["eval"].get("extras_mean") or {}
    if train_target is not None:
        reached = str(bm["stop_reason"]).startswith("training return")
    elif extras_target:  # the final evaluation, of the weights that stopped the run, meets it too
        final_row = {"return_mean": final, **{f"{k}_mean": v for k, v in final_extras.items()}}
        reached = bool(hit) and final is not None and meets(final_row, target, extras_target)
    else:
        reached = bool(hit) and final is not None and target is not None and final >= target
    result.update(
        ok=True,
        target=target,
        stop_reason=bm["stop_reason"],
        train_seconds=round(train_seconds, 2),
        env_steps=bm["total_timesteps"],
        updates=bm["total_updates"],
        env_steps_per_s=round(bm["throughput"]["agent_steps_per_s"], 1),
        updates_per_s=round(bm["throughput"]["learner_updates_per_s"], 1),
        target_hit_seconds=round(hit["time_s"], 2) if hit else None,
        target_hit_env_steps=hit["env_steps"] if hit else None,
        final_eval_return=final,
        final_eval_std=bm["eval"]["return_std"],
        final_eval_episodes=bm["eval"]["episodes"],
        final_eval_games=_games(bm["eval"]),
        train_target=train_target,
        eval_extras_target=extras_target or None,
        final_eval_extras=final_extras,
        reached=reached,
        evals=[[round(e["time_s"], 2), e["env_steps"], e["return_mean"]] for e in bm["evals"]],
        eval_extras=[
            [round(e["time_s"], 2), e["env_steps"], {k[: -len("_mean")]: v for k, v in e.items() if _extra(k)}]
            for e in bm["evals"]
        ],
        episode_extras=bm.get("episode_extras") or {},
        policies=bm.get("policies"),
        env_frames_per_s=round(bm["throughput"].get("env_frames_per_s", 0.0), 1),
        final_train_return=(bm.get("performance") or {}).get("average_reward_last_100_episodes"),
        resumed_from=bm.get("resumed_from"),
        train_curve=train_curve(run_dir / "metrics.jsonl"),
    )
    return result


def _games(final_eval: dict[str, Any]) -> list[list[float]] | None:
    """The final evaluation's games as [return, agent steps] pairs (an episode that ran to the time limit shows
    there); None for a report from before they were kept."""
    returns, lengths = final_eval.get("returns"), final_eval.get("lengths")
    if not returns or lengths is None or len(lengths) != len(returns):
        return None
    return [[r, n] for r, n in zip(returns, lengths, strict=True)]


def meets(row: dict[str, Any], target: float | None, extras: dict[str, float]) -> bool:
    """Whether an evaluation row (``return_mean``, ``<extra>_mean``) meets stop.mean_return and every
    stop.eval_extras threshold that the run set (neither set: never)."""
    if target is None and not extras:
        return False
    if target is not None and (row.get("return_mean") is None or row["return_mean"] < target):
        return False
    return all(row.get(f"{key}_mean") is not None and row[f"{key}_mean"] >= value for key, value in extras.items())


def _extra(key: str) -> bool:
    """An evaluation row's per-family extra (Mario's ``x_pos_mean``, ``flag_get_mean``), not its return."""
    return key.endswith("_mean") and key != "return_mean"


def train_curve(metrics: Path, points: int = 200) -> list[list[float]]:
    """[time_s, env_steps, env_frames, training return] from a run's metrics.jsonl rows that have a training
    return (the mean of its recent episodes, sampled actions), thinned to at most ``points`` evenly spaced rows;
    empty without the file."""
    if not metrics.exists():
        return []
    rows = []
    for line in metrics.read_text().splitlines():
        try:
            row = json.loads(line)
        except json.JSONDecodeError:  # a line cut short by a killed run
            continue
        value = row.get("episode/return_mean")
        if value is not None and math.isfinite(value):
            frames = row.get("env_frames", row["env_steps"])
            rows.append([round(row["time_s"], 1), row["env_steps"], frames, round(value, 3)])
    if len(rows) <= points:
        return rows
    step = (len(rows) - 1) / (points - 1)
    return [rows[round(k * step)] for k in range(points)]


def summarize(runs: list[dict[str, Any]]) -> dict[str, Any]:
    done = [r for r in runs if r["ok"]]

    def median(key: str) -> float | None:
        values = [r[key] for r in done if r.get(key) is not None]
        return round(statistics.median(values), 2) if values else None

    return {
        "runs": len(runs),
        "reached": sum(bool(r.get("reached")) for r in done),
        "median_train_seconds": median("train_seconds"),
        "max_train_seconds": max((r["train_seconds"] for r in done), default=None),
        "median_process_seconds": median("process_seconds"),
        "median_env_steps": median("env_steps"),
        "median_env_steps_per_s": median("env_steps_per_s"),
        "median_updates_per_s": median("updates_per_s"),
        "median_final_eval_return": median("final_eval_return"),
    }


def _line(r: dict[str, Any]) -> str:
    if not r["ok"]:
        return f"{r['variant']} seed {r['seed']}: FAILED: {' / '.join(r['error'])}"
    outcome = "ran"
    if r.get("eval_extras_target"):
        wanted = ", ".join(f"{k} {v:g}" for k, v in r["eval_extras_target"].items())
        outcome = f"{'reached' if r['reached'] else 'MISSED'} {wanted}"
    elif r["target"] is not None:
        outcome = f"{'reached' if r['reached'] else 'MISSED'} target {r['target']}"
    elif r.get("train_target") is not None:
        outcome = f"{'reached' if r['reached'] else 'MISSED'} training return {r['train_target']}"
    return (
        f"{r['variant']} seed {r['seed']}: {outcome} "
        f"in {r['train_seconds']:.1f} s train / {_seconds(r['process_seconds'])} process, {r['env_steps']:,} env steps "
        f"({r['env_steps_per_s']:,.0f}/s, {r['updates_per_s']:,.0f} updates/s); "
        + (
            f"final eval {fmt_return(r['final_eval_return'])} ± {fmt_return(r['final_eval_std'])}"
            if r["final_eval_return"] is not None
            else "no final eval"
        )
        + "".join(
            f"; {name} {p['final_eval_return_mean']:.1f}"
            for name, p in (r.get("policies") or {}).items()
            if p.get("final_eval_return_mean") is not None
        )
        + "".join(
            f"; {name} against random {v:.1f}" for name, v in (r.get("against_random") or {}).items() if v is not None
        )
    )


def _seconds(value: float | None) -> str:
    return "(not timed)" if value is None else f"{value:.1f} s"


def plot(report: dict[str, Any], path: Path) -> None:
    """The greedy evaluations against training time: one colour per variant, each seed a thin line, the variant's
    median over its seeds bold (a seed that stopped early holds its last evaluation), the target dashed."""
    import numpy as np

    results = report["runs"]
    fig, ax = plots.figure(7, 4)
    names = list(dict.fromkeys([*report.get("variants", {}), *(r["variant"] for r in results)]))
    for i, name in enumerate(names):
        color = f"C{i % 10}"
        curves = [
            (np.array([e[0] for e in r["evals"]]), np.array([e[2] for e in r["evals"]]))
            for r in results
            if r["variant"] == name and r["ok"] and r["evals"]
        ]
        for t, y in curves:
            ax.plot(t, y, color=color, lw=0.8, alpha=0.35)
        if not curves:
            continue
        # every seed interpolated onto one time grid, from the first evaluation every seed has made on
        grid = np.linspace(max(t[0] for t, _ in curves), max(t[-1] for t, _ in curves), 200)
        median = np.median(np.stack([np.interp(grid, t, y) for t, y in curves]), axis=0)
        ax.plot(grid, median, color=color, lw=2.2, label=f"{name}: median of {len(curves)} seeds")
    for target in sorted({r["target"] for r in results if r.get("target") is not None}):
        ax.axhline(target, color="gray", ls="--", lw=1, label=f"target {target:g}")
    ax.set_xlabel("training time (s)")
    ax.set_ylabel("greedy evaluation return")
    ax.set_title(title(report), fontsize=10)
    ax.grid(alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7, title="thin: one seed each", title_fontsize=7)
    if not any(r["ok"] and r["evals"] for r in results):
        ax.text(0.5, 0.5, "no periodic greedy evaluations in these runs", ha="center", transform=ax.transAxes)
    plots.save(fig, path)


def title(report: dict[str, Any]) -> str:
    """What a learn report compares, in a line: the experiment(s) and the variants."""
    names = list(report.get("variants") or dict.fromkeys(r["variant"] for r in report["runs"]))
    every = [*report.get("overrides", []), *(x for extra in (report.get("variants") or {}).values() for x in extra)]
    experiments = dict.fromkeys(o.split("=", 1)[1] for o in every if o.startswith("+experiment="))
    env_ids = dict.fromkeys(o.split("=", 1)[1] for o in report.get("overrides", []) if o.startswith("env.id="))
    what = ", ".join(experiments or env_ids) or "the run"
    return f"{what}: {' vs '.join(names)}" if len(names) > 1 else f"{what} ({names[0]})" if names else what

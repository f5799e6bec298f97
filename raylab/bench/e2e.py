"""``e2e``: apex_dqn end to end (env steps/s, updates/s, where the time went), beside RLlib's DQN.

    python -m raylab.bench e2e --experiment cartpole_dqn --seconds 120 --seeds 0 1 \\
        --rllib-python .venv-rllib/bin/python --output benchmarks/e2e_cartpole.json
    python -m raylab.bench e2e --experiment mario_dqn --seconds 240 --seeds 0 --output benchmarks/e2e_mario.json

Extra arguments are Hydra overrides for raylab's runs (e.g. ``replay.samples_per_insert=0`` to let collection
run free and measure how much of the machine's emulator capacity the system reaches). Each run is a fresh
process: raylab's is the real CLI (``python -m raylab.train``) with the experiment's own
topology and 2 rollout workers, training for ``--seconds`` with no stop on return; RLlib's (only when
``--rllib-python`` names an interpreter with ``ray[rllib]`` of the same Ray version) is its tuned CartPole
DQN example with 2 env runners for the same time. Variants alternate seed by seed.

Per raylab run the JSON has
- env steps/s, learner updates/s and the updates-per-sample ratio (samples trained per env step);
- the time to the first report where the mean return of the last 100 training episodes reached
  ``--target`` (RLlib's criterion, ``episode_return_mean``), and the best such mean; raylab's training
  episodes include its Ape-X exploration ladder (one slot explores with epsilon 0.4), so it also reports
  the time its greedy evaluation (10 episodes every 5 s, in its own actor) first reached 475;
- the stage breakdown, as the busy share of each actor type: rollout workers (env, inference, weight sync),
  replay (add, sample, priority updates), learner (update; the rest of its time it waits for batches:
  transfer and queueing), driver (waiting on actors);
- sampling efficiency: env frames/s over (workers x the single-process raw env rate in
  ``benchmarks/envs.json``), the fraction of the machine's emulator capacity the whole system achieved.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

from raylab.bench import plots
from raylab.bench.checks import duration, output_file
from raylab.bench.machine import machine_info
from raylab.driver.outputs import atomic_write
from raylab.errors import ConfigError

ENVS_JSON = Path("benchmarks/envs.json")
FAMILY_OF = {"cartpole_dqn": "cartpole", "mario_dqn": "mario", "snake_dqn": "snake", "coinrun_dqn": "coinrun"}


def add_parser(commands: Any) -> None:
    p = commands.add_parser("e2e", help="apex_dqn end to end with its stage breakdown, beside RLlib's DQN")
    p.add_argument("--experiment", default="cartpole_dqn")
    p.add_argument("--seconds", type=duration, default=120.0, help="training time per run")
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    p.add_argument("--target", type=float, default=475.0, help="training-return target (last 100 episodes)")
    p.add_argument("--eval-every", type=float, default=5.0, help="raylab's greedy eval interval, s (0 = off)")
    p.add_argument("--rllib-python", default=None, help="python of a venv with ray[rllib] (CartPole only)")
    p.add_argument("--output", type=output_file, required=True, help="JSON to write; the PNG goes next to it")
    p.add_argument("--runs-dir", default=None)
    p.set_defaults(func=run)


# -- raylab ---------------------------------------------------------------------------------------------------


def raylab_dqn(
    experiment: str, seconds: float, seed: int, run_dir: Path, target: float, eval_every: float, extra: list[str]
) -> dict[str, Any]:
    overrides = [
        f"+experiment={experiment}", f"seed={seed}", f"stop.seconds={seconds}", "stop.env_steps=null",
        "stop.mean_return=null", "stop.train_return=null", "stop.eval_extras=null", "eval.episodes=10",
        "eval.final_episodes=0",
        f"eval.every_seconds={eval_every if eval_every > 0 else 'null'}",
        "topology.num_workers=2", "logger.console=false", "logger.report_every_seconds=2", f"hydra.run.dir={run_dir}",
        *extra,
    ]  # fmt: skip
    env = {**os.environ, "WANDB_MODE": "disabled"}
    proc = subprocess.run([sys.executable, "-m", "raylab.train", *overrides], capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise RuntimeError(f"raylab run failed ({proc.returncode}): {proc.stderr[-2000:]}")
    bm = json.loads((run_dir / "benchmark_metrics.json").read_text())
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    return {"framework": "raylab", **summarize(bm, rows, run_dir, target)}


def summarize(
    bm: dict[str, Any], rows: list[dict[str, Any]], run_dir: Path | None = None, target: float = 475.0
) -> dict[str, Any]:
    """Throughput, ratio, return curve and stage breakdown of one raylab run (its two output files)."""
    train_s = float(bm["duration_hours"]) * 3600
    steps, updates = int(bm["total_timesteps"]), int(bm["total_updates"])
    replay = bm.get("replay") or {}
    workers = len(bm.get("workers") or {}) or 1
    frame_skip = int(bm["config"]["env"].get("frame_skip", 1))
    timing: dict[str, float] = {}
    for row in rows:
        for key, value in row.items():
            if key.startswith("timing/"):
                timing[key[len("timing/") :]] = timing.get(key[len("timing/") :], 0.0) + float(value)
    for key, value in (replay.get("timings") or {}).items():
        timing[f"replay/{key}"] = float(value)
    rollout = {k: v / (train_s * workers) for k, v in timing.items() if k.startswith("rollout/")}
    learner = {k: v / train_s for k, v in timing.items() if k.startswith("learner/")}
    shares = {
        **{f"{k} (per worker)": v for k, v in rollout.items()},
        **{k: v / train_s for k, v in timing.items() if k.startswith("replay/")},
        **learner,
        "learner/untimed (Ray calls, serialization)": max(0.0, 1.0 - sum(learner.values())),
        **{k: v / train_s for k, v in timing.items() if k.startswith("driver/")},
    }
    curve = [
        {"time_s": r["time_s"], "env_steps": r["env_steps"], "return_mean": r["episode/return_mean"]}
        for r in rows
        if "episode/return_mean" in r
    ]
    evals = [(r["time_s"], r["eval/return_mean"]) for r in rows if "eval/return_mean" in r]
    return {
        "run_dir": str(run_dir) if run_dir else None,
        "greedy_eval_target_reached_s": next((s for s, v in evals if v >= target), None),
        "train_s": train_s,
        "env_steps": steps,
        "env_steps_per_s": steps / train_s,
        "env_frames_per_s": steps * frame_skip / train_s,
        "updates": updates,
        "updates_per_s": updates / train_s,
        "samples_per_env_step": replay.get("sampled", 0) / max(replay.get("inserted", 0), 1),
        "workers": workers,
        "busy_share": shares,
        "stage_seconds": timing,
        "curve": curve,
    }


def _target_time(curve: list[dict[str, float]], target: float) -> float | None:
    return next((c["time_s"] for c in curve if c["return_mean"] >= target), None)


def run(args: argparse.Namespace, overrides: list[str]) -> int:
    from raylab.train import check_overrides

    check_overrides([f"+experiment={args.experiment}", *overrides])  # before the first run starts
    if args.rllib_python and not Path(args.rllib_python).is_file():
        raise ConfigError(f"--rllib-python {args.rllib_python} is not a file: give a venv's python with ray[rllib]")
    output = Path(args.output)
    runs_dir = Path(args.runs_dir or Path("outputs") / "bench" / output.stem)
    variants = ["raylab"] + (["rllib"] if args.rllib_python else [])
    results: dict[str, list[dict[str, Any]]] = {v: [] for v in variants}
    for i, seed in enumerate(args.seeds):
        for variant in variants if i % 2 == 0 else list(reversed(variants)):
            if variant == "raylab":
                result = raylab_dqn(
                    args.experiment,
                    args.seconds,
                    seed,
                    runs_dir / f"raylab_seed{seed}",
                    args.target,
                    args.eval_every,
                    overrides,
                )
            else:
                result = _rllib_subprocess(args.rllib_python, args.seconds, seed, args.target)
            result["seed"] = seed
            result.setdefault("target_reached_s", _target_time(result["curve"], args.target))
            results[variant].append(result)
            reached = result["target_reached_s"]
            when = f"at {reached:.0f} s" if reached is not None else "not reached"
            print(f"{variant:6s} seed {seed}: {result['env_steps_per_s']:8.0f} env steps/s, "
                  f"{result['updates_per_s']:6.1f} updates/s, {result['samples_per_env_step']:.1f} samples/step, "
                  f"{args.target:g} {when}", flush=True)  # fmt: skip
    summary = {v: _median_summary(runs, args.target) for v, runs in results.items()}
    report: dict[str, Any] = {
        "benchmark": "e2e",
        "experiment": args.experiment,
        "raylab_overrides": overrides,
        "eval_every_seconds": args.eval_every,
        "seconds": args.seconds,
        "target": args.target,
        "machine": machine_info(),
        "summary": summary,
        "runs": results,
    }
    raw = _raw_env_rate(args.experiment)
    if raw is not None:
        workers = results["raylab"][0]["workers"]
        frames = statistics.median(r["env_frames_per_s"] for r in results["raylab"])
        report["sampling_efficiency"] = {
            "raw_env_frames_per_s_one_process": raw,
            "workers": workers,
            "e2e_env_frames_per_s": frames,
            "efficiency": frames / (workers * raw),
        }
    if "rllib" in summary:
        ours, theirs = summary["raylab"], summary["rllib"]
        report["raylab_over_rllib"] = {
            "env_steps_per_s": ours["env_steps_per_s"] / theirs["env_steps_per_s"],
            "samples_per_env_step": ours["samples_per_env_step"] / max(theirs["samples_per_env_step"], 1e-9),
        }
    atomic_write(output, json.dumps(report, indent=2) + "\n")
    _plot(results, args.target, output.with_suffix(".png"))
    print(json.dumps({"summary": summary, **{k: report[k] for k in ("sampling_efficiency", "raylab_over_rllib")
                                              if k in report}}, indent=1))  # fmt: skip
    print(f"wrote {output} and {output.with_suffix('.png')}")
    return 0


def _rllib_subprocess(python: str, seconds: float, seed: int, target: float) -> dict[str, Any]:
    # stdlib + Ray only, it runs in RLlib's own venv; it lives in benchmarks/ because only raylab/remote and
    # raylab/topology may import Ray, so the comparison needs a source checkout
    script = Path(__file__).resolve().parents[2] / "benchmarks" / "rllib_dqn.py"
    if not script.is_file():
        raise ConfigError(f"--rllib-python needs {script} from a source checkout of raylab: run from the repository")
    proc = subprocess.run([python, str(script), str(seconds), str(seed), str(target)], capture_output=True, text=True)
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            result: dict[str, Any] = json.loads(line[len("RESULT ") :])
            return result
    raise RuntimeError(f"rllib run failed ({proc.returncode}): {proc.stderr[-3000:]}")


def _median_summary(runs: list[dict[str, Any]], target: float) -> dict[str, Any]:
    reached = [r["target_reached_s"] for r in runs if r["target_reached_s"] is not None]
    best = [r.get("best_return_mean", max((c["return_mean"] for c in r["curve"]), default=None)) for r in runs]
    out: dict[str, Any] = {
        "runs": len(runs),
        "env_steps_per_s": statistics.median(r["env_steps_per_s"] for r in runs),
        "updates_per_s": statistics.median(r["updates_per_s"] for r in runs),
        "samples_per_env_step": statistics.median(r["samples_per_env_step"] for r in runs),
        f"reached_{target:g}": f"{len(reached)}/{len(runs)}",
        "median_seconds_to_target": statistics.median(reached) if reached else None,
        "greedy_eval_target_reached_s": [r.get("greedy_eval_target_reached_s") for r in runs],
        "best_return_mean": best,
    }
    if runs and "busy_share" in runs[0]:
        keys = runs[0]["busy_share"].keys()
        out["busy_share"] = {k: statistics.median(r["busy_share"].get(k, 0.0) for r in runs) for k in keys}
    return out


def _raw_env_rate(experiment: str) -> float | None:
    """The family's single-process raw env frames/s from benchmarks/envs.json (None when not measured)."""
    family = FAMILY_OF.get(experiment)
    if family is None or not ENVS_JSON.is_file():
        return None
    data = json.loads(ENVS_JSON.read_text())
    stage = data.get("families", {}).get(family, {}).get("stages", {}).get("raw")
    return float(stage["frames_per_s"]) if stage else None


def _plot(results: dict[str, list[dict[str, Any]]], target: float, path: Path) -> None:
    fig, axes = plots.figure(11, 4, 1, 2)
    ax_ret, ax_share = axes[0]
    colors = {"raylab": "tab:blue", "rllib": "tab:red"}
    for variant, runs in results.items():
        for i, r in enumerate(runs):
            xs = [c["time_s"] for c in r["curve"]]
            ys = [c["return_mean"] for c in r["curve"]]
            ax_ret.plot(xs, ys, color=colors.get(variant, "k"), alpha=0.8, label=variant if i == 0 else None)
    ax_ret.axhline(target, color="gray", ls=":", lw=1)
    ax_ret.set_xlabel("training seconds")
    ax_ret.set_ylabel("mean return, last 100 training episodes")
    ax_ret.legend()
    shares = results["raylab"][0]["busy_share"]
    names = list(shares)
    ax_share.barh(names, [statistics.median(r["busy_share"].get(n, 0.0) for r in results["raylab"]) for n in names])
    ax_share.set_xlabel("share of training time (per actor)")
    ax_share.tick_params(axis="y", labelsize=7)
    ax_share.set_title("raylab apex_dqn: where each actor's time went")
    plots.save(fig, path)

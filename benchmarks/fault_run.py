"""Issue 8's fault demonstration, measured: a cartpole_dqn apex_dqn run with one rollout actor SIGKILLed every
``--kill-every`` seconds, the learner SIGKILLed once and the replay shard once, beside the same run
untouched (alternating).

    python benchmarks/fault_run.py --kill-every 30 --learner-at 45 --replay-at 75 --seconds 150 \
        --output benchmarks/fault_run.json

Each run is a fresh ``python -m raylab.train +experiment=cartpole_dqn`` for ``--seconds`` (no early stop, so
that the kills keep coming) with periodic checkpoints and replay snapshots every 10 s (both variants);
"reached" means its final greedy evaluation (20 fresh episodes) scores >= 475, and the first periodic
evaluation at >= 475 is recorded. Actor processes are found by their Ray process titles (ray::RolloutHost,
ray::LearnerHost, ray::ReplayHost) under the run.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil

TARGET = 475.0


def actor_pids(root: int, name: str) -> list[int]:
    pids = []
    for proc in psutil.Process(root).children(recursive=True):
        try:
            if " ".join(proc.cmdline()).startswith(f"ray::{name}"):
                pids.append(proc.pid)
        except psutil.Error:
            continue
    return sorted(pids)


def one_run(run_dir: Path, seconds: float, kill_every: float | None, once: dict[str, float]) -> dict:
    """``once``: {actor class: seconds into the run} to SIGKILL one actor of that class once."""
    cmd = [sys.executable, "-m", "raylab.train", "+experiment=cartpole_dqn", f"stop.seconds={seconds}",
           "stop.mean_return=null", "checkpoint.every_seconds=10", "checkpoint.replay=true", "logger.console=false",
           f"hydra.run.dir={run_dir}"]  # fmt: skip
    env = {**os.environ, "WANDB_MODE": "disabled"}
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    kills: list[dict] = []
    while not (run_dir / "metrics.jsonl").exists() and proc.poll() is None:
        time.sleep(0.2)
    start = time.monotonic()
    next_kill = kill_every
    pending = dict(once)
    while proc.poll() is None:
        elapsed = time.monotonic() - start
        if next_kill is not None and elapsed >= next_kill:
            pids = actor_pids(proc.pid, "RolloutHost")
            if pids:
                os.kill(pids[len(kills) % len(pids)], signal.SIGKILL)
                kills.append({"actor": "rollout", "at_s": round(elapsed, 1)})
            next_kill += kill_every
        for name, at in list(pending.items()):
            if elapsed >= at:
                pids = actor_pids(proc.pid, name)
                if pids:
                    os.kill(pids[0], signal.SIGKILL)
                    kills.append({"actor": name.removesuffix("Host").lower(), "at_s": round(elapsed, 1)})
                del pending[name]
        time.sleep(0.2)
    out = proc.stdout.read().decode() if proc.stdout else ""
    bm = json.loads((run_dir / "benchmark_metrics.json").read_text()) if proc.returncode == 0 else {}
    evals = bm.get("evals", [])
    return {
        "returncode": proc.returncode,
        "kills": kills,
        "stop_reason": bm.get("stop_reason"),
        "reached_target": (bm.get("eval", {}).get("return_mean") or 0) >= TARGET,
        "first_eval_at_target_s": next((round(e["time_s"], 1) for e in evals if e["return_mean"] >= TARGET), None),
        "train_s": bm.get("duration_hours", 0) * 3600,
        "env_steps": bm.get("total_timesteps"),
        "restarts": bm.get("restarts"),
        "final_eval": bm.get("eval", {}).get("return_mean"),
        "evals": [(round(e["time_s"], 1), round(e["return_mean"], 1)) for e in evals],
        "tail": out[-1500:] if proc.returncode else "",
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--kill-every", type=float, default=30.0)
    p.add_argument("--learner-at", type=float, default=45.0)
    p.add_argument("--replay-at", type=float, default=75.0)
    p.add_argument("--seconds", type=float, default=150.0)
    p.add_argument("--seeds", type=int, default=1)
    p.add_argument("--runs-dir", default="outputs/bench/fault_run")
    p.add_argument("--output", required=True)
    args = p.parse_args()
    results: dict[str, list[dict]] = {"faults": [], "clean": []}
    for seed in range(args.seeds):
        for variant in ("faults", "clean") if seed % 2 == 0 else ("clean", "faults"):
            run_dir = Path(args.runs_dir) / f"{variant}_{seed}"
            once = {"LearnerHost": args.learner_at, "ReplayHost": args.replay_at}
            kill, once = (args.kill_every, once) if variant == "faults" else (None, {})
            result = one_run(run_dir, args.seconds, kill, once)
            results[variant].append(result)
            print(variant, seed, json.dumps({k: result[k] for k in ("reached_target", "train_s", "restarts",
                                                                    "final_eval", "kills")}), flush=True)  # fmt: skip
    report = {"benchmark": "fault_run", "protocol": vars(args), "results": results}
    Path(args.output).write_text(json.dumps(report, indent=2) + "\n")
    plot(report, Path(args.output).with_suffix(".png"))
    print(f"wrote {args.output} and its PNG")


def plot(report: dict, path: Path) -> None:
    """Greedy eval return over training time, both variants, with the kills marked."""
    from raylab.bench.plots import figure, save

    fig, ax = figure(width=9, height=4)
    for variant, color in (("clean", "#55a868"), ("faults", "#c44e52")):
        for run in report["results"][variant]:
            times, returns = zip(*run["evals"], strict=True) if run["evals"] else ((), ())
            ax.plot(times, returns, color=color, marker=".", label=f"{variant} (final eval {run['final_eval']:.1f})")
            for kill in run["kills"]:
                style = {"rollout": "--", "learner": "-", "replay": ":"}[kill["actor"]]
                ax.axvline(kill["at_s"], color=color, linestyle=style, alpha=0.5)
    ax.axhline(TARGET, color="grey", linewidth=0.8)
    ax.set_xlabel("training time (s); SIGKILLed: dashed a rollout actor, solid the learner, dotted the replay")
    ax.set_ylabel("greedy eval return")
    ax.set_title("cartpole_dqn (apex_dqn) with actors killed mid-run")
    ax.legend(fontsize=8)
    save(fig, path)


if __name__ == "__main__":
    main()

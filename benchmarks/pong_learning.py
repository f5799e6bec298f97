"""Learning Atari Pong on this machine, timed: raylab's ``pong_appo`` per seed, Sample Factory's own Atari
example beside it, each from a fresh process under one wall-clock budget.

    make bench-pong-learning                          # creates .venv-sf first
    python benchmarks/pong_learning.py --frameworks raylab --seeds 0 1 --cap-s 3600
    python benchmarks/pong_learning.py --frameworks sf --seeds 0 --cap-s 3600
    python benchmarks/pong_learning.py --collect      # rebuild the JSON and PNG from the run dirs, run nothing

raylab: ``python -m raylab.train +experiment=pong_appo seed=S``. Every ``eval.every_seconds`` (180) a greedy
evaluation plays 10 whole games (DeepMind preprocessing; true game scores: a game is 21 points, not a life);
when their mean reaches 18, 20 more games confirm it and the run stops. "Time to 18" is the training time of
the metrics row holding the first evaluation whose mean is >= 18 (a confirmed one: 30 games), and its frames.

Sample Factory 2.1.1: ``sf_examples.envpool.atari.train_envpool_atari --env=atari_pong`` with its own Atari
defaults (APPO without V-trace: 4 epochs of 4 minibatches of 256, rollout 128, lr 2.5e-4 decaying linearly,
the Nature CNN, EnvPool with episodic life and reward clipping) at raylab's shape: 2 rollout workers x 16
envs, on the CPU, for the same budget (``--train_for_seconds``). Sample Factory has no greedy evaluation
during training, so its curve is its training return (the mean over its recent games, as it logs it), and its
final checkpoint is evaluated greedily (``--eval_deterministic``) over 10 whole games afterwards by its own
``enjoy``.

Each run writes into ``--runs-dir``/<framework>_s<seed> and is never overwritten (an existing dir is refused:
move it aside). ``os.getloadavg()`` is recorded before and after every run. The JSON is rewritten after every
run from all run dirs found.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

EXPERIMENT = "pong_appo"
TARGET = 18.0
WORKERS, ENVS = 2, 16
FRAME_SKIP = 4
SF_EVAL_GAMES = 10
CURVE_POINTS = 400
HERE = Path(__file__).resolve().parent
SF_LOG = re.compile(r"\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+)\]\[\d+\] Fps is .*?Total num frames: (\d+)")
SF_REWARD = re.compile(r"\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+)\]\[\d+\] Avg episode reward: \[\(0, '(-?[\d.]+)'\)\]")
SF_EVAL = """
import functools, json, sys
import torch
# Sample Factory 2.1.1 loads its own checkpoints with torch.load's old default; torch >= 2.6 loads weights only
torch.load = functools.partial(torch.load, weights_only=False)
from sample_factory.enjoy import enjoy
from sf_examples.envpool.atari.train_envpool_atari import parse_atari_args, register_atari_components
register_atari_components()
cfg = parse_atari_args(argv=sys.argv[1:], evaluation=True)
status, mean = enjoy(cfg)
print("SF_EVAL " + json.dumps({"status": int(status), "return_mean": float(mean)}), flush=True)
"""


def raylab_command(seed: int, run_dir: Path, cap_s: float) -> list[str]:
    return [sys.executable, "-m", "raylab.train", f"+experiment={EXPERIMENT}", f"seed={seed}",
            f"stop.seconds={cap_s:g}", f"hydra.run.dir={run_dir}"]  # fmt: skip


def sf_command(sf_python: str, seed: int, run_dir: Path, cap_s: float) -> list[str]:
    return [sf_python, "-m", "sf_examples.envpool.atari.train_envpool_atari", "--env=atari_pong",
            "--experiment=pong", f"--train_dir={run_dir / 'train_dir'}", "--device=cpu", f"--seed={seed}",
            f"--num_workers={WORKERS}", "--num_envs_per_worker=1", f"--env_agents={ENVS}",
            f"--train_for_seconds={int(cap_s)}", "--save_every_sec=300", "--with_wandb=False"]  # fmt: skip


def sf_eval_command(sf_python: str, run_dir: Path) -> list[str]:
    return [sf_python, "-c", SF_EVAL, "--env=atari_pong", "--experiment=pong", f"--train_dir={run_dir / 'train_dir'}",
            "--device=cpu", "--no_render", "--eval_deterministic=True", f"--max_num_episodes={SF_EVAL_GAMES}",
            f"--env_agents={SF_EVAL_GAMES}", "--num_workers=1", "--use_record_episode_statistics=False"]  # fmt: skip


def sf_env(run_dir: Path) -> dict[str, str]:
    """Sample Factory's environment: EnvPool's pools patched for gymnasium 0.29 (benchmarks/atari_vs_peers.py)."""
    sys.path.insert(0, str(HERE))
    from atari_vs_peers import sf_patch_dir

    return {**os.environ, "PYTHONPATH": str(sf_patch_dir(run_dir)), "PYTHONUNBUFFERED": "1"}


def run_logged(cmd: list[str], log: Path, timeout: float, env: dict[str, str]) -> dict[str, Any]:
    """Run ``cmd`` in its own session, output to ``log``; past ``timeout`` SIGTERM, 120 s later SIGKILL. Whatever
    of its process group outlives it is killed: Sample Factory's spawned workers went on training after its main
    process took the SIGTERM and exited."""
    start = time.time()
    with open(log, "ab") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        killed = None
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            killed = "SIGTERM"
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=120)
            except subprocess.TimeoutExpired:
                killed = "SIGKILL"
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)  # start_new_session: the group is the command's tree
    return {"rc": proc.returncode, "wall_s": round(time.time() - start, 1), "killed": killed,
            "command": shlex.join(cmd)}  # fmt: skip


def run_one(framework: str, seed: int, args: argparse.Namespace) -> None:
    run_dir = Path(args.runs_dir) / f"{framework}_s{seed}"
    if run_dir.exists():
        raise SystemExit(f"pong_learning: {run_dir} exists: move it aside (a run is never overwritten)")
    run_dir.parent.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "WANDB_MODE": "disabled", "PYTHONUNBUFFERED": "1"}
    from raylab.bench.machine import machine_info

    meta: dict[str, Any] = {"framework": framework, "seed": seed, "cap_s": args.cap_s, "load_before": os.getloadavg(),
                            "commit": machine_info()["git_commit"], "started": time.time()}  # fmt: skip
    if framework == "raylab":
        log = run_dir.with_suffix(".log")
        meta["train"] = run_logged(raylab_command(seed, run_dir, args.cap_s), log, args.cap_s + 900, env)
    else:
        run_dir.mkdir(parents=True)
        env = sf_env(run_dir)
        log = run_dir / "out.log"
        meta["train"] = run_logged(sf_command(args.sf_python, seed, run_dir, args.cap_s), log, args.cap_s + 300, env)
        meta["eval"] = run_logged(sf_eval_command(args.sf_python, run_dir), run_dir / "eval.log", 1800, env)
    meta["load_after"] = os.getloadavg()
    meta_path = run_dir.parent / f"{framework}_s{seed}.meta.json"
    meta_path.write_text(json.dumps(meta, indent=1))


# -- collecting -----------------------------------------------------------------------------------------------------
def thin(curve: list[list[float]], points: int = CURVE_POINTS) -> list[list[float]]:
    if len(curve) <= points:
        return curve
    step = (len(curve) - 1) / (points - 1)
    return [curve[round(i * step)] for i in range(points)]


def raylab_result(run_dir: Path) -> dict[str, Any]:
    rows = [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines() if x.strip()]
    curve = [[round(r["time_s"], 1), int(r["env_frames"]), round(r["episode/return_mean"], 3)]
             for r in rows if r.get("episode/return_mean") is not None]  # fmt: skip
    evals, version = [], None  # a row repeats the last evaluation until the next: one point per weights version
    for r in rows:
        if r.get("eval/return_mean") is not None and r.get("eval/version") != version:
            version = r.get("eval/version")
            evals.append([round(r["time_s"], 1), int(r["env_frames"]), round(r["eval/return_mean"], 3)])
    hit = next((e for e in evals if e[2] >= TARGET), None)
    bm_path = run_dir / "benchmark_metrics.json"
    bm = json.loads(bm_path.read_text()) if bm_path.is_file() else {}
    last = rows[-1] if rows else {}
    return {
        "finished": bm_path.is_file(),
        "stop_reason": bm.get("stop_reason"),
        "train_s": round(bm["duration_hours"] * 3600, 1) if bm else last.get("time_s"),
        "frames": int(bm["total_timesteps"]) * FRAME_SKIP if bm else last.get("env_frames"),
        "frames_per_s": round(last["env_frames"] / last["time_s"], 1) if last.get("time_s") else None,
        "updates": bm.get("total_updates"),
        "reached": hit is not None,
        "seconds_to_target": hit[0] if hit else None,
        "frames_to_target": hit[1] if hit else None,
        "final_greedy_return": bm.get("eval", {}).get("return_mean"),
        "final_greedy_games": bm.get("eval", {}).get("episodes"),
        "best_greedy_return": max((e[2] for e in evals), default=None),
        "evals": evals,
        "curve": thin(curve),
    }


def _stamp(text: str) -> float:
    import datetime as dt

    return dt.datetime.strptime(text, "%Y-%m-%d %H:%M:%S,%f").timestamp()


def sf_result(run_dir: Path) -> dict[str, Any]:
    text = (run_dir / "out.log").read_text(errors="replace")
    frames = [(_stamp(t), int(n)) for t, n in SF_LOG.findall(text)]
    rewards = [(_stamp(t), float(v)) for t, v in SF_REWARD.findall(text)]
    start = frames[0][0] - 5.0 if frames else 0.0  # its first report comes ~5 s after training starts
    curve = []
    for t, value in rewards:
        before = [n for s, n in frames if s <= t]
        curve.append([round(t - start, 1), before[-1] if before else 0, round(value, 3)])
    eval_log = run_dir / "eval.log"
    greedy = None
    if eval_log.is_file():
        found = [json.loads(x.removeprefix("SF_EVAL ")) for x in eval_log.read_text().splitlines()
                 if x.startswith("SF_EVAL ")]  # fmt: skip
        greedy = found[-1]["return_mean"] if found else None
    hit = next((c for c in curve if c[2] >= TARGET), None)
    return {
        "finished": greedy is not None,
        "train_s": round(frames[-1][0] - start, 1) if frames else None,
        "frames": frames[-1][1] if frames else None,
        "frames_per_s": round(frames[-1][1] / (frames[-1][0] - start), 1) if frames else None,
        "reached_in_training": hit is not None,
        "seconds_to_training_target": hit[0] if hit else None,
        "frames_to_training_target": hit[1] if hit else None,
        "train_return_max": max((c[2] for c in curve), default=None),
        "final_greedy_return": greedy,
        "final_greedy_games": SF_EVAL_GAMES if greedy is not None else None,
        "curve": thin(curve),
    }


def collect(args: argparse.Namespace) -> dict[str, Any]:
    runs = []
    for meta_path in sorted(Path(args.runs_dir).glob("*.meta.json")):
        meta = json.loads(meta_path.read_text())
        run_dir = meta_path.parent / meta_path.name.removesuffix(".meta.json")
        result = raylab_result(run_dir) if meta["framework"] == "raylab" else sf_result(run_dir)
        runs.append({**meta, **result})
    return {"target": TARGET, "experiment": EXPERIMENT, "workers": WORKERS, "envs_per_worker": ENVS, "runs": runs}


def plot(results: dict[str, Any], path: Path) -> None:
    from raylab.bench import plots

    fig, axes = plots.figure(12.0, 4.2, 1, 2)
    left, right = list(axes[0])
    for i, run in enumerate(results["runs"]):
        label = f"{run['framework']} seed {run['seed']}"
        color = f"C{i % 10}"
        curve = run.get("curve") or []
        left.plot([c[0] / 60 for c in curve], [c[2] for c in curve], color=color, lw=1.2, label=label)
        right.plot([c[1] / 1e6 for c in curve], [c[2] for c in curve], color=color, lw=1.2, label=label)
        for e in run.get("evals") or []:
            left.plot(e[0] / 60, e[2], "o", color=color, ms=4)
            right.plot(e[1] / 1e6, e[2], "o", color=color, ms=4)
        if run["framework"] == "sf" and run.get("final_greedy_return") is not None:
            left.plot(run["train_s"] / 60, run["final_greedy_return"], "s", color=color, ms=6)
            right.plot(run["frames"] / 1e6, run["final_greedy_return"], "s", color=color, ms=6)
    for ax, xlabel in ((left, "training time (min)"), (right, "env frames (M)")):
        ax.axhline(TARGET, color="gray", ls="--", lw=1)
        ax.set_xlabel(xlabel)
        ax.set_ylabel("Pong return")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, title="line: training return; o: greedy eval; square: SF's final greedy eval",
                  title_fontsize=6)  # fmt: skip
    fig.suptitle("Pong on 2 cores, 2 x 16 envs (benchmarks/pong_learning.py)", fontsize=9)
    plots.save(fig, path)


def write(args: argparse.Namespace, commands: list[str]) -> None:
    from raylab.bench.machine import save_report

    results = collect(args)
    protocol = __doc__.split("\n\n", 2)[2]
    save_report(args.output, "pong_learning", protocol, " ; ".join(commands), results)
    plot(results, Path(args.output).with_suffix(".png"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--frameworks", nargs="+", default=["raylab", "sf"], choices=["raylab", "sf"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0])
    parser.add_argument("--cap-s", type=float, default=3600.0)
    parser.add_argument("--runs-dir", default="outputs/bench/pong_learning")
    parser.add_argument("--sf-python", default=".venv-sf/bin/python")
    parser.add_argument("--output", default=str(HERE / "pong_learning.json"))
    parser.add_argument("--collect", action="store_true", help="only rebuild the JSON and PNG from the run dirs")
    args = parser.parse_args(argv)
    command = [shlex.join(["python", "benchmarks/pong_learning.py", *(argv if argv is not None else sys.argv[1:])])]
    if args.collect and Path(args.output).is_file():  # the runs' own command (each run's is in its meta.json)
        command = [json.loads(Path(args.output).read_text())["command"]]
    if not args.collect:
        for seed in args.seeds:
            for framework in args.frameworks:
                run_one(framework, seed, args)
                write(args, command)
    write(args, command)
    return 0


if __name__ == "__main__":
    sys.exit(main())

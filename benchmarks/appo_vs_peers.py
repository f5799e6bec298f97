"""raylab APPO against Sample Factory 2.1.1 APPO and RLlib PPO on CartPole-v1, side by side in one run.

    make bench-peers                 # creates .venv-sf and .venv-rllib, then 3 seeds
    python benchmarks/appo_vs_peers.py --seeds 0 1 2 --sf-python .venv-sf/bin/python \
        --rllib-python .venv-rllib/bin/python --output benchmarks/cartpole_appo_vs_peers.json

One criterion for all three, the one RLlib and Sample Factory report: the mean return of the last 100 training
episodes reaches 475. Each framework runs its own tuned example at the same workers x envs per worker:
- raylab: ``+experiment=cartpole_appo`` with ``stop.train_return=475`` (greedy evaluations off);
- Sample Factory: its CartPole APPO example (sf_examples/train_gym_env.py's command line: batch 512, reward
  scale 0.1, no V-trace, 2 policy workers), on the CPU. Sample Factory has no stop-at-return, so every env
  is wrapped in a recorder that appends (time, return, length, the env's steps so far) at each episode's end
  to a file; this script merges those files, stops the run when the last 100 episodes reach the target, and
  counts its training time from the first env step (its start-up not counted, as raylab's is not);
- RLlib: its tuned CartPole PPO (as in benchmarks/ppo_vs_rllib.py; RLlib's APPO needs a GPU learner setup
  to be fast and its tuned CartPole APPO example is not tuned for 2 CPUs, so PPO is RLlib's strongest entry).
Each run is a fresh process; the variants alternate seed by seed. Sample Factory needs numpy < 2 and
gymnasium 0.29, RLlib gymnasium 1.2.2: each lives in its own virtualenv.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from collections import deque
from pathlib import Path
from typing import Any

from ppo_vs_rllib import raylab_train  # benchmarks/ is this script's directory

CAP_S = 300.0
TARGET = 475.0
WINDOW = 100
SHAPES = ((2, 8), (2, 32))
"""(rollout workers, envs per worker): every framework runs each."""
HERE = Path(__file__).resolve().parent


# -- Sample Factory (runs inside .venv-sf) ------------------------------------------------------------------------
def sf_make_env(full_env_name: str, cfg: Any = None, env_config: Any = None, render_mode: str | None = None) -> Any:
    """Sample Factory's env factory: gymnasium's env behind the episode recorder."""
    import gymnasium as gym

    class Recorder(gym.Wrapper):
        def __init__(self, env: Any, path: Path):
            super().__init__(env)
            self.file = open(path, "a", buffering=1)  # noqa: SIM115 (one line per episode, for the harness)
            self.steps = self.length = 0
            self.ret = 0.0

        def step(self, action: Any) -> Any:
            obs, reward, terminated, truncated, info = self.env.step(action)
            if self.steps == 0:
                self.file.write(f"S {time.time()}\n")
            self.steps += 1
            self.length += 1
            self.ret += float(reward)
            if terminated or truncated:
                self.file.write(f"E {time.time()} {self.ret} {self.length} {self.steps}\n")
                self.ret, self.length = 0.0, 0
            return obs, reward, terminated, truncated, info

    log_dir = Path(os.environ["RAYLAB_PEERS_EPISODES"])
    path = log_dir / f"{os.getpid()}_{time.monotonic_ns()}.log"
    return Recorder(gym.make(full_env_name, render_mode=render_mode), path)


def sf_run(workers: int, envs: int, seed: int, train_dir: str) -> int:
    from sample_factory.cfg.arguments import parse_full_cfg, parse_sf_args
    from sample_factory.envs.env_utils import register_env
    from sample_factory.train import run_rl

    register_env("CartPole-v1", sf_make_env)
    argv = [
        "--algo=APPO", "--env=CartPole-v1", "--use_rnn=False", "--recurrence=1", "--with_vtrace=False",
        "--batch_size=512", "--reward_scale=0.1", "--policy_workers_per_policy=2", "--device=cpu",
        f"--num_workers={workers}", f"--num_envs_per_worker={envs}", f"--seed={seed}", f"--train_dir={train_dir}",
        f"--experiment=cartpole_{workers}x{envs}_{seed}", "--restart_behavior=overwrite",
        f"--train_for_seconds={int(CAP_S) + 120}", "--save_every_sec=100000", "--experiment_summaries_interval=10",
    ]  # fmt: skip
    parser, _ = parse_sf_args(argv=argv)
    return int(run_rl(parse_full_cfg(parser, argv)))


def episodes(log_dir: Path) -> tuple[float | None, list[tuple[float, float, str, int]]]:
    """(the first env step's time, [(end time, return, env file, that env's steps so far)] by time)."""
    start, out = None, []
    for path in log_dir.glob("*.log"):
        text = path.read_text()
        for line in text[: text.rfind("\n") + 1].splitlines():
            kind, *fields = line.split()
            if kind == "S":
                start = min(start or float("inf"), float(fields[0]))
            else:
                out.append((float(fields[0]), float(fields[1]), path.name, int(fields[3])))
    return start, sorted(out)


def reached(eps: list[tuple[float, float, str, int]]) -> tuple[float, int, float] | None:
    """(time, env steps, mean) when the last WINDOW episodes first reach TARGET; None if not yet."""
    window: deque[float] = deque(maxlen=WINDOW)
    steps: dict[str, int] = {}
    for t, ret, env, env_steps in eps:
        window.append(ret)
        steps[env] = env_steps
        if len(window) == WINDOW and sum(window) / WINDOW >= TARGET:
            return t, sum(steps.values()), sum(window) / WINDOW
    return None


def sf_measure(sf_python: str, workers: int, envs: int, seed: int, run_dir: Path) -> dict[str, Any]:
    log_dir = run_dir / "episodes"
    log_dir.mkdir(parents=True, exist_ok=True)
    for old in log_dir.glob("*.log"):
        old.unlink()
    cmd = [sf_python, __file__, "--sf-run", str(workers), str(envs), str(seed), str(run_dir / "train_dir")]
    env = {**os.environ, "RAYLAB_PEERS_EPISODES": str(log_dir), "WANDB_MODE": "disabled"}
    with open(run_dir / "sf.out", "wb") as out:
        proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    hit, start = None, None
    try:
        while proc.poll() is None:
            time.sleep(0.25)
            start, eps = episodes(log_dir)
            hit = reached(eps)
            if hit is not None or (start is not None and time.time() - start > CAP_S):
                break
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGINT)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    if start is None:
        raise RuntimeError(f"Sample Factory never stepped an env: {(run_dir / 'sf.out').read_text()[-3000:]}")
    if hit is not None:
        t, steps, mean = hit
        return {"reached": True, "train_s": t - start, "env_steps": steps, "train_return": mean}
    _, eps = episodes(log_dir)
    last = {env: s for _, _, env, s in eps}
    tail = [r for _, r, _, _ in eps[-WINDOW:]]
    end = eps[-1][0] if eps else start
    return {"reached": False, "train_s": end - start, "env_steps": sum(last.values()),
            "train_return": sum(tail) / max(len(tail), 1)}  # fmt: skip


# -- raylab and RLlib ------------------------------------------------------------------------------------------
def raylab_measure(workers: int, envs: int, seed: int, run_dir: Path) -> dict[str, Any]:
    shape = [f"topology.num_workers={workers}", f"topology.envs_per_worker={envs}",
             f"topology.rollout_length={64 if envs <= 8 else 32}"]  # fmt: skip
    return raylab_train("cartpole_appo", shape, TARGET, seed, run_dir)


def rllib_measure(rllib_python: str, workers: int, envs: int, seed: int) -> dict[str, Any]:
    cmd = [rllib_python, str(HERE / "ppo_vs_rllib.py"), "--task", "cartpole", "--rllib-run", str(workers), str(envs),
           str(seed)]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"rllib run failed: {proc.stderr[-3000:]}")
    return dict(json.loads(lines[-1].removeprefix("RESULT ")))


def variants() -> dict[str, tuple[str, int, int]]:
    """Every framework at every shape: each ratio compares equal workers x envs per worker."""
    out = {}
    for workers, envs in SHAPES:
        out[f"raylab_appo_{workers}x{envs}"] = ("raylab", workers, envs)
        out[f"sf_appo_{workers}x{envs}"] = ("sf", workers, envs)
        out[f"rllib_ppo_{workers}x{envs}"] = ("rllib", workers, envs)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--sf-python", default=".venv-sf/bin/python")
    parser.add_argument("--rllib-python", default=".venv-rllib/bin/python")
    parser.add_argument("--output", default="benchmarks/cartpole_appo_vs_peers.json")
    parser.add_argument("--runs-dir", default="outputs/bench/cartpole_appo_vs_peers")
    parser.add_argument("--sf-run", nargs=4, metavar=("WORKERS", "ENVS", "SEED", "TRAIN_DIR"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.sf_run:
        workers, envs, seed, train_dir = args.sf_run
        return sf_run(int(workers), int(envs), int(seed), train_dir)

    from raylab.bench.machine import machine_info

    table = variants()
    names, runs = list(table), []
    for k, seed in enumerate(args.seeds):
        for name in names if k % 2 == 0 else list(reversed(names)):
            framework, workers, envs = table[name]
            run_dir = Path(args.runs_dir) / f"{name}_{seed}"
            run_dir.mkdir(parents=True, exist_ok=True)
            begin = time.perf_counter()
            if framework == "raylab":
                result = raylab_measure(workers, envs, seed, run_dir)
            elif framework == "sf":
                result = sf_measure(args.sf_python, workers, envs, seed, run_dir)
            else:
                result = rllib_measure(args.rllib_python, workers, envs, seed)
            result.update(variant=name, seed=seed, process_s=time.perf_counter() - begin)
            result["env_steps_per_s"] = result["env_steps"] / max(result["train_s"], 1e-9)
            runs.append(result)
            print(
                f"{name:18s} seed {seed}: {'reached' if result['reached'] else 'MISSED'} in {result['train_s']:.1f} s "
                f"train / {result['process_s']:.1f} s process, {result['env_steps']:,} env steps "
                f"({result['env_steps_per_s']:,.0f}/s)",
                flush=True,
            )
    summary: dict[str, Any] = {}
    for name in names:
        sel = [r for r in runs if r["variant"] == name]
        summary[name] = {
            "reached": sum(r["reached"] for r in sel),
            "runs": len(sel),
            "median_train_s": statistics.median(r["train_s"] for r in sel),
            "median_process_s": statistics.median(r["process_s"] for r in sel),
            "median_env_steps": statistics.median(r["env_steps"] for r in sel),
            "median_env_steps_per_s": statistics.median(r["env_steps_per_s"] for r in sel),
        }
    for workers, envs in SHAPES:
        ours = summary[f"raylab_appo_{workers}x{envs}"]
        for peer in (f"sf_appo_{workers}x{envs}", f"rllib_ppo_{workers}x{envs}"):
            if peer in summary:
                theirs = summary[peer]
                summary[f"raylab_appo_{workers}x{envs}_vs_{peer}"] = {
                    "env_steps_per_s_ratio": ours["median_env_steps_per_s"] / theirs["median_env_steps_per_s"],
                    "time_to_target_ratio": theirs["median_train_s"] / ours["median_train_s"],
                }
    versions = {}
    peers = (("sample_factory", args.sf_python, "sample-factory"), ("rllib", args.rllib_python, "ray"))
    for key, python, dist in peers:
        versions[key] = subprocess.run(
            [python, "-c", f"import importlib.metadata as m; print(m.version({dist!r}))"],
            capture_output=True, text=True,
        ).stdout.strip()  # fmt: skip
    report = {
        "benchmark": "cartpole_appo_vs_peers",
        "env": "CartPole-v1",
        "target": TARGET,
        "criterion": f"mean return of the last {WINDOW} training episodes >= {TARGET:g}",
        "versions": versions,
        "machine": machine_info(),
        "summary": summary,
        "runs": runs,
    }
    Path(args.output).write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

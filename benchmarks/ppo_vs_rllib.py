"""raylab PPO against RLlib 2.60 PPO, side by side in one run: CartPole-v1 or Pendulum-v1 (continuous actions).

    make bench-rllib                 # creates .venv-rllib (ray[rllib] of the same Ray version), then CartPole
    make bench-rllib TASK=pendulum   # Pendulum
    python benchmarks/ppo_vs_rllib.py --task cartpole --seeds 0 1 2 --rllib-python .venv-rllib/bin/python

The criterion is the one RLlib reports: the mean return of the last 100 training episodes reaches the task's
target (raylab: ``stop.train_return``). Both sides use the same number of rollout workers ("env runners") and
envs per worker. Each side runs its own tuned example for the task:
- CartPole (target 475, 2 workers x 1 and x 8 envs): RLlib's tuned CartPole PPO (lr 3e-4, 6 epochs,
  vf_loss_coeff 0.01, one 32-unit linear layer, shared value layers, its default 4000-step train batch);
  raylab's ``+experiment=cartpole_ppo`` with 1,024 steps per round.
- Pendulum (target -300, RLlib's own stop criterion for it; 2 workers x 8 envs): RLlib's tuned Pendulum PPO
  (MeanStdFilter observations, 1,024-step train batch, minibatch 128, lr 2e-4, gamma 0.95, lambda 0.5, relu;
  it uses 20 envs per runner, here 8 like raylab's); raylab's ``+experiment=pendulum_ppo``.
Each run is a fresh process; variants alternate seed by seed. Training time counts from the moment the
algorithm is built (RLlib) / every actor is up (raylab); ``process_s`` is the whole command. RLlib lives in
its own virtualenv because it pins gymnasium 1.2.2, older than raylab's.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CAP_S = 300.0


@dataclass(frozen=True)
class Task:
    env_id: str
    experiment: str
    target: float
    shapes: tuple[tuple[int, int], ...]
    """(rollout workers, envs per worker) pairs, each run by both frameworks."""

    def variants(self) -> dict[str, tuple[str, int, int]]:
        out = {}
        for runners, envs in self.shapes:
            for framework in ("raylab", "rllib"):
                out[f"{framework}_ppo_{runners}x{envs}"] = (framework, runners, envs)
        return out


TASKS = {
    "cartpole": Task("CartPole-v1", "cartpole_ppo", 475.0, ((2, 1), (2, 8))),
    "pendulum": Task("Pendulum-v1", "pendulum_ppo", -300.0, ((2, 8),)),
}


def rllib_config(task: str, runners: int, envs: int, seed: int) -> Any:
    """RLlib's own tuned PPO example for ``task`` (rllib/tuned_examples/ppo/), at ``runners`` x ``envs``."""
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig

    config = PPOConfig().environment(TASKS[task].env_id).debugging(seed=seed)
    if task == "cartpole":
        model = DefaultModelConfig(fcnet_hiddens=[32], fcnet_activation="linear", vf_share_layers=True)
        return (
            config.env_runners(num_env_runners=runners, num_envs_per_env_runner=envs)
            .training(lr=0.0003, num_epochs=6, vf_loss_coeff=0.01)
            .rl_module(model_config=model)
        )
    from ray.rllib.connectors.env_to_module import MeanStdFilter

    return (
        config.env_runners(
            num_env_runners=runners,
            num_envs_per_env_runner=envs,
            env_to_module_connector=lambda env, spaces, device: MeanStdFilter(),
        )
        .training(train_batch_size_per_learner=1024, minibatch_size=128, lr=0.0002, gamma=0.95, lambda_=0.5)
        .rl_module(model_config=DefaultModelConfig(fcnet_activation="relu"))
    )


def rllib_run(task: str, runners: int, envs: int, seed: int) -> dict[str, Any]:
    """Runs inside .venv-rllib: build RLlib's tuned PPO, train until the target or the cap."""
    import logging

    import ray

    ray.init(num_cpus=max(os.cpu_count() or 1, runners + 1), include_dashboard=False, logging_level=logging.ERROR)
    algo = rllib_config(task, runners, envs, seed).build_algo()
    target = TASKS[task].target
    start = time.perf_counter()
    reached, steps, ret = False, 0, float("nan")
    while time.perf_counter() - start < CAP_S:
        result = algo.train()
        runners_result = result.get("env_runners", {})
        ret = float(runners_result.get("episode_return_mean", float("nan")))
        steps = int(
            runners_result.get("num_env_steps_sampled_lifetime", result.get("num_env_steps_sampled_lifetime", 0))
        )
        if ret >= target:
            reached = True
            break
    seconds = time.perf_counter() - start
    algo.stop()
    ray.shutdown()
    return {"reached": reached, "train_s": seconds, "env_steps": steps, "train_return": ret}


def raylab_train(experiment: str, overrides: list[str], target: float, seed: int, run_dir: Path) -> dict[str, Any]:
    """One raylab run of ``+experiment=<experiment>`` to a training return of ``target`` (RLlib's criterion),
    greedy evaluations off; its result as the comparison scripts record it (appo_vs_peers.py uses it too)."""
    cmd = [
        sys.executable, "-m", "raylab.train", f"+experiment={experiment}", *overrides, "stop.mean_return=null",
        f"stop.train_return={target}", f"stop.seconds={CAP_S}", "stop.env_steps=null", "eval.every_seconds=null",
        "logger.console=false", f"seed={seed}", f"hydra.run.dir={run_dir}",
    ]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "WANDB_MODE": "disabled"})
    if proc.returncode != 0:
        raise RuntimeError(f"raylab run failed: {proc.stderr[-2000:]}")
    bench = json.loads((run_dir / "benchmark_metrics.json").read_text())
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    return {
        "reached": bench["stop_reason"].startswith("training return"),
        "train_s": bench["duration_hours"] * 3600,
        "env_steps": bench["total_timesteps"],
        "train_return": rows[-1].get("episode/return_mean"),
        "final_greedy_eval": bench["eval"]["return_mean"],
    }


def raylab_run(task: str, runners: int, envs: int, seed: int, run_dir: Path) -> dict[str, Any]:
    spec = TASKS[task]
    shape = [f"topology.num_workers={runners}", f"topology.envs_per_worker={envs}"]
    if task == "cartpole":
        shape.append(f"topology.rollout_length={512 if envs == 1 else 64}")  # 1,024 steps per round either way
    return raylab_train(spec.experiment, shape, spec.target, seed, run_dir)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--task", choices=list(TASKS), default="cartpole")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--rllib-python", default=".venv-rllib/bin/python")
    parser.add_argument("--output", help="default: benchmarks/<task>_ppo_vs_rllib.json")
    parser.add_argument("--rllib-run", nargs=3, type=int, metavar=("RUNNERS", "ENVS", "SEED"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.rllib_run:
        print("RESULT " + json.dumps(rllib_run(args.task, *args.rllib_run)), flush=True)
        return 0
    task, name_ = TASKS[args.task], f"{args.task}_ppo_vs_rllib"
    output = args.output or f"benchmarks/{name_}.json"
    variants = task.variants()

    from raylab.bench.machine import machine_info

    runs: list[dict[str, Any]] = []
    names = list(variants)
    for k, seed in enumerate(args.seeds):
        for name in names if k % 2 == 0 else list(reversed(names)):
            framework, runners, envs = variants[name]
            start = time.perf_counter()
            if framework == "rllib":
                shape = [str(runners), str(envs), str(seed)]
                cmd = [args.rllib_python, __file__, "--task", args.task, "--rllib-run", *shape]
                proc = subprocess.run(cmd, capture_output=True, text=True)
                lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
                if proc.returncode != 0 or not lines:
                    raise RuntimeError(f"rllib run failed: {proc.stderr[-3000:]}")
                result = json.loads(lines[-1].removeprefix("RESULT "))
            else:
                result = raylab_run(args.task, runners, envs, seed, Path("outputs/bench") / name_ / f"{name}_{seed}")
            result.update(variant=name, seed=seed, process_s=time.perf_counter() - start)
            result["env_steps_per_s"] = result["env_steps"] / max(result["train_s"], 1e-9)
            runs.append(result)
            print(
                f"{name:15s} seed {seed}: {'reached' if result['reached'] else 'MISSED'} in {result['train_s']:.1f} s "
                f"train / {result['process_s']:.1f} s process, {result['env_steps']:,} env steps "
                f"({result['env_steps_per_s']:,.0f}/s)",
                flush=True,
            )
    summary = {}
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
    for runners, envs in task.shapes:
        ours, theirs = summary[f"raylab_ppo_{runners}x{envs}"], summary[f"rllib_ppo_{runners}x{envs}"]
        summary[f"ratio_{runners}x{envs}"] = {
            "wall_time_rllib_over_raylab": theirs["median_train_s"] / ours["median_train_s"],
            "env_steps_per_s_raylab_over_rllib": ours["median_env_steps_per_s"] / theirs["median_env_steps_per_s"],
        }
    report = {
        "benchmark": name_,
        "env": task.env_id,
        "target": task.target,
        "criterion": f"mean return of the last 100 training episodes >= {task.target:g}",
        "rllib": subprocess.run(
            [args.rllib_python, "-c", "import ray; print(ray.__version__)"], capture_output=True, text=True
        ).stdout.strip(),
        "machine": machine_info(),
        "summary": summary,
        "runs": runs,
    }
    Path(output).write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

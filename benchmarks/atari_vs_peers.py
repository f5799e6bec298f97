"""raylab against Sample Factory 2.1.1 and RLlib on Atari Pong (and against Sample Factory on Procgen's CoinRun),
side by side in one run: env frames/s, CPU time per frame by process role, memory.

    make bench-atari-peers           # creates .venv-sf and .venv-rllib, then 2 rounds
    python benchmarks/atari_vs_peers.py --rounds 2 --sf-python .venv-sf/bin/python \
        --rllib-python .venv-rllib/bin/python --output benchmarks/atari_vs_peers.json
    python benchmarks/atari_vs_peers.py --game coinrun --rounds 2    # -> benchmarks/coinrun_vs_sf.json

Every framework trains Pong for --seconds with its own Atari example at one shape: 2 rollout workers x 16 envs,
the Nature CNN (32x8x8/4, 64x4x4/2, 64x3x3/1, 512), frame skip 4, 84x84 gray, 4 frames stacked, on the CPU:
- raylab: ``+experiment=pong_appo`` (``raylab_bf16``: APPO, EnvPool's ALE, the learner and the rollout encoder in
  bf16 where the CPU computes it natively, 4 epochs of 8 minibatches of 256; 2 epochs when the committed JSONs
  were measured) and, with ``--frameworks raylab ...``, ``+experiment=breakout_appo env.id=Pong-v5``
  (``raylab``: then the recipe in fp32; now the same settings as pong_appo);
- Sample Factory: its EnvPool Atari example (``sf_examples.envpool.atari.train_envpool_atari --env=atari_pong``,
  its defaults: asynchronous PPO, batch 256, 4 epochs), ``--num_workers=2 --env_agents=16`` (one patch for
  EnvPool 1.2.5 under gymnasium 0.29: ``SF_PATCH``);
- RLlib: its tuned Atari PPO (rllib/tuned_examples/ppo/atari_ppo.py: ale-py's ``ALE/Pong-v5`` behind
  ``wrap_atari_for_new_api_stack`` with 84x84 frames, frame stacking by its connectors, train batch 4000,
  minibatch 128, 10 epochs) with ``num_env_runners=2, num_envs_per_env_runner=16`` and the Nature CNN.
Each run is a fresh process tree, stopped (SIGINT) --seconds after its start, the frameworks alternating round by
round. Frames/s counts the env frames each framework reports (agent steps x 4) between the first report at least
--warmup seconds after the start and the last; the CPU seconds of every process of the tree (psutil, sampled
every 2 s) over the same window, by role (rollout, learner, inference, driver, Ray's own), are divided by those
frames; memory is the peak sum of the tree's proportional set sizes (PSS: shared pages counted once).

``--game coinrun``: raylab's ``+experiment=coinrun_appo`` (APPO, the Nature CNN on 64x64 RGB frames, 2 workers x 32
envs, chunks of 64 steps) against Sample Factory at the same shape. Sample Factory 2.1.1 ships no Procgen example, so
``SF_PROCGEN`` is its EnvPool Atari example with EnvPool's ``CoinrunEasy-v0`` (unlimited levels) in place of ALE:
the same wrapper (``EnvPoolResetFixWrapper``), its ``convnet_atari`` encoder (the Nature CNN, 512 units), no frame
skip or stack, and coinrun_appo's hyperparameters (rollout 64, 4 minibatches of 1,024, 2 epochs, gamma 0.999, lr
5e-4, clip 0.2, reward scale 0.1). RLlib is not run on CoinRun.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
WORKERS, ENVS = 2, 16
RAYLAB_VARIANTS = {
    "raylab": ["+experiment=breakout_appo", "env.id=Pong-v5"],
    "raylab_bf16": ["+experiment=pong_appo", "stop.mean_return=null"],
}
"""raylab's runs: breakout_appo on Pong, and pong_appo. Both are atari_appo's recipe now (4 epochs of 8 minibatches
of 256, precision from the machine), so the two differ only in their stop. When the committed JSONs were measured
(before 2026-11-29) breakout_appo was the fp32 recipe with 2 epochs of 4 minibatches of 512, and pong_appo made 2
epochs of 8 minibatches of 256 with bf16 where the CPU computes it natively."""
FRAME_SKIP = 4
"""Pong's shape above; RLlib runs Pong only, at this shape."""


@dataclass(frozen=True)
class Game:
    """One game's side-by-side: its shape, raylab's variants, Sample Factory's entry point and where it is written."""

    name: str
    workers: int
    envs: int
    frame_skip: int
    raylab: dict[str, list[str]]
    sf: list[str]
    peers: tuple[str, ...]
    default: tuple[str, ...]
    output: str

    @property
    def frameworks(self) -> tuple[str, ...]:
        return (*self.raylab, *self.peers)


SF_COINRUN_ARGS = [
    "--env_frameskip=1", "--env_framestack=1", "--use_record_episode_statistics=False", "--gamma=0.999",
    "--learning_rate=0.0005", "--lr_schedule=constant", "--rollout=64", "--batch_size=1024",
    "--num_batches_per_epoch=4", "--num_epochs=2", "--ppo_clip_ratio=0.2", "--reward_scale=0.1",
]  # fmt: skip
GAMES = {
    "pong": Game(
        "Pong", WORKERS, ENVS, FRAME_SKIP, RAYLAB_VARIANTS,
        ["-m", "sf_examples.envpool.atari.train_envpool_atari", "--env=atari_pong", "--experiment=pong"],
        ("sf", "rllib"), ("raylab_bf16", "sf", "rllib"), "benchmarks/atari_vs_peers.json",
    ),
    "coinrun": Game(
        "CoinRun (easy, unlimited levels)", 2, 32, 1, {"raylab": ["+experiment=coinrun_appo"]},
        ["-m", "sf_envpool_procgen", "--env=procgen_coinrun", "--experiment=coinrun", *SF_COINRUN_ARGS],
        ("sf",), ("raylab", "sf"), "benchmarks/coinrun_vs_sf.json",
    ),
}  # fmt: skip
NATURE_CNN = [[32, 8, 4, "valid"], [64, 4, 2, "valid"], [64, 3, 1, "valid"]]


# -- RLlib (runs inside .venv-rllib) --------------------------------------------------------------------------------
def rllib_run(seconds: float) -> int:
    import gymnasium as gym
    import ray
    from ray import tune
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.connectors.env_to_module.frame_stacking import FrameStackingEnvToModule
    from ray.rllib.connectors.learner.frame_stacking import FrameStackingLearner
    from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig
    from ray.rllib.env.wrappers.atari_wrappers import wrap_atari_for_new_api_stack

    def env_creator(cfg: dict[str, Any]) -> Any:
        import ale_py

        gym.register_envs(ale_py)
        return wrap_atari_for_new_api_stack(gym.make("ale_py:ALE/Pong-v5", **cfg), dim=84, framestack=None)

    tune.register_env("pong", env_creator)
    ray.init(num_cpus=WORKERS + 1, include_dashboard=False)
    config = (
        PPOConfig()
        .environment(
            "pong",
            env_config={"frameskip": 1, "full_action_space": False, "repeat_action_probability": 0.0},
            clip_rewards=True,
        )
        .env_runners(
            num_env_runners=WORKERS,
            num_envs_per_env_runner=ENVS,
            env_to_module_connector=lambda env, spaces=None, device=None: FrameStackingEnvToModule(num_frames=4),
        )
        .training(
            learner_connector=lambda obs_space, act_space: FrameStackingLearner(num_frames=4),
            train_batch_size_per_learner=4000,
            minibatch_size=128,
            lambda_=0.95,
            kl_coeff=0.5,
            clip_param=0.1,
            vf_clip_param=10.0,
            entropy_coeff=0.01,
            num_epochs=10,
            lr=0.00015,
            grad_clip=100.0,
            grad_clip_by="global_norm",
        )
        .rl_module(
            model_config=DefaultModelConfig(
                conv_filters=NATURE_CNN, conv_activation="relu", head_fcnet_hiddens=[512], vf_share_layers=True
            )
        )
    )
    algo = config.build_algo()
    start = time.time()
    while time.time() - start < seconds:
        result = algo.train()
        steps = result["env_runners"]["num_env_steps_sampled_lifetime"]
        print("PROGRESS " + json.dumps({"time": time.time(), "frames": steps * FRAME_SKIP}), flush=True)
    algo.stop()
    ray.shutdown()
    return 0


# -- Sample Factory (runs inside .venv-sf) --------------------------------------------------------------------------
SF_PATCH = """# EnvPool 1.2.5's pools never set gymnasium 0.29's VectorEnv.closed and .viewer, which close() reads
# (Sample Factory closes a probe env first, in a spawned process): class defaults, set in every process of the run.
try:
    import gymnasium.vector

    gymnasium.vector.VectorEnv.closed = False
    gymnasium.vector.VectorEnv.viewer = None
except Exception:
    pass
"""


SF_PROCGEN = '''"""Sample Factory's EnvPool Atari example with Procgen's CoinRun (EnvPool) in place of ALE."""
import sys

import envpool
from sample_factory.cfg.arguments import parse_full_cfg, parse_sf_args
from sample_factory.envs.env_utils import register_env
from sample_factory.train import run_rl
from sf_examples.envpool.atari.envpool_atari_params import add_atari_env_args, atari_override_defaults
from sf_examples.envpool.envpool_wrappers import EnvPoolResetFixWrapper


def make_coinrun(env_name, cfg, env_config, render_mode=None):
    seed = 0 if env_config is None else int(env_config.env_id) * cfg.env_agents
    env = envpool.make(
        "CoinrunEasy-v0", env_type="gym", num_envs=cfg.env_agents, num_levels=0, start_level=0, seed=seed
    )
    env = EnvPoolResetFixWrapper(env)
    env.num_agents = cfg.env_agents
    return env


def main():
    register_env("procgen_coinrun", make_coinrun)
    parser, partial_cfg = parse_sf_args(argv=None, evaluation=False)
    add_atari_env_args(partial_cfg.env, parser, evaluation=False)
    atari_override_defaults(partial_cfg.env, parser)
    return run_rl(parse_full_cfg(parser, None))


if __name__ == "__main__":
    sys.exit(main())
'''


def sf_patch_dir(run_dir: Path) -> Path:
    """A directory with a ``sitecustomize.py`` applying SF_PATCH, for PYTHONPATH: spawned processes run it too;
    and ``sf_envpool_procgen.py`` (SF_PROCGEN), Sample Factory's entry point for CoinRun."""
    path = run_dir / "sf_site"
    path.mkdir(parents=True, exist_ok=True)
    (path / "sitecustomize.py").write_text(SF_PATCH)
    (path / "sf_envpool_procgen.py").write_text(SF_PROCGEN)
    return path


# -- the harness (runs in raylab's environment) --------------------------------------------------------------------
def commands(framework: str, args: argparse.Namespace, run_dir: Path) -> list[str]:
    game: Game = GAMES[args.game]
    if framework in game.raylab:
        return [sys.executable, "-m", "raylab.train", *game.raylab[framework],
                f"topology.num_workers={game.workers}", f"topology.envs_per_worker={game.envs}",
                f"stop.seconds={args.seconds}", "stop.env_steps=null", "eval.every_seconds=null",
                "eval.final_episodes=1", "logger.console=false", f"hydra.run.dir={run_dir / 'run'}"]  # fmt: skip
    if framework == "sf":
        return [args.sf_python, *game.sf, f"--train_dir={run_dir / 'train_dir'}", "--device=cpu",
                f"--num_workers={game.workers}", "--num_envs_per_worker=1", f"--env_agents={game.envs}",
                f"--train_for_seconds={int(args.seconds)}", "--save_every_sec=100000",
                "--restart_behavior=overwrite", "--with_wandb=False"]  # fmt: skip
    return [args.rllib_python, __file__, "--rllib-run", str(args.seconds)]


def role(framework: str, proc: Any, root: int, sf_roles: dict[int, str]) -> str:
    if proc.pid == root:
        return "learner" if framework == "rllib" else "driver"  # RLlib's default num_learners=0: in its driver
    try:
        cmd = " ".join(proc.cmdline())
    except Exception:
        return "other"
    if framework == "sf":
        return sf_roles.get(proc.pid, "other")
    for key, name in (("Rollout", "rollout"), ("EnvRunner", "rollout"), ("Learner", "learner"), ("Eval", "eval")):
        if f"ray::{key}" in cmd or (key in cmd and "ray::" in cmd):
            return name
    if any(k in cmd for k in ("gcs_server", "raylet", "dashboard", "log_monitor", "ray/_private", "runtime_env")):
        return "ray"
    return "ray" if "ray::" in cmd or "default_worker.py" in cmd else "other"


SF_ROLE_LINES = (
    (re.compile(r"\]\[(\d+)\] Rollout worker \d+ starting"), "rollout"),
    (re.compile(r"InferenceWorker_p\d+-w\d+\s+pid (\d+)"), "inference"),
    (re.compile(r"LearnerWorker_p\d+\s+pid (\d+)"), "learner"),
)


def sf_roles_from_log(text: str) -> dict[int, str]:
    """Sample Factory's log lines carry the writing process's pid: [time][pid] message."""
    roles: dict[int, str] = {}
    for pattern, name in SF_ROLE_LINES:
        for m in pattern.finditer(text):
            roles.setdefault(int(m.group(1)), name)
    return roles


def progress(framework: str, run_dir: Path, out: str) -> list[tuple[float, float]]:
    """(time, env frames) reports so far."""
    if framework.startswith("raylab"):
        path = run_dir / "run" / "metrics.jsonl"
        start_path = run_dir / "start"
        if not path.exists():
            return []
        t0 = float(start_path.read_text())
        rows = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
        return [(t0 + r["time_s"], float(r["env_frames"])) for r in rows if "env_frames" in r and "time_s" in r]
    if framework == "sf":
        pat = re.compile(r"\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+)\]\[\d+\] Fps is .*?Total num frames: (\d+)")
        import datetime as dt

        return [
            (dt.datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp(), float(m.group(2)))
            for m in pat.finditer(out)
        ]
    return [
        (d["time"], float(d["frames"]))
        for d in (json.loads(x.removeprefix("PROGRESS ")) for x in out.splitlines() if x.startswith("PROGRESS "))
    ]


def measure(framework: str, args: argparse.Namespace, run_dir: Path) -> dict[str, Any]:
    import psutil

    run_dir.mkdir(parents=True, exist_ok=True)
    log = run_dir / "out.log"
    env = {**os.environ, "WANDB_MODE": "disabled", "PYTHONUNBUFFERED": "1"}
    if framework == "sf":
        env["PYTHONPATH"] = str(sf_patch_dir(run_dir))
    start = time.time()
    (run_dir / "start").write_text(str(start))
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            commands(framework, args, run_dir), stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True,
            # a background job (nohup ... &) inherits SIGINT ignored: give each run the default, so the SIGINT
            # that stops it is not lost and the run does not wait for the SIGKILL 60 s later
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )  # fmt: skip
    root = psutil.Process(proc.pid)
    samples: list[tuple[float, dict[int, tuple[str, float]]]] = []
    peak_pss = 0.0
    last_mem = 0.0
    try:
        while proc.poll() is None and time.time() - start < args.seconds:
            time.sleep(2.0)
            now = time.time()
            try:
                tree = [root, *root.children(recursive=True)]
            except psutil.NoSuchProcess:
                break
            sf_roles = sf_roles_from_log(log.read_text(errors="replace")) if framework == "sf" else {}
            cpu: dict[int, tuple[str, float]] = {}
            pss = 0.0
            for p in tree:
                try:
                    t = p.cpu_times()
                    cpu[p.pid] = (role(framework, p, root.pid, sf_roles), t.user + t.system)
                    if now - last_mem >= 6.0:
                        pss += p.memory_full_info().pss
                except (psutil.NoSuchProcess, psutil.AccessDenied):
                    continue
            if now - last_mem >= 6.0:
                peak_pss, last_mem = max(peak_pss, pss), now
            samples.append((now, cpu))
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGINT)
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    out_text = log.read_text(errors="replace")
    reports = progress(framework, run_dir, out_text)
    warm = [r for r in reports if r[0] - start >= args.warmup and r[1] > 0]
    if len(warm) < 2:
        raise RuntimeError(f"{framework}: fewer than 2 progress reports after warm-up; tail:\n{out_text[-3000:]}")
    (t1, f1), (t2, f2) = warm[0], warm[-1]
    frames = f2 - f1

    def cpu_at(t: float) -> dict[int, tuple[str, float]]:
        return min(samples, key=lambda s: abs(s[0] - t))[1]

    a, b = cpu_at(t1), cpu_at(t2)
    by_role: dict[str, float] = {}
    for pid, (name, seconds) in b.items():
        by_role[name] = by_role.get(name, 0.0) + seconds - (a.get(pid, (name, 0.0))[1])
    return {
        "frames_per_s": frames / (t2 - t1),
        "window_s": t2 - t1,
        "frames": frames,
        "cpu_ms_per_1k_frames": {k: 1e6 * v / frames for k, v in sorted(by_role.items())},
        "cpu_ms_per_1k_frames_total": 1e6 * sum(by_role.values()) / frames,
        "cpu_cores_used": sum(by_role.values()) / (t2 - t1),
        "peak_pss_mb": peak_pss / 2**20,
    }


ROLES = ("rollout", "inference", "learner")


def plot(report: dict[str, Any], path: Path) -> None:
    """Env frames/s per framework, and its CPU ms per 1,000 frames stacked by process role."""
    from raylab.bench import plots

    fig, axes = plots.figure(9.0, 3.6, 1, 2)  # 990 px at 110 dpi: drawn for the docs' ~1,000-px column
    left, right = list(axes[0])
    names = list(report["median_frames_per_s"])
    left.bar(names, [report["median_frames_per_s"][n] for n in names], color=[f"C{i}" for i in range(len(names))])
    left.set_ylabel("env frames/s (median)")
    bottom = [0.0] * len(names)
    for i, r in enumerate((*ROLES, "rest")):
        cpu = report["median_cpu_ms_per_1k_frames"]
        vals = [
            sum(v for k, v in cpu[n].items() if k not in ROLES) if r == "rest" else cpu[n].get(r, 0.0) for n in names
        ]
        right.bar(names, vals, bottom=bottom, label=r, color=f"C{i}", alpha=0.8)
        bottom = [b + v for b, v in zip(bottom, vals, strict=True)]
    right.set_ylabel("CPU ms per 1,000 env frames (median)")
    right.legend(fontsize=8)
    for ax in (left, right):
        ax.grid(alpha=0.3, axis="y")
        ax.tick_params(axis="x", labelsize=9)
    fig.suptitle(f"{report['protocol'].split(';')[0]} (benchmarks/atari_vs_peers.py)", fontsize=10)
    plots.save(fig, path)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=150.0, help="each run's wall time from its start")
    parser.add_argument("--warmup", type=float, default=45.0, help="seconds after the start not measured")
    parser.add_argument("--game", choices=sorted(GAMES), default="pong")
    parser.add_argument("--frameworks", nargs="+", help="default: the game's (pong: raylab_bf16 sf rllib)")
    parser.add_argument("--sf-python", default=".venv-sf/bin/python")
    parser.add_argument("--rllib-python", default=".venv-rllib/bin/python")
    parser.add_argument("--output", help="default: the game's (benchmarks/atari_vs_peers.json for pong)")
    parser.add_argument("--plot-only", action="store_true", help="only redraw the PNG from --output's JSON")
    parser.add_argument("--rllib-run", type=float, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.rllib_run is not None:
        return rllib_run(args.rllib_run)
    if args.plot_only:
        output = Path(args.output or GAMES[args.game].output)
        plot(json.loads(output.read_text()), output.with_suffix(".png"))
        return 0

    from raylab.bench.machine import machine_info

    game = GAMES[args.game]
    args.frameworks = args.frameworks or list(game.default)
    args.output = args.output or game.output
    unknown = " ".join(f for f in args.frameworks if f not in game.frameworks)
    if unknown:
        parser.error(f"--frameworks {unknown}: not run on {args.game}; choose from {' '.join(game.frameworks)}")

    root = Path(tempfile.mkdtemp(prefix="raylab-atari-peers-"))
    runs: dict[str, list[dict[str, Any]]] = {f: [] for f in args.frameworks}
    for k in range(args.rounds):
        for framework in args.frameworks if k % 2 == 0 else list(reversed(args.frameworks)):
            result = measure(framework, args, root / f"{framework}_{k}")
            runs[framework].append(result)
            print(
                f"round {k + 1} {framework}: {result['frames_per_s']:,.0f} frames/s, "
                f"{result['cpu_ms_per_1k_frames_total']:.0f} CPU ms per 1k frames "
                f"({result['cpu_cores_used']:.2f} cores), peak PSS {result['peak_pss_mb']:,.0f} MB",
                flush=True,
            )
    med = {f: statistics.median(r["frames_per_s"] for r in rs) for f, rs in runs.items()}
    report = {
        "benchmark": "atari_vs_peers",
        "game": args.game,
        "protocol": f"{game.name}, {game.workers} workers x {game.envs} envs, the Nature CNN, "
        f"{f'frame skip {game.frame_skip}' if game.frame_skip > 1 else 'no frame skip'}, CPU; {args.rounds} "
        f"rounds, frameworks alternating; each run {args.seconds:g} s from its start, measured after {args.warmup:g} s",
        "machine": machine_info(),
        "median_frames_per_s": med,
        **{
            f"{r}_over": {f: med[r] / v for f, v in med.items() if f not in game.raylab}
            for r in game.raylab
            if r in med
        },
        "median_cpu_ms_per_1k_frames": {
            f: {
                k: statistics.median(r["cpu_ms_per_1k_frames"].get(k, 0.0) for r in rs)
                for k in sorted({k for r in rs for k in r["cpu_ms_per_1k_frames"]})
            }
            for f, rs in runs.items()
        },
        "median_peak_pss_mb": {f: statistics.median(r["peak_pss_mb"] for r in rs) for f, rs in runs.items()},
        "runs": runs,
    }
    Path(args.output).write_text(json.dumps(report, indent=2) + "\n")
    plot(report, Path(args.output).with_suffix(".png"))
    print(json.dumps({k: v for k, v in report.items() if k.endswith("_over") or k.startswith("median_")}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

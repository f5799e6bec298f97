"""The rollout loop before and after a change: one rollout worker sampling in one process (env + inference +
chunk assembly, no Ray), two source trees alternating, for the workloads below.

    python benchmarks/rollout_loop.py --old /tmp/raylab-old --output benchmarks/rollout_loop.json

``overhead``: the loop's own cost, in microseconds per step (not agent steps/s), of a worker whose env and
policy cost nothing (8 envs, 64 steps a chunk; the best of 7 repeats of 200 chunks).

A workload of several policies (``simple_tag_mixed_ppo``) samples with its initial weights (no learner
publishes any). Each measurement is a fresh subprocess running ``raylab.bench.sampling._in_process`` (a new
weights version before each chunk, one torch thread) of the tree it is given, for ``--seconds`` after a first
chunk; the trees alternate round by round, starting with a different one each round. Medians over rounds, and
new / old.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

WORKLOADS = {
    "overhead": ["overhead"],
    "cartpole_appo": ["+experiment=cartpole_appo"],
    "pong_appo": ["+experiment=pong_appo"],
    "simple_tag_mixed_ppo": ["+experiment=simple_tag_mixed_ppo"],
}

OVERHEAD = """
import json, sys, time
import numpy as np
from raylab.envs.vector import VectorStep
from raylab.rollout.worker import RolloutWorker

class Env:  # a vector env that costs nothing: the loop's own cost per step
    num_envs, restarts = 8, 0
    def __init__(self):
        self.obs = np.zeros((8, 4), np.float32)
        self.rew, self.no = np.ones(8, np.float32), np.zeros(8, bool)
    def reset(self):
        return self.obs
    def step(self, actions):
        return VectorStep(self.obs, self.rew, self.no, self.no, [], [], None)

class Policy:  # acts for nothing
    version, last_log_probs = 0, np.zeros(8, np.float32)
    def __init__(self):
        self.actions = np.zeros(8, np.int64)
    def act(self, obs):
        return self.actions

worker = RolloutWorker(Env(), Policy(), worker_id=0, rollout_length=64)
best = float("inf")
for _ in range(7):
    start = time.perf_counter()
    for _ in range(200):
        worker.sample()
    best = min(best, (time.perf_counter() - start) / (200 * 64) * 1e6)
print(json.dumps(best))
"""

MEASURE = """
import json, sys, tempfile
from raylab.bench.sampling import _in_process
from raylab.config import resolve
from raylab.envs.registry import env_spaces
from raylab.train import compose
cfg = resolve(compose(sys.argv[2:] + ["logger.console=false"]), run_dir=tempfile.mkdtemp())
if cfg.policies:  # several policies: no learner's weights to load (_in_process builds one learner)
    import time
    from raylab.builders import build_rollout_worker
    worker = build_rollout_worker(cfg, env_spaces(cfg.env), 0)
    worker.sample_each()
    steps, start = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - start) < float(sys.argv[1]):
        steps += worker.sample_each()[1].num_steps
    print(json.dumps(steps / elapsed))
else:
    print(json.dumps(_in_process(cfg, env_spaces(cfg.env), float(sys.argv[1]))))
"""


def measure(tree: str, overrides: list[str], seconds: float) -> float:
    env = {**os.environ, "PYTHONPATH": tree}
    code = [OVERHEAD] if overrides == ["overhead"] else [MEASURE, str(seconds), *overrides]
    out = subprocess.run(
        [sys.executable, "-c", *code], env=env, cwd=tree, capture_output=True, text=True, check=True
    )  # fmt: skip
    return float(json.loads(out.stdout.strip().splitlines()[-1]))


def unit(workload: str) -> str:
    return "us per vector step" if workload == "overhead" else "agent steps/s"


def main() -> int:
    from raylab.bench.machine import machine_info

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--old", required=True, help="a checkout of the old tree (git worktree add DIR COMMIT)")
    parser.add_argument("--new", default=str(Path(__file__).resolve().parents[1]))
    parser.add_argument("--workloads", nargs="+", default=list(WORKLOADS), choices=list(WORKLOADS))
    parser.add_argument("--seconds", type=float, default=6.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--output", default="benchmarks/rollout_loop.json")
    parser.add_argument("--update", action="store_true", help="keep the output's other workloads (same commits)")
    args = parser.parse_args()
    trees = {"old": args.old, "new": args.new}
    commits = {
        k: subprocess.run(
            ["git", "-C", v, "rev-parse", "--short", "HEAD"], capture_output=True, text=True
        ).stdout.strip()
        for k, v in trees.items()
    }
    results = {}
    if args.update and Path(args.output).exists():
        previous = json.loads(Path(args.output).read_text())
        if previous["commits"] == commits:
            results = {k: v for k, v in previous["results"].items() if k not in args.workloads}
    for name in args.workloads:
        rows: dict[str, list[float]] = {"old": [], "new": []}
        for round_ in range(args.rounds):
            for which in ("old", "new") if round_ % 2 == 0 else ("new", "old"):
                rows[which].append(measure(trees[which], WORKLOADS[name], args.seconds))
            print(
                f"{name} round {round_ + 1}: old {rows['old'][-1]:,.1f}, new {rows['new'][-1]:,.1f} {unit(name)}",
                flush=True,
            )
        med = {k: statistics.median(v) for k, v in rows.items()}
        results[name] = {
            "overrides": WORKLOADS[name], "unit": unit(name), "median": med, "new_over_old": med["new"] / med["old"],
            "rounds": rows,
        }  # fmt: skip
        print(f"{name}: new/old {med['new'] / med['old']:.3f}", flush=True)
    report = {
        "benchmark": "rollout_loop",
        "protocol": f"one rollout worker in one process (raylab.bench.sampling._in_process), {args.rounds} rounds of "
        f"{args.seconds:g} s per tree, the trees alternating, a fresh process each; medians",
        "commits": commits,
        "machine": machine_info(),
        "results": results,
    }
    Path(args.output).write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""``bench sampling`` at two git revisions, alternating in one run: a before/after of a change to the rollout
path that no option switches (a worker's own code), as a ratio of medians.

    python benchmarks/sampling_revisions.py --before a2a456e --after HEAD --rounds 5 \\
        --output benchmarks/sampling_cartpole_weight_load.json -- +experiment=cartpole_appo --workers 1 2 --calls 2

Each revision is checked out into a temporary git worktree and run as its own process
(``python -m raylab.bench sampling --rounds 1 ...`` with that worktree first on PYTHONPATH, so the driver and the
rollout actors it starts both import it). The two alternate, the first in each round switching, for --rounds
rounds; each run measures its own env-only rate, so each round's efficiency is against the env as fast as it ran
then. The summary takes medians over rounds per revision and shape, and the after/before ratio of agent steps/s.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from raylab.bench.machine import save_report  # noqa: E402

KEYS = ("agent_steps_per_s", "efficiency", "env_share", "inference_share", "sync_share", "transport_share")


def git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, check=True, capture_output=True, text=True).stdout.strip()


def run_bench(tree: Path, bench_args: list[str], output: Path) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": f"{tree}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    command = [sys.executable, "-m", "raylab.bench", "sampling", "--rounds", "1", "--output", str(output)]
    subprocess.run([*command, *bench_args], cwd=tree, env=env, check=True, stdout=subprocess.DEVNULL)
    return json.loads(output.read_text())


def summarize(runs: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    before, after = runs
    summary: dict[str, Any] = {}
    for shape in runs[before][0]["workers"]:
        row: dict[str, Any] = {}
        for name, reports in runs.items():
            row[name] = {k: round(statistics.median(r["workers"][shape][k] for r in reports), 4) for k in KEYS}
        row["ratio"] = round(row[after]["agent_steps_per_s"] / row[before]["agent_steps_per_s"], 3)
        summary[shape] = row
    for name, reports in runs.items():
        summary.setdefault("env_only_agent_steps_per_s", {})[name] = round(
            statistics.median(r["env_only_agent_steps_per_s"] for r in reports), 1
        )
    return summary


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--before", required=True)
    p.add_argument("--after", default="HEAD")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--output", required=True)
    p.add_argument("bench_args", nargs=argparse.REMAINDER, help="after --: the sampling bench's own arguments")
    args = p.parse_args()
    bench_args = [a for a in args.bench_args if a != "--"]
    revisions = {"before": git("rev-parse", "--short", args.before), "after": git("rev-parse", "--short", args.after)}
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in revisions}
    with tempfile.TemporaryDirectory(prefix="raylab-revisions-") as tmp:
        trees = {name: Path(tmp) / name for name in revisions}
        for name, rev in revisions.items():
            git("worktree", "add", "--detach", str(trees[name]), rev)
        try:
            for round_ in range(args.rounds):
                order = list(revisions) if round_ % 2 == 0 else list(reversed(revisions))
                for name in order:
                    report = run_bench(trees[name], bench_args, Path(tmp) / f"{name}_{round_}.json")
                    runs[name].append(report)
                    shapes = {
                        w: f"{r['agent_steps_per_s']:,.0f} ({r['efficiency']:.1%})"
                        for w, r in report["workers"].items()
                    }
                    print(f"round {round_ + 1}/{args.rounds} {name} ({revisions[name]}): {shapes}", flush=True)
        finally:
            for tree in trees.values():
                git("worktree", "remove", "--force", str(tree))
    summary = summarize(runs)
    protocol = (
        f"`bench sampling {' '.join(bench_args)} --rounds 1` at each revision in its own process, alternating "
        f"(the first switching each round), {args.rounds} rounds; medians per revision"
    )
    results = {
        "revisions": revisions,
        "bench_args": bench_args,
        "rounds": args.rounds,
        "summary": summary,
        "runs": {
            name: [{k: r[k] for k in ("env_only_agent_steps_per_s", "workers")} for r in rs]
            for name, rs in runs.items()
        },
    }
    command = " ".join(["python", "benchmarks/sampling_revisions.py", *sys.argv[1:]])
    save_report(args.output, "sampling_revisions", protocol, command, results)
    for shape, row in summary.items():
        if shape != "env_only_agent_steps_per_s":
            b, a = row["before"], row["after"]
            print(
                f"{shape}: {b['agent_steps_per_s']:,.0f} -> {a['agent_steps_per_s']:,.0f} agent steps/s "
                f"({row['ratio']:.2f}x), efficiency {b['efficiency']:.1%} -> {a['efficiency']:.1%}"
            )


if __name__ == "__main__":
    main()

"""The frame path of two source trees, before and after a change, alternating in one run.

    python benchmarks/frame_path_ab.py --old /tmp/raylab-358b6eb --new . --pairs 3 --workloads pong \\
        --output benchmarks/frame_path_spaces.json

Each pair runs ``benchmarks/frame_path.py`` (one round of each measurement: env only, one rollout worker in
process, 1 and 2 rollout actors on Ray; fp32 and bf16 rollouts) once from each tree, in its own process with
that tree first on PYTHONPATH, the order swapping every pair (old, new; new, old; ...). The figure per tree and
measurement is the median over its runs; ``new_over_old`` is the ratio of those medians. The old tree runs its
own copy of frame_path.py, so the protocol is the one each commit shipped.
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


def run_tree(tree: Path, args: argparse.Namespace) -> dict[str, Any]:
    """One frame_path.py run from ``tree``; its JSON report."""
    out = Path(tempfile.mkdtemp(prefix="frame-path-ab-")) / "report.json"
    cmd = [
        sys.executable, "benchmarks/frame_path.py", "--workloads", *args.workloads, "--workers",
        *map(str, args.workers), "--rounds", "1", "--seconds", str(args.seconds), "--output", str(out),
    ]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tree), os.environ.get("PYTHONPATH", "")]).rstrip(":")}
    subprocess.run(cmd, cwd=tree, env=env, check=True)
    return json.loads(out.read_text())


def commit(tree: Path) -> str | None:
    """The tree's commit, ``-dirty`` when it has uncommitted changes (None outside git)."""
    try:
        head = subprocess.run(["git", "-C", str(tree), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()  # fmt: skip
        dirty = subprocess.run(["git", "-C", str(tree), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    except (OSError, subprocess.CalledProcessError):
        return None
    return f"{head}-dirty" if dirty else head


def summarize(runs: dict[str, list[dict[str, Any]]], workloads: list[str]) -> dict[str, Any]:
    """Per workload and measurement: each tree's runs, their median, and new over old."""
    out: dict[str, Any] = {}
    for name in workloads:
        per: dict[str, dict[str, list[float]]] = {}
        for tree, reports in runs.items():
            for report in reports:
                for key, value in report["results"][name]["median_agent_steps_per_s"].items():
                    per.setdefault(key, {}).setdefault(tree, []).append(value)
        frames = runs["old"][0]["results"][name]["frame_skip"]
        rows = {}
        for key, by_tree in per.items():
            med = {tree: statistics.median(v) for tree, v in by_tree.items()}
            rows[key] = {
                "old_agent_steps_per_s": by_tree.get("old", []),
                "new_agent_steps_per_s": by_tree.get("new", []),
                "old_median_frames_per_s": med["old"] * frames,
                "new_median_frames_per_s": med["new"] * frames,
                "new_over_old": med["new"] / med["old"],
            }
        out[name] = {"frame_skip": frames, "measurements": rows}
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--old", type=Path, required=True, help="the source tree before the change")
    parser.add_argument("--new", type=Path, default=Path("."), help="the source tree after it (default: here)")
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--workloads", nargs="+", default=["pong"])
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--output", default="benchmarks/frame_path_ab.json")
    args = parser.parse_args()
    trees = {"old": args.old.resolve(), "new": args.new.resolve()}
    for name, tree in trees.items():
        if not (tree / "benchmarks" / "frame_path.py").is_file():
            print(f"frame_path_ab: --{name} {tree} has no benchmarks/frame_path.py: give a raylab checkout")
            return 2
    runs: dict[str, list[dict[str, Any]]] = {"old": [], "new": []}
    for pair in range(args.pairs):
        for name in ("old", "new") if pair % 2 == 0 else ("new", "old"):
            print(f"frame_path_ab: pair {pair + 1}/{args.pairs}: {name} ({trees[name]})", flush=True)
            runs[name].append(run_tree(trees[name], args))
    report = {
        "benchmark": "frame_path_ab",
        "protocol": f"{args.pairs} pairs, the order swapping each pair; each run benchmarks/frame_path.py with one "
        f"round of {args.seconds:g} s per measurement from its own tree; medians over a tree's runs",
        "sources": {name: {"path": str(tree), "commit": commit(tree)} for name, tree in trees.items()},
        "machine": runs["new"][0]["machine"],
        "results": summarize(runs, args.workloads),
    }
    Path(args.output).write_text(json.dumps(report, indent=2) + "\n")
    for name, entry in report["results"].items():
        for key, row in entry["measurements"].items():
            print(f"  {name} {key}: old {row['old_median_frames_per_s']:,.0f} frames/s, new "
                  f"{row['new_median_frames_per_s']:,.0f}: new/old {row['new_over_old']:.3f}")  # fmt: skip
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

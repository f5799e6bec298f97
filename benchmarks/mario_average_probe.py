"""Newest weights against learner.average_rate's average, checkpoint by checkpoint, from one run's evaluations.

The run and its evaluations (each periodic checkpoint and final.pt scored with both weights, 10 greedy episodes at
seed 11):

    python -m raylab.train +experiment=mario_dqn seed=3 learner.average_rate=0.001 checkpoint.every_seconds=210 \\
        checkpoint.keep=30 stop.seconds=2100 eval.every_seconds=null stop.eval_extras=null eval.final_episodes=0
    python -m raylab.evaluate run_dir=<run> checkpoint=<step_….pt | final.pt> weights=<newest | average> \\
        episodes=10 seed=11
    python benchmarks/mario_average_probe.py <run>/eval

benchmarks/mario_average_probe/ holds one such run's config.yaml and eval/ JSONs. A checkpoint scored twice with
the same weights (raylab.evaluate then writes <name>-2.json) is refused: keep one of the two.
"""

from __future__ import annotations

import json
import re
import statistics
import sys
from pathlib import Path


def _order(name: str) -> int:
    steps = re.findall(r"\d+", name)
    return int(steps[0]) if name.startswith("step_") and steps else sys.maxsize


def main(eval_dir: Path) -> None:
    runs: dict[str, dict[str, float]] = {}
    for path in sorted(eval_dir.glob("*.json")):
        match = re.fullmatch(r"(.*)_(newest|average)(-\d+)?", path.stem)
        if match:
            scored = runs.setdefault(match.group(1), {})
            if match.group(2) in scored:
                sys.exit(f"{match.group(1)} is scored twice with weights={match.group(2)}: keep one of its files")
            scored[match.group(2)] = json.loads(path.read_text())["extras_mean"]["x_pos"]
    pairs = [(name, runs[name]) for name in sorted(runs, key=_order) if len(runs[name]) == 2]
    print("| checkpoint | newest: greedy mean x | average: greedy mean x | average - newest |")
    print("|---|---|---|---|")
    for name, x in pairs:
        print(f"| {name} | {x['newest']:.0f} | {x['average']:.0f} | {x['average'] - x['newest']:+.0f} |")
    diffs = [x["average"] - x["newest"] for _, x in pairs]
    for which in ("newest", "average"):
        values = [x[which] for _, x in pairs]
        print(f"{which}: mean {statistics.mean(values):.0f}, min {min(values):.0f}, max {max(values):.0f}")
    ahead = sum(d > 0 for d in diffs)
    print(f"average - newest: median {statistics.median(diffs):+.0f}, ahead at {ahead} of {len(diffs)}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python benchmarks/mario_average_probe.py <run>/eval")
    main(Path(sys.argv[1]))

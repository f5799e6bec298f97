"""Mario's curves: a learn table's greedy evaluations against agent steps, their mean x-position (the flag pole
of World 1-1 stands at x ≈ 3,160, dashed) and their flag rate (the stop rule's 0.8, dashed), one line per seed.
Reads the JSON only: ``make bench-mario-learning``'s mario_dqn_learning.json, or the recipe table's
mario_learning.json.

    python benchmarks/mario_learning_plot.py benchmarks/mario_dqn_learning.json   # -> ..._curves.png
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from raylab.bench import plots  # noqa: E402

FLAG_X = 3160  # World 1-1's flag pole, in the env's x_pos units


def plot(report: dict[str, Any], path: Path) -> None:
    fig, axes = plots.figure(9, 3.4, 1, 2)
    left, right = np.asarray(axes).reshape(-1)
    runs = sorted((r for r in report["runs"] if r["ok"]), key=lambda r: (r["variant"], r["seed"]))
    for i, run in enumerate(runs):
        evals = run.get("eval_extras") or []
        steps = [e[1] / 1e6 for e in evals]
        label = f"{run['variant']} seed {run['seed']}"
        left.plot(steps, [e[2].get("x_pos", float("nan")) for e in evals], "o-", color=f"C{i}", ms=3, lw=1, label=label)
        right.plot(steps, [e[2].get("flag_get", float("nan")) for e in evals], "o-", color=f"C{i}", ms=3, lw=1,
                   label=label)  # fmt: skip
    left.axhline(FLAG_X, color="gray", ls="--", lw=1, label="the flag (x ≈ 3,160)")
    right.axhline(0.8, color="gray", ls="--", lw=1, label="stop: flag rate 0.8")
    left.set_ylabel("greedy mean x-position (10 episodes)")
    right.set_ylabel("greedy flag rate (10 episodes)")
    right.set_ylim(-0.05, 1.05)
    for ax in (left, right):
        ax.set_xlabel("agent steps (millions; frames = 4x)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    plots.save(fig, path)


def main(argv: list[str] | None = None) -> int:
    return plots.curves_main(plot, __doc__.splitlines()[0], "benchmarks/mario_learning.json", argv)


if __name__ == "__main__":
    raise SystemExit(main())

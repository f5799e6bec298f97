"""The Atari table's curves: one panel per game of ``make bench-atari-table``'s JSON, the training return (the
mean of the recent whole games, sampled actions), the greedy evaluations and the final one (10 whole games each)
against frames, with CleanRL's PPO score at 40M frames dashed where it has one (docs/tables/atari.py). Reads the
JSON only.

    python benchmarks/atari_table_plot.py benchmarks/atari_table.json   # -> benchmarks/atari_table_curves.png
"""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from docs.tables.atari import CLEANRL_PPO_ATARI  # noqa: E402
from raylab.bench import plots  # noqa: E402

FRAME_SKIP = 4


def plot(report: dict[str, Any], path: Path) -> None:
    runs = sorted((r for r in report["runs"] if r["ok"]), key=lambda r: r["variant"])
    cols = max(1, min(3, len(runs)))
    rows = max(1, math.ceil(len(runs) / cols))
    fig, grid = plots.figure(4.2 * cols, 3.2 * rows, rows, cols)
    axes = list(np.asarray(grid).reshape(-1))
    for ax in axes[len(runs) :]:
        ax.set_visible(False)
    for ax, run in zip(axes, runs, strict=False):
        curve = run.get("train_curve") or []
        if curve:
            ax.plot([c[2] / 1e6 for c in curve], [c[3] for c in curve], color="C0", lw=1.2, label="training (sampled)")
        evals = run.get("evals") or []
        if evals:
            ax.plot([e[1] * FRAME_SKIP / 1e6 for e in evals], [e[2] for e in evals], "o-", color="C1", ms=3, lw=1,
                    label="greedy, 10 games")  # fmt: skip
        if run.get("final_eval_return") is not None:
            ax.plot([run["env_steps"] * FRAME_SKIP / 1e6], [run["final_eval_return"]], "*", color="C3", ms=9,
                    label="final greedy, 10 games")  # fmt: skip
        reference = CLEANRL_PPO_ATARI.get(run["variant"])
        where = "best"
        if reference is not None:
            label = "CleanRL envpool PPO, 40M frames" + ("" if reference[0] != "—" else " (JAX)")
            shown = [c[3] for c in curve] + [e[2] for e in evals] + [run.get("final_eval_return") or 0.0]
            if reference[3] <= 4 * max(shown):
                ax.axhline(reference[3], color="gray", ls="--", lw=1, label=label)
            else:  # a line that far up would flatten the curves: the legend gives the figure instead
                ax.plot([], [], color="gray", ls="--", lw=1, label=f"CleanRL, 40M: {reference[3]:,.0f} (off scale)")
                where = "lower right"  # below a rising curve's end
        ax.set_title(run["variant"], fontsize=10)
        ax.set_xlabel("frames (millions)")
        ax.set_ylabel("return per game (raw)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc=where)
    plots.save(fig, path)


def main(argv: list[str] | None = None) -> int:
    return plots.curves_main(plot, __doc__.splitlines()[0], "benchmarks/atari_table.json", argv)


if __name__ == "__main__":
    raise SystemExit(main())

"""Plot a run's training curves against env steps from its metrics.jsonl (mean return and, on Mario, x_pos).

    python benchmarks/run_curve.py RUN_DIR OUTPUT.png [--title TEXT]

Each point is a report row: the mean over the last 100 training episodes at that moment.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from raylab.bench import plots

PANELS = (("episode/return_mean", "mean return (last 100 episodes)"), ("episode/x_pos_mean", "mean x_pos (last 100)"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("run_dir")
    parser.add_argument("output")
    parser.add_argument("--title", default="")
    args = parser.parse_args()
    rows = [json.loads(line) for line in (Path(args.run_dir) / "metrics.jsonl").read_text().splitlines()]
    panels = [(k, label) for k, label in PANELS if any(k in r for r in rows)]
    fig, axes = plots.figure(5.0 * len(panels), 3.6, 1, len(panels))
    row_axes = [axes] if len(panels) == 1 else list(axes[0])
    for ax, (key, label) in zip(row_axes, panels, strict=True):
        points = [(r["env_steps"], r[key]) for r in rows if key in r]
        ax.plot([p[0] for p in points], [p[1] for p in points], color="tab:blue")
        ax.set_xlabel("env steps (agent steps; x4 frames)")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
    if args.title:
        fig.suptitle(args.title, fontsize=10)
    plots.save(fig, Path(args.output))
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()

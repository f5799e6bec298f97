"""Matplotlib without a display: the figure and save helpers every PNG uses (raylab.metrics.analysis, and
the benchmarks through raylab.bench.plots). Matplotlib is imported only when a figure is made."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def figure(width: float = 7.0, height: float = 4.0, rows: int = 1, cols: int = 1) -> tuple[Any, Any]:
    """A figure and its axes (one Axes, or a rows x cols array of them)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt.subplots(rows, cols, figsize=(width, height), squeeze=rows * cols == 1)


def save(fig: Any, path: Path) -> None:
    import matplotlib.pyplot as plt

    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)

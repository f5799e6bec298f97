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


def short_number(x: float, _pos: Any = None) -> str:
    """An axis tick without its trailing zeros: 800k, 1.2M, 35 (long tick labels collide on a shared axis)."""
    for scale, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= scale:
            return f"{x / scale:.3g}{suffix}"
    return f"{x:.3g}"


def short_ticks(ax: Any, axis: str = "x") -> None:
    """``short_number`` ticks on one axis of ``ax``."""
    from matplotlib.ticker import FuncFormatter

    (ax.xaxis if axis == "x" else ax.yaxis).set_major_formatter(FuncFormatter(short_number))


def slanted_labels(ax: Any, labels: list[str]) -> None:
    """Category labels under bars, slanted and anchored at their right end so that long names do not overlap."""
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels(labels, rotation=30, ha="right", rotation_mode="anchor", fontsize=8)

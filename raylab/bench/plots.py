"""Matplotlib without a display, shared by every benchmark's PNG."""

from __future__ import annotations

import json
from collections.abc import Callable
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


def write_report(output: Path, report: dict[str, Any], plot: Callable[[dict[str, Any], Path], None],
                 headline: dict[str, Any]) -> None:  # fmt: skip
    """A benchmark's JSON (atomically) and its PNG beside it; prints the headline figures and the paths."""
    from raylab.driver.outputs import atomic_write

    atomic_write(output, json.dumps(report, indent=2) + "\n")
    plot(report, output.with_suffix(".png"))
    print(json.dumps(headline, indent=1))
    print(f"wrote {output} and {output.with_suffix('.png')}")

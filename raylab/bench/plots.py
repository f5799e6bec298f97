"""Matplotlib without a display, shared by every benchmark's PNG."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def figure(width: float = 7.0, height: float = 4.0) -> tuple[Any, Any]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt.subplots(figsize=(width, height))


def save(fig: Any, path: Path) -> None:
    import matplotlib.pyplot as plt

    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)

"""Matplotlib without a display, shared by every benchmark's PNG: ``figure`` and ``save`` live in
raylab.metrics.plots (the run analysis uses them too), with the axis helpers ``short_ticks`` and
``slanted_labels``; ``write_report`` writes a benchmark's JSON and PNG."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from raylab.metrics.plots import figure, save, short_ticks, slanted_labels

__all__ = ["figure", "save", "short_ticks", "slanted_labels", "write_report"]


def write_report(output: Path, report: dict[str, Any], plot: Callable[[dict[str, Any], Path], None],
                 headline: dict[str, Any]) -> None:  # fmt: skip
    """A benchmark's JSON (atomically) and its PNG beside it; prints the headline figures and the paths."""
    from raylab.driver.outputs import atomic_write

    atomic_write(output, json.dumps(report, indent=2) + "\n")
    plot(report, output.with_suffix(".png"))
    print(json.dumps(headline, indent=1))
    print(f"wrote {output} and {output.with_suffix('.png')}")


def curves_main(
    plot: Callable[[dict[str, Any], Path], None], description: str, example: str, argv: list[str] | None = None
) -> int:
    """The command line of a script that draws a benchmark JSON's curves: ``<input> [--output]``, by default
    ``<input stem>_curves.png`` beside it (``example``: the JSON it is meant for)."""
    import argparse

    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("input", help=f"the benchmark's JSON ({example})")
    parser.add_argument("--output", help="the figure (default: <input>_curves.png)")
    args = parser.parse_args(argv)
    source = Path(args.input)
    out = Path(args.output) if args.output else source.with_name(source.stem + "_curves.png")
    plot(json.loads(source.read_text()), out)
    print(f"wrote {out}")
    return 0

"""argparse types of the bench commands' arguments: a bad value is refused when the command line is read,
in one line (raylab/bench/__main__.py), before anything is measured or written."""

from __future__ import annotations

import argparse
from pathlib import Path


def count(text: str) -> int:
    """An integer >= 1 (workers, seeds' rounds, repeats, snakes, ...)."""
    value = int(_number(text, int))
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def duration(text: str) -> float:
    """A duration > 0."""
    value = _number(text, float)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be > 0 seconds, got {value:g}")
    return value


def output_file(text: str) -> str:
    """A file to write: not a directory, not under a file."""
    path = Path(text)
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a directory: give a file path, e.g. {path / 'result.json'}")
    for parent in path.parents:
        if parent.is_file():
            raise argparse.ArgumentTypeError(f"{text} is under {parent}, which is a file: choose another path")
    return text


def _number(text: str, kind: type[int] | type[float]) -> int | float:
    try:
        return kind(text)
    except ValueError:
        what = "an integer" if kind is int else "a number"
        raise argparse.ArgumentTypeError(f"must be {what}, got '{text}'") from None

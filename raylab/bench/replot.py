"""``plot``: a benchmark's PNG drawn again from its committed JSON, without running the benchmark.

    python -m raylab.bench plot benchmarks/cartpole_dqn_learning.json benchmarks/learner_cuda_dqn.json

Each JSON's ``benchmark`` field picks the plot its own command draws (``learn``, ``learner``,
``snake_dqn_loop``); the PNG is written beside the JSON, as that command writes it. CoinRun's sequential-against-
parallel figure is redrawn by ``python -m raylab.bench compare`` over the committed run folders.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from raylab.errors import ConfigError


def _learn(report: dict[str, Any], path: Path) -> None:
    from raylab.bench import learn

    learn.plot(report, path)


def _learner(report: dict[str, Any], path: Path) -> None:
    from raylab.bench import learner_speed

    first = next(iter(report["batch_sizes"].values()))
    variants = list(report.get("variant_options") or first["updates_per_s"])
    learner_speed._plot(report["batch_sizes"], variants, learner_speed.plot_title(report), path)


def _snake_loop(report: dict[str, Any], path: Path) -> None:
    from raylab.bench import snake_loop

    snake_loop._plot(report["median_steps_per_s"], report["runs"], path)


PLOTS: dict[str, Callable[[dict[str, Any], Path], None]] = {
    "learn": _learn,
    "learner": _learner,
    "snake_dqn_loop": _snake_loop,
}
"""Each benchmark kind this command redraws, and how."""


def add_parser(commands: Any) -> None:
    p = commands.add_parser("plot", help="redraw benchmark PNGs from their JSON (no benchmark is run)")
    p.add_argument("reports", nargs="+", type=Path, metavar="JSON", help="benchmark JSON files; each PNG goes beside")
    p.set_defaults(func=run)


def run(args: argparse.Namespace, overrides: list[str]) -> int:
    if overrides:
        raise ConfigError(f"plot takes only JSON files, got {' '.join(overrides)}")
    for path in args.reports:
        if not path.is_file():
            raise ConfigError(f"{path}: no such file")
        report = json.loads(path.read_text())
        kind = report.get("benchmark")
        if kind not in PLOTS:
            raise ConfigError(f"{path}: benchmark kind {kind!r} has no re-plot; kinds: {', '.join(PLOTS)}")
        PLOTS[kind](report, path.with_suffix(".png"))
        print(f"wrote {path.with_suffix('.png')}")
    return 0

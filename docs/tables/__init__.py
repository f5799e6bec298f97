"""Markdown tables of the committed benchmark results, made from their JSON so that no figure can drift from
its data.

    python -m docs.tables                      # every table, from ./benchmarks (run at the checkout's root)
    python -m docs.tables e2e_cartpole a3c_scaling --benchmarks path/to/benchmarks

The documentation site renders them when it is built (docs/hooks.py: a ``<!-- raylab:bench NAME -->`` line
in a page becomes table NAME), so its benchmark pages are always the JSON's. Each table is followed by the
machine every file was measured on (its ``machine`` field: date, CPU, cores, GPU, versions, commit).
tests/unit/test_benchmark_tables.py renders every table over the committed files. Standard library only, and
not part of the installed raylab: it lives with the docs it writes.

    format.py       where the JSON is, number formats, a Markdown table, a file's machine line
    registry.py     TABLES (every table by name: its files, renderer and title) and table()
    learning.py     the renderers of learning runs (bench learn, before/after, fixed budget, faults)
    peers.py        ... of raylab beside RLlib and Sample Factory
    memory.py       ... of the tasks that need memory (benchmarks/memory_tasks.py, a file per group)
    throughput.py   ... of sampling, raw envs, the arena and A3C scaling
    components.py   ... of one component alone (learner, act(), Snake loop, timers, replay snapshots)
"""

from __future__ import annotations

import argparse
from pathlib import Path

from .format import BENCHMARKS, machine_line, module_bullets
from .registry import TABLES, Table, table

__all__ = ["BENCHMARKS", "TABLES", "Table", "machine_line", "main", "module_bullets", "table"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m docs.tables", description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("names", nargs="*", help=f"tables to print (default: all): {', '.join(TABLES)}")
    parser.add_argument("--benchmarks", type=Path, default=BENCHMARKS, help="the benchmark JSON folder")
    args = parser.parse_args(argv)
    unknown = [name for name in args.names if name not in TABLES]
    if unknown:
        parser.error(f"unknown table(s) {', '.join(unknown)}: choose from {', '.join(TABLES)}")
    for name in args.names or TABLES:
        print(f"### {TABLES[name].title}\n\n{table(name, args.benchmarks)}")
    return 0

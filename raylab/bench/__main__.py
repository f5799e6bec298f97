"""``python -m raylab.bench <command> [args]``; ``--help`` on each command says what it measures."""

from __future__ import annotations

import argparse
import sys

from raylab.bench import (
    compare,
    e2e,
    envs,
    learn,
    learner_speed,
    replay_snapshot,
    scaling,
    snake_loop,
    timed,
    timer_overhead,
)
from raylab.errors import EXIT_USAGE, RaylabError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m raylab.bench", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    learn.add_parser(commands)
    envs.add_parser(commands)
    scaling.add_parser(commands)
    timed.add_parser(commands)
    compare.add_parser(commands)
    snake_loop.add_parser(commands)
    learner_speed.add_parser(commands)
    e2e.add_parser(commands)
    timer_overhead.add_parser(commands)
    replay_snapshot.add_parser(commands)
    args, overrides = parser.parse_known_args(argv)
    try:
        return int(args.func(args, overrides) or 0)
    except RaylabError as err:
        print(f"raylab bench: error: {err}", file=sys.stderr)
        return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())

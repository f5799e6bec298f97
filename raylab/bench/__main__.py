"""``python -m raylab.bench <command> [args]``; ``--help`` on each command says what it measures."""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import NoReturn

from raylab.errors import EXIT_USAGE, RaylabError

COMMANDS = {
    "learn": "learn",
    "envs": "envs",
    "scaling": "scaling",
    "timed": "timed",
    "compare": "compare",
    "snake_dqn_loop": "snake_loop",
    "learner": "learner_speed",
    "e2e": "e2e",
    "timer_overhead": "timer_overhead",
    "replay_snapshot": "replay_snapshot",
    "arena": "arena",
    "sampling": "sampling",
    "plot": "replot",
}
"""Each command and the module under raylab.bench that adds its parser. Only the chosen command's module is
imported (several import torch and Ray), so a mistyped argument is answered at once."""


class OneLineParser(argparse.ArgumentParser):
    """argparse, whose mistakes end in one line naming the fix (not the usage block), exit status 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} ({self.prog} --help lists the arguments)\n")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = OneLineParser(prog="python -m raylab.bench", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    chosen = [argv[0]] if argv and argv[0] in COMMANDS else list(COMMANDS)
    for name in chosen:
        importlib.import_module(f"raylab.bench.{COMMANDS[name]}").add_parser(commands)
    args, overrides = parser.parse_known_args(argv)
    flags = [o for o in overrides if o.startswith("-")]
    if flags:  # the rest are config overrides (key=value); a mistyped --flag is not one
        commands.choices[args.command].error(f"unrecognized arguments: {' '.join(flags)}")
    try:
        return int(args.func(args, overrides) or 0)
    except RaylabError as err:
        print(f"raylab bench: error: {err}", file=sys.stderr)
        return EXIT_USAGE
    except Exception as err:  # not the user's input: one line naming the log that holds the traceback
        from raylab import failures

        print(f"raylab bench: error: {failures.one_line(err, failures.write_log(err, 'bench'))}", file=sys.stderr)
        return failures.exit_code()


if __name__ == "__main__":
    sys.exit(main())

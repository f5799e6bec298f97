"""Run raylab's CLIs in this process, through the same entry functions as ``python -m``: each one's exit
status and stderr, with the global state a run touches (sys.argv, Hydra, logging, the SIGTERM handler, cwd)
put back afterwards. A case that would reach Ray or start training fails loudly instead (see ``guard``)."""

from __future__ import annotations

import contextlib
import io
import logging
import os
import signal
import sys
from collections.abc import Iterator
from unittest import mock


class ReachedWork(BaseException):
    """A case got past input checking: it started Ray, a training run or a subprocess."""


def _refuse(what: str):
    def refuse(*args: object, **kwargs: object) -> None:
        raise ReachedWork(f"the input was accepted: it reached {what}")

    return refuse


@contextlib.contextmanager
def guard() -> Iterator[None]:
    """Ray, training and subprocesses raise ``ReachedWork``: the catalogue holds only inputs refused up front."""
    with (
        mock.patch("ray.init", _refuse("ray.init")),
        mock.patch("raylab.builders.run.build_run", _refuse("training (build_run)")),
        mock.patch("subprocess.run", _refuse("a subprocess")),
        mock.patch("subprocess.Popen", _refuse("a subprocess")),
    ):
        yield


@contextlib.contextmanager
def restored_globals() -> Iterator[None]:
    """sys.argv, the root logger, the SIGTERM handler, cwd and Hydra's singletons as they were."""
    from hydra.core.global_hydra import GlobalHydra

    argv, cwd, sigterm = sys.argv[:], os.getcwd(), signal.getsignal(signal.SIGTERM)
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    try:
        yield
    finally:
        for handler in root.handlers:
            if handler not in handlers:
                handler.close()
        root.handlers[:] = handlers
        root.setLevel(level)
        signal.signal(signal.SIGTERM, sigterm)
        os.chdir(cwd)
        sys.argv[:] = argv
        GlobalHydra.instance().clear()


def _entry(cli: str, argv: list[str]) -> int:
    """The CLI's entry function, as ``python -m`` calls it; its exit status."""
    if cli == "train":
        from raylab import train

        sys.argv[:] = ["raylab/train.py", *argv]
        train.main()
        return 0
    if cli == "evaluate":
        from raylab import evaluate

        evaluate.main(argv)
        return 0
    from raylab.bench.__main__ import main

    return main([*cli.split()[1:], *argv])


def run_cli(cli: str, argv: list[str]) -> tuple[int, str]:
    """``cli`` ("train", "evaluate" or "bench <command>") with ``argv``: (exit status, stderr)."""
    err = io.StringIO()
    with restored_globals(), guard(), contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            code = _entry(cli, argv)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
            if exc.code is not None and not isinstance(exc.code, int):
                print(exc.code, file=sys.stderr)  # as the interpreter prints SystemExit("text")
    return code, err.getvalue()

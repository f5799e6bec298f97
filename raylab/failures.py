"""What a CLI does with a failure that is not a mistake in the user's input (a bug, a crashed dependency, a
full disk): the console gets one line that names the log holding the full traceback, never 50 lines.

The log is the run's own ``train.log`` once the run owns its directory (``own_run_dir``: after the run dir
was claimed or resumed; never another run's), else a new file under the temp dir. A failure before training
exits with ``EXIT_USAGE`` (2), as a refused input does; one during training (``training_started``) with
``EXIT_FAILURE`` (1), after the run's metrics and checkpoints were closed consistently by the monitor.
"""

from __future__ import annotations

import datetime as dt
import os
import tempfile
import traceback
from pathlib import Path

from raylab.errors import EXIT_USAGE

EXIT_FAILURE = 1
RUN_LOG = "train.log"

_state: dict[str, object] = {"run_dir": None, "training": False}


def reset() -> None:
    """A new run in this process (a sweep's next trial): it owns no directory and has not started."""
    _state.update(run_dir=None, training=False)


def own_run_dir(run_dir: Path) -> None:
    """The run may now write its log into ``run_dir`` (it claimed the directory, or resumes it)."""
    _state["run_dir"] = Path(run_dir)


def training_started() -> None:
    _state["training"] = True


def exit_code() -> int:
    return EXIT_FAILURE if _state["training"] else EXIT_USAGE


def write_log(err: BaseException, cli: str) -> Path:
    """Append ``err``'s full traceback to the run's train.log (or a new temp file); returns the path."""
    run_dir = _state["run_dir"]
    stamp = dt.datetime.now().isoformat(timespec="seconds")
    text = f"[{stamp}] raylab {cli} failed:\n{''.join(traceback.format_exception(err))}\n"
    if isinstance(run_dir, Path) and run_dir.is_dir():
        path = run_dir / RUN_LOG
        with path.open("a", encoding="utf-8") as f:
            f.write(text)
        return path
    fd, name = tempfile.mkstemp(prefix=f"raylab-{cli}-", suffix=".log")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    return Path(name)


def log_if_owned(err: BaseException, cli: str) -> None:
    """A refused input or a RaylabError during training: its console line is enough, but a run that owns
    its directory also keeps the traceback in its train.log."""
    if _state["run_dir"] is not None:
        write_log(err, cli)


def one_line(err: BaseException, log: Path) -> str:
    """``Type: first line of the message (the full traceback is in <log>)``."""
    first = (str(err).strip().splitlines() or [""])[0][:200]
    what = f"{type(err).__name__}: {first}" if first else type(err).__name__
    return f"{what} (the full traceback is in {log}; please report it if the cause is not yours)"

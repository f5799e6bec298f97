"""Checkpoints written atomically (temp file, fsync, rename) and loaded with ``weights_only=True``."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO

from raylab.errors import RaylabError


def save_checkpoint(path: str | os.PathLike[str], state: dict[str, Any]) -> Path:
    """Write ``state`` to ``path`` so that a crash leaves either the old file or the new one, never half."""
    import torch  # here, not at the top: the CLI refuses bad input without importing torch (~2 s)

    return atomic_save(path, lambda f: torch.save(state, f))


def atomic_save(path: str | os.PathLike[str], write: Callable[[BinaryIO], None]) -> Path:
    """``write`` into a temp file beside ``path``, fsync it, rename it over ``path``, fsync the directory."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    os.fchmod(fd, 0o644)
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
    return path


def load_checkpoint(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Load a checkpoint of tensors and plain data; a missing or corrupt file is a one-line RaylabError."""
    path = Path(path)
    if not path.is_file():
        raise RaylabError(f"checkpoint {path} does not exist: pass the path of a checkpoints/*.pt file")
    import torch

    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:
        raise RaylabError(
            f"checkpoint {path} is corrupt or not a raylab checkpoint ({type(err).__name__}): {_fix(path)}"
        ) from err
    if not isinstance(state, dict):
        raise RaylabError(f"checkpoint {path} is not a raylab checkpoint: expected a dict")
    return state


def _fix(path: Path) -> str:
    """What to do about an unreadable checkpoint: use another one of its run, which is named."""
    others = sorted(p.name for p in path.parent.glob("*.pt") if p != path)
    if others:
        return (
            f"move it aside (mv {path} {path}.bad) to resume from the newest other one, or evaluate another with "
            f"checkpoint={others[-1].removesuffix('.pt')} (there: {', '.join(others)})"
        )
    return "it is the run's only checkpoint: retrain, or pass another run"

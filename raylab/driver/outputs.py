"""The files every run writes into its run dir: config.yaml, metrics.jsonl, checkpoints/, benchmark_metrics.json."""

from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from raylab.errors import ConfigError, RaylabError
from raylab.learner.checkpoint import save_checkpoint

RUN_FILES = ("config.yaml", "metrics.jsonl", "benchmark_metrics.json", "checkpoints")
"""What marks a directory as a run's (Hydra's own .hydra/ does not: Hydra writes it into every run dir)."""


def run_files(run_dir: Path) -> list[str]:
    """The files of a run ``run_dir`` already holds (none: it holds no run)."""
    return [name for name in RUN_FILES if (run_dir / name).exists()]


def check_not_under_a_file(path: Path, what: str) -> None:
    """ConfigError naming the fix when ``path`` is a file or lies under one."""
    for parent in [path, *path.parents]:
        if parent.exists() and not parent.is_dir():
            where = "is" if parent == path else f"is under {parent}, which is"
            raise ConfigError(f"{what} {path} {where} a file, not a directory: choose another {what}")


def check_holds_no_run(run_dir: Path, allowed: bool = False) -> list[str]:
    """The run files ``run_dir`` holds; ConfigError naming the three ways in when it holds any and a new run
    would train over them (``allowed``: overwrite=true)."""
    held = run_files(run_dir) if run_dir.is_dir() else []
    if held and not allowed:
        raise ConfigError(
            f"{run_dir} already holds a run ({held[0]}), which this one would train over: continue it with "
            f"resume={run_dir}, choose a new hydra.run.dir, or replace it with overwrite=true (nothing was changed)"
        )
    return held


def _try_lock(fd: int, exclusive: bool) -> bool:
    """flock ``fd`` without waiting (not on Windows: the callers skip it there); False when another open of the
    directory holds it exclusively."""
    import fcntl

    try:
        fcntl.flock(fd, (fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    except OSError:  # a filesystem without locks (some network mounts): the run dir goes unguarded, as before
        return True
    return True


def in_use_message(run_dir: Path, fix: str) -> str:
    """The one line for a run dir that a run is training in now."""
    return f"{run_dir} is in use: a run is training in it now: {fix} (nothing was changed)"


def in_use(run_dir: Path) -> bool:
    """Whether a run is training in ``run_dir`` now (hold_run_dir): what a benchmark that would move it aside or
    continue it checks first."""
    if sys.platform == "win32":  # no flock there: a run dir is not guarded
        return False
    try:
        fd = os.open(run_dir, os.O_RDONLY)
    except FileNotFoundError:  # nothing trains in a dir that is not there
        return False
    try:
        return not _try_lock(fd, exclusive=False)  # shared: checkers never block each other
    finally:
        os.close(fd)  # and so released


def check_not_in_use(run_dir: Path, fix: str) -> None:
    """ConfigError naming the fix when a run is training in ``run_dir`` now."""
    if in_use(run_dir):
        raise ConfigError(in_use_message(run_dir, fix))


@contextlib.contextmanager
def hold_dir(path: Path, refusal: str, patience_s: float = 1.0) -> Iterator[None]:
    """Hold the directory ``path`` for as long as the block runs: an exclusive flock on the directory itself (no
    file added to it), which the OS drops when the process ends however it ends, kill -9 included, so no stale
    lock is ever left. Held by another open (this process's or another's): ConfigError(``refusal``). A checker
    (in_use) holds its shared lock for an instant, so the exclusive one is tried for up to ``patience_s``."""
    if sys.platform == "win32":  # no flock: unguarded, as before
        yield
        return
    fd = os.open(path, os.O_RDONLY)
    try:
        deadline = time.monotonic() + patience_s
        while not _try_lock(fd, exclusive=True):
            if time.monotonic() >= deadline:
                raise ConfigError(refusal)
            time.sleep(0.02)
        yield
    finally:
        os.close(fd)


def hold_run_dir(
    run_dir: Path, fix: str = "wait for it to end, or choose another hydra.run.dir"
) -> contextlib.AbstractContextManager[None]:
    """Hold ``run_dir`` while a run trains in it (hold_dir): a second run, resume or overwrite there, or a
    benchmark that would move it aside or continue it, finds it held and refuses in one line naming ``fix``."""
    return hold_dir(run_dir, in_use_message(run_dir, fix))


def prepare_run_dir(run_dir: Path) -> None:
    """Make sure a new run may write into ``run_dir``: not a file nor under one, made, and writable (nothing in it
    is touched)."""
    check_not_under_a_file(run_dir, "hydra.run.dir")
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=run_dir):
            pass
    except OSError as err:
        reason = os.strerror(err.errno) if err.errno else str(err)
        raise ConfigError(
            f"cannot write hydra.run.dir {run_dir} ({reason}): choose a directory you can write"
        ) from None


def claim_run_dir(run_dir: Path, overwrite: bool) -> None:
    """Make sure a new run may write into ``run_dir`` (prepare_run_dir) and that it holds no other run (nothing
    in it is touched), unless ``overwrite``, which deletes that run's outputs first. raylab.train calls it while
    it holds the dir (hold_run_dir), so no run training there can lose its outputs to it."""
    prepare_run_dir(run_dir)
    clear_run_dir(run_dir, overwrite)


def clear_run_dir(run_dir: Path, overwrite: bool) -> None:
    """The second half of claim_run_dir, for a dir prepare_run_dir already made: refuse one that holds a run, or
    with ``overwrite`` delete that run's outputs."""
    held = check_holds_no_run(run_dir, overwrite)
    for name in held:
        target = run_dir / name
        shutil.rmtree(target) if target.is_dir() else target.unlink()
    if held and (run_dir / "videos").is_dir():  # the replaced run's eval.video films go with it
        shutil.rmtree(run_dir / "videos")


class RunOutputs:
    def __init__(self, run_dir: str | os.PathLike[str]):
        self.run_dir = Path(run_dir)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.config_path = self.run_dir / "config.yaml"
        self.metrics_path = self.run_dir / "metrics.jsonl"
        self.benchmark_path = self.run_dir / "benchmark_metrics.json"
        self.checkpoint_dir = self.run_dir / "checkpoints"
        self._metrics = self.metrics_path.open("a", encoding="utf-8")

    def write_config(self, config: dict[str, Any]) -> None:
        atomic_write(self.config_path, yaml.safe_dump(config, sort_keys=False))

    def append_metrics(self, row: dict[str, Any]) -> None:
        self._metrics.write(json.dumps(_finite(row)) + "\n")
        self._metrics.flush()

    def set_aside_rows_after(self, env_steps: int, train_seconds: float, checkpoint: str) -> Path | None:
        """A resumed run's metrics.jsonl without the rows its stopped part wrote after the checkpoint it resumes
        from (past its ``env_steps`` or its ``train_seconds``: training done again now); they go to
        ``metrics.after-<checkpoint>.jsonl`` (the first free name), whose path is returned, with a last row the stop
        cut short. None when there were none (a resume from final.pt)."""
        self._metrics.close()
        lines = self.metrics_path.read_text(encoding="utf-8").splitlines(keepends=True)
        torn = lines.pop() + "\n" if lines and not lines[-1].endswith("\n") else None  # the stop cut its write
        past = [_past(line, env_steps, train_seconds) for line in lines]
        later = [line for line, p in zip(lines, past, strict=True) if p] + ([torn] if torn else [])
        aside = None
        if later:
            aside = free_path(self.run_dir / f"metrics.after-{checkpoint}.jsonl")
            atomic_write(aside, "".join(later))
            atomic_write(self.metrics_path, "".join(line for line, p in zip(lines, past, strict=True) if not p))
        self._metrics = self.metrics_path.open("a", encoding="utf-8")
        return aside

    def write_benchmark(self, metrics: dict[str, Any]) -> None:
        atomic_write(self.benchmark_path, json.dumps(_finite(metrics), indent=2) + "\n")

    def save_checkpoint(self, name: str, state: dict[str, Any]) -> Path:
        """Write checkpoints/<name> atomically; a write that fails (a full disk, a lost mount) leaves the
        checkpoints written before intact and ends the run in one line naming the fix."""
        path = self.checkpoint_dir / name
        try:
            return save_checkpoint(path, state)
        except OSError as err:
            reason = os.strerror(err.errno) if err.errno else str(err)
            kept = sorted(p.name for p in self.checkpoint_dir.glob("*.pt") if p.name != name)
            raise RaylabError(
                f"could not write checkpoint {path} ({reason}): free space or fix the mount under "
                f"{self.checkpoint_dir}, then continue with resume={self.run_dir} (the checkpoints written "
                f"before are intact: {', '.join(kept) or 'none yet'})"
            ) from err

    def save_video(self, name: str, data: bytes, fmt: str) -> Path:
        """videos/<name>.<fmt>, at the first free name (a resumed or overwritten run never writes over one)."""
        path = free_path(self.run_dir / "videos" / f"{name}.{fmt}")
        path.parent.mkdir(exist_ok=True)
        atomic_write(path, data)
        return path

    def close(self) -> None:
        self._metrics.close()


def free_path(path: Path) -> Path:
    """``path``, or the first of ``<stem>-2<suffix>``, ``-3``, ... that does not exist: an earlier evaluation's
    results and video are never written over."""
    k = 1
    candidate = path
    while candidate.exists():
        k += 1
        candidate = path.with_name(f"{path.stem}-{k}{path.suffix}")
    return candidate


def atomic_write(path: Path, data: str | bytes) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    os.fchmod(fd, 0o644)  # mkstemp creates 0600; run outputs are meant to be read by others
    with os.fdopen(fd, "wb") as f:
        f.write(data.encode("utf-8") if isinstance(data, str) else data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def _past(line: str, env_steps: int, train_seconds: float) -> bool:
    """Whether a metrics row came after a checkpoint at ``env_steps`` and ``train_seconds`` (a row's ``time_s`` is
    training seconds too); a line that is not a row stays where it is."""
    try:
        row = json.loads(line)
    except ValueError:
        return False
    if not isinstance(row, dict):
        return False
    return float(row.get("env_steps", -1)) > env_steps or float(row.get("time_s", -1)) > train_seconds


def _finite(value: Any) -> Any:
    """JSON has no NaN/inf: write null instead of producing a file strict parsers reject."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value

"""Replay snapshots (``checkpoint.replay=true``): each shard's contents beside each checkpoint.

``checkpoints/replay_<shard>_<checkpoint stem>.npz`` is written before the checkpoint it goes with (so a
checkpoint's snapshot exists whenever the checkpoint does), atomically like the checkpoints, as an
uncompressed npz of plain arrays loaded with ``allow_pickle=False``. It is used twice:

- ``resume=<run_dir>``: every shard loads the snapshot of the checkpoint the run resumes from, so a resumed
  DQN run goes on with its replay instead of refilling it;
- a replay shard that crashed and was restarted by Ray (topology.max_actor_restarts) loads its own newest
  periodic snapshot before it answers any call, so it comes back with the transitions it held then instead
  of empty.

A shard writes its snapshot itself, to the run dir it was given: the data never travels through the
driver. On a multi-node cluster the run dir must therefore be on a filesystem every node sees (the same
holds for restarting from it); with a node-local run dir a restarted shard finds no snapshot and starts
empty, as without snapshots.
"""

from __future__ import annotations

import re
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from raylab.errors import ConfigError, RaylabError
from raylab.learner.checkpoint import atomic_save
from raylab.replay.buffer import ReplayBuffer

FORMAT = 1
REQUIRED = {"format", "capacity", "writer", "keys", "counters", "inserted_by_worker", "rng_uniform"}


def snapshot_path(checkpoint_dir: Path, shard: int, checkpoint_name: str) -> Path:
    """The snapshot of ``shard`` that goes with checkpoint ``checkpoint_name`` (``step_<n>.pt``, ``final.pt``)."""
    return Path(checkpoint_dir) / f"replay_{shard}_{Path(checkpoint_name).stem}.npz"


def latest_periodic_snapshot(checkpoint_dir: Path, shard: int) -> Path | None:
    """``shard``'s newest snapshot of a periodic checkpoint (step numbers are zero-padded: names sort)."""
    pattern = re.compile(rf"replay_{shard}_step_\d+\.npz")
    found = sorted(p for p in Path(checkpoint_dir).glob(f"replay_{shard}_step_*.npz") if pattern.fullmatch(p.name))
    return found[-1] if found else None


def save_snapshot(path: Path, buffer: ReplayBuffer) -> Path:
    arrays = {"format": np.array(FORMAT, np.int64), **buffer.state_arrays()}
    return atomic_save(path, lambda f: np.savez(f, **arrays))  # type: ignore[arg-type]  # numpy's stub: allow_pickle


def check_snapshot(path: Path, capacity: int, prioritized: bool, dedup: bool, sequences: bool = False) -> None:
    """What ``load_snapshot`` would refuse, checked without loading the data (a driver, before Ray starts);
    ``sequences``: this run's replay stores R2D2's sequences."""
    with _open(path) as npz:
        files = set(npz.files)
        try:
            saved = [int(npz[k]) if k in files else -1 for k in ("format", "capacity")]
        except (OSError, ValueError, EOFError, zipfile.BadZipFile) as err:
            raise _corrupt(path, err) from None
    _check(path, files, saved, capacity, prioritized, dedup, sequences)


def load_snapshot(path: Path, buffer: ReplayBuffer) -> int:
    """Fill ``buffer`` from the snapshot at ``path``; returns the transitions restored. A missing, corrupt or
    mismatched snapshot is a one-line RaylabError and leaves ``buffer`` unchanged."""
    with _open(path) as npz:
        try:
            arrays = {name: npz[name] for name in npz.files}
        except (OSError, ValueError, EOFError, zipfile.BadZipFile) as err:
            raise _corrupt(path, err) from None
    saved = [int(arrays[k]) if k in arrays else -1 for k in ("format", "capacity")]
    _check(
        path, set(arrays), saved, buffer.capacity, buffer.per is not None, buffer.dedup is not None,
        buffer.sequence is not None,
    )  # fmt: skip
    return buffer.load_state_arrays(arrays)


def _open(path: Path) -> Any:
    path = Path(path)
    if not path.is_file():
        raise RaylabError(f"replay snapshot {path} does not exist: resume with checkpoint.replay=false to refill")
    try:
        return np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as err:
        raise _corrupt(path, err) from None


def _corrupt(path: Path, err: Exception) -> RaylabError:
    return RaylabError(
        f"replay snapshot {path} is corrupt ({type(err).__name__}): delete it, or resume with checkpoint.replay=false"
        f" to refill the replay"
    )


def _check(
    path: Path, files: set[str], saved: list[int], capacity: int, prioritized: bool, dedup: bool, sequences: bool
) -> None:
    """``saved``: the snapshot's format and capacity (-1: absent)."""
    if not files >= REQUIRED or saved[0] != FORMAT:
        raise RaylabError(f"{path} is not a raylab replay snapshot of format {FORMAT}: delete it")
    if ("storage_state" in files) != sequences:
        raise ConfigError(
            f"the replay snapshot {path.name} holds {'sequences' if not sequences else 'transitions'} but this run "
            f"stores {'sequences (R2D2)' if sequences else 'transitions'}: resume with the model.recurrent it was made "
            "with"
        )
    if saved[1] != capacity:
        raise ConfigError(
            f"the replay snapshot {path.name} holds a shard of capacity {saved[1]}, this run's is {capacity}: set "
            f"replay.capacity and replay.num_shards as in the snapshot's run"
        )
    if ("per_nodes" in files) != prioritized or ("frames" in files) != dedup:
        raise ConfigError(
            f"the replay snapshot {path.name} was made with another replay.kind or replay.frame_dedup: resume "
            f"with the same"
        )

"""Read an offline W&B run's records locally, without the network or ``wandb sync``.

A ``run-<id>.wandb`` file is W&B's transaction log: a 7-byte header (":W&B", magic 0xBEE1, version 0),
then LevelDB-style records in 32 KiB blocks (crc32c, length, type: full/first/middle/last), each payload a
serialized ``wandb_internal_pb2.Record``. Tests use this to check that a real run logged the dashboard's
keys; users can use it to inspect a run before syncing it.
"""

from __future__ import annotations

import json
import struct
import time
from pathlib import Path
from typing import Any

HEADER = struct.Struct("<4sHB")
RECORD = struct.Struct("<IHB")
BLOCK = 32768
FULL, FIRST, MIDDLE, LAST = 1, 2, 3, 4


def records(path: str | Path) -> list[Any]:
    """Every protobuf Record in the file, in order."""
    from wandb.proto import wandb_internal_pb2

    data = Path(path).read_bytes()
    ident, magic, version = HEADER.unpack_from(data, 0)
    if ident != b":W&B" or magic != 0xBEE1 or version != 0:
        raise ValueError(f"{path} is not a W&B transaction log (header {ident!r} {magic:#x} {version})")
    out, pending, pos = [], b"", HEADER.size
    while pos + RECORD.size <= len(data):
        if BLOCK - pos % BLOCK < RECORD.size:  # a block's tail too short for a header is padding
            pos += BLOCK - pos % BLOCK
            continue
        _, length, kind = RECORD.unpack_from(data, pos)
        if kind == 0 and length == 0:  # zero padding
            pos += RECORD.size
            continue
        payload = data[pos + RECORD.size : pos + RECORD.size + length]
        pos += RECORD.size + length
        if kind == FULL:
            pending = payload
        elif kind == FIRST:
            pending = payload
            continue
        elif kind == MIDDLE:
            pending += payload
            continue
        elif kind == LAST:
            pending += payload
        else:
            raise ValueError(f"{path}: unknown record type {kind} at byte {pos}")
        record = wandb_internal_pb2.Record()  # type: ignore[attr-defined]
        record.ParseFromString(pending)
        out.append(record)
        pending = b""
    return out


def history(path: str | Path) -> list[dict[str, Any]]:
    """The rows the run logged (``run.log``), keys as logged (``throughput/env_frames_per_s``)."""
    rows = []
    for record in records(path):
        if record.WhichOneof("record_type") == "history":
            row = {}
            for item in record.history.item:
                key = item.key or "/".join(item.nested_key)
                row[key] = json.loads(item.value_json)
            rows.append(row)
    return rows


def config(path: str | Path) -> dict[str, Any]:
    """The run's config as uploaded (the last config record wins per key)."""
    out: dict[str, Any] = {}
    for record in records(path):
        kind = record.WhichOneof("record_type")
        updates = record.run.config.update if kind == "run" else record.config.update if kind == "config" else []
        for item in updates:
            out[item.key or "/".join(item.nested_key)] = json.loads(item.value_json)
    return out


def wait_for_exit(path: str | Path, timeout_s: float = 120.0) -> None:
    """Block until the run file holds its exit record. ``run.finish()`` can return before W&B's service process
    has written the run's last records (seen on a loaded machine), so a reader that wants the whole run waits for
    the event that ends it; a partly written tail is read again until then."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            if any(r.WhichOneof("record_type") == "exit" for r in records(path)):
                return
        except Exception:  # a record still being written: read the file again
            pass
        if time.monotonic() > deadline:
            raise TimeoutError(f"{path} has no exit record after {timeout_s:g} s: the W&B run did not finish")
        time.sleep(0.1)


def find_run_file(run_dir: str | Path) -> Path:
    """The single offline run file under <run_dir>/wandb."""
    files = sorted(Path(run_dir, "wandb").glob("offline-run-*/run-*.wandb"))
    if len(files) != 1:
        raise FileNotFoundError(f"expected one offline W&B run under {run_dir}/wandb, found {len(files)}")
    return files[0]

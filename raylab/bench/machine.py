"""Who measured what where: recorded in every benchmark JSON."""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
import subprocess
from importlib import metadata
from pathlib import Path
from typing import Any


def machine_info() -> dict[str, Any]:
    import numpy
    import torch

    from raylab.models.precision import native_bf16

    info: dict[str, Any] = {
        "date": dt.datetime.now().isoformat(timespec="seconds"),
        "hostname": platform.node(),
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "numpy": numpy.__version__,
        "cuda": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
        "native_bf16": native_bf16(),  # learner.precision=auto trains in bf16 here: a CPU's rates depend on it
        "git_commit": _git_commit(),
    }
    try:
        info["ray"] = metadata.version("ray")  # without importing it: only remote/ and topology/ import ray
    except metadata.PackageNotFoundError:
        info["ray"] = None
    return info


def save_report(output: str | Path, benchmark: str, protocol: str, command: str, results: dict[str, Any]) -> None:
    """Write a benchmark's JSON (its name, this machine, the protocol, the command that made it, the results)."""
    report = {
        "benchmark": benchmark,
        "machine": machine_info(),
        "protocol": protocol,
        "command": command,
        "results": results,
    }
    Path(output).write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {output}")


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _git_commit() -> str | None:
    """The checkout's commit; in a tree without git (an archive of a commit, as the offline GPU bundle carries)
    the commit named by RAYLAB_COMMIT, which benchmarks/gpu_phases.sh sets from the bundle's record."""
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True)
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True)
        return out.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.CalledProcessError):
        return os.environ.get("RAYLAB_COMMIT", "")[:7] or None

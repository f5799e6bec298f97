"""Which torch `make install` installs when TORCH_SPEC is left at ``auto``: a CPU build, from wherever one is.

    python scripts/torch_choice.py [--pip PYTHON]     # prints the pip arguments; the reason goes to stderr

The pin ``torch==2.13.0`` gives a CPU build only where pip finds one first (a local wheel folder, macOS,
Windows). On a Linux machine with the public index alone it resolves to PyPI's CUDA build, several GB. So:

1. the pin, where pip resolves it to a CPU build (asked with ``pip install --dry-run --report``: nothing is
   downloaded but the wheel's metadata; a CUDA build is the one whose metadata asks for ``nvidia-*`` packages);
2. else ``torch==2.13.0+cpu`` from the PyTorch CPU index (RAYLAB_TORCH_CPU_INDEX, default
   https://download.pytorch.org/whl/cpu), where that index answers;
3. else the pin, with a warning that names what it will download and the fix (TORCH_SPEC).

One line on stderr says which was used and why. Standard library only: it runs before torch exists.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import unquote, urlparse

PIN = "torch==2.13.0"
CPU_PIN = "torch==2.13.0+cpu"
CPU_INDEX = "https://download.pytorch.org/whl/cpu"
RESOLVE_TIMEOUT_S = 120.0
QUICK = ["--retries", "1", "--timeout", "20"]  # an index that does not answer is known in seconds, not minutes
DOCS = "docs/index.md, Installing torch"


@dataclass(frozen=True)
class Resolved:
    """The torch wheel pip would install for a requirement: its URL and whether it is a CUDA build."""

    url: str
    cuda: bool

    @property
    def name(self) -> str:
        return unquote(urlparse(self.url).path.rsplit("/", 1)[-1])


@dataclass(frozen=True)
class Choice:
    args: list[str]  # pip install arguments
    line: str  # what was chosen and why, for the user


def is_cuda_build(version: str, requires: list[str]) -> bool:
    """A CUDA build: a ``+cuXYZ`` local version, or a wheel that pulls NVIDIA's runtime packages (PyPI's Linux
    x86_64 torch does: nvidia-cublas-*, nvidia-cudnn-*, ...)."""
    return "+cu" in version or any(req.strip().lower().startswith("nvidia-") for req in requires)


def from_report(report: dict) -> Resolved | None:
    """torch's entry in a ``pip install --dry-run --report`` report."""
    for item in report.get("install", []):
        meta = item.get("metadata", {})
        if meta.get("name", "").lower() == "torch":
            url = item.get("download_info", {}).get("url", "")
            return Resolved(url, is_cuda_build(meta.get("version", ""), meta.get("requires_dist") or []))
    return None


def choose(pinned: Resolved | None, cpu_index: Callable[[], Resolved | None], index_url: str) -> Choice:
    """The decision, given what the pin resolves to here and (asked only when needed) what the CPU index
    offers."""
    if pinned is not None and not pinned.cuda:
        return Choice([PIN], f"torch: {PIN}, a CPU build found by pip ({pinned.name} from {_where(pinned.url)})")
    offered = cpu_index()
    if offered is not None and not offered.cuda and _same_host(offered.url, index_url):
        why = f"{PIN} here is {pinned.name}, a CUDA build" if pinned else f"{PIN} did not resolve here"
        line = f"torch: {CPU_PIN} from the PyTorch CPU index {index_url} ({why})"
        return Choice([CPU_PIN, "--extra-index-url", index_url], line)
    what = f"{pinned.name}, a CUDA build of several GB" if pinned else "what pip finds"
    return Choice(
        [PIN],
        f"torch: warning: {PIN} installs {what}, and the PyTorch CPU index {index_url} did not answer: to choose "
        f'another build, make install TORCH_SPEC="torch --index-url <index>" ({DOCS})',
    )


def resolve(python: str, args: list[str], timeout: float = RESOLVE_TIMEOUT_S) -> Resolved | None:
    """What ``pip install args`` would install for torch, without installing or downloading the wheel."""
    cmd = [python, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--no-deps", "--quiet", *QUICK]
    try:
        proc = subprocess.run([*cmd, "--report", "-", *args], capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if proc.returncode != 0:
        return None
    try:
        return from_report(json.loads(proc.stdout))
    except json.JSONDecodeError:
        return None


def _where(url: str) -> str:
    parsed = urlparse(url)
    return parsed.netloc or unquote(parsed.path.rsplit("/", 1)[0])


def _same_host(url: str, index_url: str) -> bool:
    return urlparse(url).netloc == urlparse(index_url).netloc


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pip", default=sys.executable, help="the Python whose pip installs torch")
    opts = parser.parse_args(argv)
    index_url = os.environ.get("RAYLAB_TORCH_CPU_INDEX") or CPU_INDEX
    choice = choose(resolve(opts.pip, [PIN]), lambda: resolve(opts.pip, [CPU_PIN, "--index-url", index_url]), index_url)
    print(choice.line, file=sys.stderr)
    print(" ".join(choice.args))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

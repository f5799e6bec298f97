"""What every table is made with: where the benchmark JSON is, the number formats (short names: the renderers
use them in every cell), a Markdown table from its rows, the machine a file was measured on, and a module
docstring's bullet list."""

from __future__ import annotations

import ast
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
"""The checkout: docs/tables/ is two levels under it."""
BENCHMARKS = ROOT / "benchmarks"
"""The committed benchmark results (a checkout's benchmarks/)."""

Json = dict[str, Any]


def _int(x: float) -> str:
    return f"{round(x):,}"


def _sig(x: float, digits: int = 3) -> str:
    """``digits`` significant digits, trailing zeros kept (1.60, 27.3); whole numbers from 1,000 on."""
    return _int(x) if abs(x) >= 10 ** (digits - 1) * 10 else f"{x:#.{digits}g}".rstrip(".")


def _s(x: float | None) -> str:
    return "—" if x is None else f"{x:.1f} s"


def _pct(x: float) -> str:
    """A share as a percentage: two significant digits under 10 % (0.026 %, 2.8 %), whole ones above."""
    return f"{100 * x:#.2g} %" if x < 0.1 else f"{100 * x:.0f} %"


def _ratio(x: float) -> str:
    return f"{x:.2f}×"


def _duration(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms" if seconds < 1 else f"{seconds:.2f} s"


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:]


def _rows(header: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def machine_line(data: Json) -> str:
    """Where and when ``data`` was measured, from its ``machine`` field."""
    m = data.get("machine")
    if not m:
        return "machine not recorded"
    gpu = m.get("cuda") or "no GPU"
    versions = ", ".join(
        f"{name} {m[key]}" for name, key in (("Python", "python"), ("torch", "torch"), ("Ray", "ray")) if m.get(key)
    )
    when = m["date"].replace("T", " ")[:16]
    cpu = f"{m['cpu']} with native bf16" if m.get("native_bf16") else m["cpu"]
    return f"{when}, {cpu}, {m['cores']} cores, {gpu}; {versions}; commit {commit_text(m.get('git_commit'))}"


def commit_text(commit: str | None) -> str:
    """A file's commit as a table shows it: ``abc1234``, or ``abc1234-dirty`` (measured with uncommitted changes
    beside it: the Benchmarks page says so once, docs/benchmarks/index.md)."""
    return commit or "not recorded"


def run_cpu(run: Json, report: Json) -> str:
    """The CPU a learn table's run trained on: the machine stamp kept with a run read back from an earlier
    invocation, else the file's own (the invocation that trained it); "with native bf16" where the stamp says the CPU
    computes bf16 natively (learner.precision=auto trains in it there; stamps from before say nothing)."""
    machine = run.get("recorded") or report.get("machine") or {}
    cpu = str(machine.get("cpu") or "not recorded")
    name = " ".join(cpu.replace("(R)", "").replace("(TM)", "").removesuffix(" Processor").split())
    return f"{name} with native bf16" if machine.get("native_bf16") else name


def fps_cells(cells: list[tuple[float, str]]) -> list[str]:
    """Frames/s figures (value, CPU) set side by side: each names its CPU when they were not all measured on
    the same one, since a rate moves with the host."""
    named = len({cpu for _, cpu in cells}) > 1
    return [f"{_int(fps)} ({cpu})" if named else _int(fps) for fps, cpu in cells]


def module_bullets(path: Path) -> dict[str, str]:
    """``{name: text}`` of the ``- ``name``: text`` items in a module's docstring (read with ast, nothing
    imported): a benchmark's variants described where they are defined."""
    doc = ast.get_docstring(ast.parse(path.read_text())) or ""
    items: dict[str, str] = {}
    current = None
    for line in doc.splitlines():
        if line.startswith("- ``") and "``:" in line:
            current, _, text = line[4:].partition("``:")
            items[current] = text.strip().replace("``", "`")
        elif current and line.startswith("  "):
            items[current] += " " + line.strip().replace("``", "`")
        else:
            current = None
    return items


def _ret(value: float) -> str:
    """A return with the decimals its scale needs (raylab.metrics.numbers.fmt_return): 475.0, -20.2, 0.718."""
    size = abs(value)
    return f"{value:.1f}" if size >= 10 else f"{value:.2f}" if size >= 1 else f"{value:.3f}"

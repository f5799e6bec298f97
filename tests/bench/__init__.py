"""Tests of the benchmark scripts under benchmarks/ (loaded as modules by ``load_benchmark``)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def load_benchmark(name: str) -> Any:
    """benchmarks/<name>.py as module ``name`` (registered in sys.modules: dataclasses look their module up)."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module

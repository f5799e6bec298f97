"""The runtime does not depend on the benchmarks: no module under raylab/ outside raylab/bench/ imports
raylab.bench, at its top or inside a function (benchmarks may import the runtime, never the reverse)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "raylab"
FORBIDDEN = "raylab.bench"


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(source: str, module: str, is_package: bool = False) -> set[str]:
    """Every module ``source`` (the text of ``module``) imports: ``import a.b``, ``from a import b`` (as a.b
    too, b may be a submodule), relative imports resolved, and ``importlib.import_module("a.b")``."""
    found: set[str] = set()
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Call) and _is_import_module(node.func) and node.args:
            arg = node.args[0]
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                found.add(arg.value)
    return found


def _is_import_module(func: ast.expr) -> bool:
    return (isinstance(func, ast.Attribute) and func.attr == "import_module") or (
        isinstance(func, ast.Name) and func.id == "import_module"
    )


def imports_bench(modules: set[str]) -> bool:
    return any(m == FORBIDDEN or m.startswith(FORBIDDEN + ".") for m in modules)


def test_no_runtime_module_imports_raylab_bench():
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.relative_to(PACKAGE).parts[0] == "bench":
            continue
        module = module_name(path)
        if imports_bench(imported_modules(path.read_text(), module, path.name == "__init__.py")):
            offenders.append(str(path.relative_to(ROOT)))
    assert not offenders, f"only raylab/bench may import raylab.bench (move what they share elsewhere): {offenders}"


@pytest.mark.parametrize(
    "source",
    [
        "import raylab.bench",
        "import raylab.bench.plots as plots",
        "from raylab.bench import plots",
        "from raylab.bench.plots import save",
        "from raylab import bench",
        "def f():\n    from raylab.bench.scaling import run",
        "from ..bench import plots",
        "from ..bench.plots import save",
        "import importlib\nimportlib.import_module('raylab.bench.plots')",
    ],
)
def test_the_check_sees_every_way_of_importing_it(source):
    assert imports_bench(imported_modules(source, "raylab.metrics.analysis"))


@pytest.mark.parametrize(
    "source",
    ["import raylab.benchmarks", "from raylab.metrics import plots", "from . import bench_helpers", "import bench"],
)
def test_the_check_lets_other_modules_be(source):
    assert not imports_bench(imported_modules(source, "raylab.metrics.analysis"))

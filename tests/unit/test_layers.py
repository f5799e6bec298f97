"""What each layer of raylab may import (read from the source, nothing imported): algorithms are only math,
and no two packages import each other."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

from tests.unit.test_imports import ROOT, import_graph, module_files

ALGOS_MAY_IMPORT = {"raylab.algos", "raylab.types", "raylab.config", "raylab.models", "raylab.errors"}
"""Its own modules, the types that cross boundaries, the config sections it reads and the networks it builds."""
ALGOS_THIRD_PARTY = {"torch", "numpy"}


def top_imports(path) -> set[str]:
    """Every module ``path`` imports (absolute imports; raylab's relative ones are none)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
    return names


def package_of(module: str) -> str:
    """raylab.<package> (a top-level module is its own package)."""
    return ".".join(module.split(".")[:2])


def algos_offenders(root: Path = ROOT) -> list[str]:
    """The imports of raylab/algos (under ``root``) outside what it may import."""
    offenders = []
    for name, path in module_files(root).items():
        if not name.startswith("raylab.algos"):
            continue
        for imported in sorted(top_imports(path)):
            top = imported.split(".")[0]
            if top == "raylab":
                allowed = any(imported == p or imported.startswith(p + ".") for p in ALGOS_MAY_IMPORT)
            else:
                allowed = top in ALGOS_THIRD_PARTY or top in sys.stdlib_module_names or top == "__future__"
            if not allowed:
                offenders.append(f"{path.relative_to(root)} imports {imported}")
    return offenders


def test_algorithms_import_only_math():
    offenders = algos_offenders()
    assert not offenders, "raylab/algos holds losses, objectives, policies and specs only:\n" + "\n".join(offenders)


def test_no_two_packages_import_each_other():
    edges: dict[str, set[str]] = {}
    for module, targets in import_graph().items():
        for target in targets:
            if package_of(target) != package_of(module):
                edges.setdefault(package_of(module), set()).add(package_of(target))
    pairs = sorted({tuple(sorted((a, b))) for a in edges for b in edges[a] if a in edges.get(b, set())})
    assert not pairs, f"packages that import each other: {pairs}"


def test_the_rules_see_a_violation(tmp_path):
    """The check above can fail: an algorithm that imports the rollout runtime or an env library is caught."""
    algos = tmp_path / "raylab" / "algos"
    algos.mkdir(parents=True)
    (tmp_path / "raylab" / "__init__.py").write_text("")
    (algos / "__init__.py").write_text("")
    (algos / "bad.py").write_text("import torch\nfrom raylab.types import Chunk\nfrom raylab.rollout.worker import X\n")
    (algos / "env.py").write_text("import gymnasium\n")
    assert algos_offenders(tmp_path) == [
        "raylab/algos/bad.py imports raylab.rollout.worker",
        "raylab/algos/env.py imports gymnasium",
    ]

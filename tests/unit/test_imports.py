"""raylab's modules import each other without a circle, counting lazy (function-level) imports too.

The graph is built from the source with ``ast``, so nothing is imported: an edge A -> B means that module A
has an ``import`` statement anywhere in its body (module level, inside a function or class, under ``if
TYPE_CHECKING``) that names B, or a module inside package B. ``from pkg import name`` points at ``pkg.name``
when that is a module of raylab, else at ``pkg`` itself. Importing ``pkg.sub`` first runs ``pkg/__init__.py``,
so A -> pkg.sub is also an edge A -> pkg, except where pkg is A's own package (Python is already running that
``__init__`` when A runs): a package that re-exports its submodules is no circle with them, but a package
whose ``__init__`` leads back to A is.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "raylab"


def module_files(root: Path = ROOT, package: str = PACKAGE) -> dict[str, Path]:
    """Dotted module name -> source file, for every module of ``package``."""
    modules = {}
    for path in sorted((root / package).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def imported_modules(name: str, path: Path, modules: set[str]) -> set[str]:
    """The modules of ``modules`` that ``name`` (at ``path``) imports anywhere in its source."""
    is_package = path.name == "__init__.py"
    targets: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = name.split(".") if is_package else name.split(".")[:-1]
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                targets.add(sub if sub in modules else base)
    parts = name.split(".")
    own_packages = {".".join(parts[:i]) for i in range(1, len(parts) + is_package)}  # initialised before A runs
    found = set()
    for target in targets:
        while target and target not in modules:  # import a.b.c of a name-less package path: nearest module
            target = target.rpartition(".")[0]
        if target and target != name:
            found.add(target)
        package = target.rpartition(".")[0]
        while package:  # each package whose __init__ runs on the way to the target
            if package not in own_packages:
                found.add(package)
            package = package.rpartition(".")[0]
    return found


def import_graph(root: Path = ROOT, package: str = PACKAGE) -> dict[str, set[str]]:
    files = module_files(root, package)
    return {name: imported_modules(name, path, set(files)) for name, path in files.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The shortest circle through each module that is on one, each circle once (start, ..., start)."""
    found: dict[tuple[str, ...], list[str]] = {}
    for component in _components(graph):
        for start in sorted(component):
            cycle = _shortest_cycle(graph, component, start)
            first = cycle.index(min(cycle))
            key = tuple(cycle[first:-1] + cycle[:first])  # the same circle, whichever module it starts from
            found.setdefault(key, cycle)
    return list(found.values())


def _components(graph: dict[str, set[str]]) -> list[set[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[set[str]] = []

    def visit(node: str) -> None:  # recursion depth is the longest import chain: a few dozen
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for succ in sorted(graph[node]):
            if succ not in index:
                visit(succ)
                low[node] = min(low[node], low[succ])
            elif succ in on_stack:
                low[node] = min(low[node], index[succ])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(component)

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return components


def _shortest_cycle(graph: dict[str, set[str]], component: set[str], start: str) -> list[str]:
    paths = {start: [start]}
    queue = [start]
    for node in queue:  # breadth first: the first edge back to start closes the shortest circle through it
        if start in graph[node]:
            return [*paths[node], start]
        for succ in sorted(graph[node] & component):
            if succ not in paths:
                paths[succ] = [*paths[node], succ]
                queue.append(succ)
    raise AssertionError(f"{start} is on no circle of its component")


def test_the_graph_sees_lazy_relative_and_package_imports(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("from pkg.a import f\n")
    (pkg / "a.py").write_text("def f():\n    from pkg.sub import b\n")  # lazy; runs pkg/sub/__init__.py too
    (pkg / "sub" / "__init__.py").write_text("from pkg.sub.c import C\n")
    (pkg / "sub" / "b.py").write_text("from .. import a\nimport pkg.sub.c\n")  # its own package: no edge to it
    (pkg / "sub" / "c.py").write_text("import pkg.a\nfrom pkg.sub import nothing_here\n")  # explicit: an edge
    graph = import_graph(tmp_path, "pkg")
    assert graph == {
        "pkg": {"pkg.a"},
        "pkg.a": {"pkg.sub", "pkg.sub.b"},
        "pkg.sub": {"pkg.sub.c"},
        "pkg.sub.b": {"pkg.a", "pkg.sub.c"},
        "pkg.sub.c": {"pkg.a", "pkg.sub"},
    }
    assert cycles(graph) == [["pkg.a", "pkg.sub.b", "pkg.a"], ["pkg.sub", "pkg.sub.c", "pkg.sub"]]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c", "a"]]


def test_raylab_has_no_import_cycles():
    found = cycles(import_graph())
    assert not found, "import cycles in raylab (break each one):\n" + "\n".join(" -> ".join(c) for c in found)


def test_importing_the_config_does_not_import_torch():
    code = "import sys, raylab.config; sys.exit('torch' in sys.modules)"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    assert subprocess.run([sys.executable, "-c", code], env=env).returncode == 0, "import raylab.config imports torch"


def test_the_algorithms_read_no_config():
    """raylab/algos/ is math with explicit arguments: only the builders (raylab/builders/) read a RunConfig,
    so no algorithm module imports raylab.config, directly or lazily."""
    modules = module_files()
    readers = {
        name
        for name, path in modules.items()
        if name.startswith("raylab.algos")
        and any(
            t == "raylab.config" or t.startswith("raylab.config.") for t in imported_modules(name, path, set(modules))
        )
    }
    assert not readers, f"these read the config: {sorted(readers)}; pass what they need from raylab/builders/"

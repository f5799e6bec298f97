"""The shape of the code at two git revisions, side by side: the numbers behind "one actor seam".

    python benchmarks/code_shape.py 45531cd HEAD --output benchmarks/code_shape_seam.json

For each revision (read with ``git show``, nothing checked out or imported):
- the seam's lines: raylab/remote/ plus the in-process backend wherever it lives;
- for each actor kind, the files of raylab/ that name its host class or one of its per-kind client classes
  (what a new kind, or a new method on one, has to touch);
- the Backend protocol's methods that name an actor kind or an algorithm;
- the longest functions in raylab/topology/ and raylab/driver/, and every topology file's lines;
- the modules over 400 lines;
- package pairs that import each other (raylab.<package> as nodes, every import counted, lazy ones too).
"""

from __future__ import annotations

import argparse
import ast
import re
import subprocess
from pathlib import Path
from typing import Any

from raylab.bench.machine import save_report

REPO = Path(__file__).resolve().parents[1]
KINDS = {
    "rollout": ("RolloutHost", "RolloutClient"),
    "replay": ("ReplayHost", "ReplayClient"),
    "learner": ("LearnerHost", "PPOLearnerHost", "LearnerClient", "PPOLearnerClient"),
    "eval": ("EvalHost", "EvalClient"),
    "server shard": ("ShardHost", "ShardClient"),
    "a3c worker": ("A3CWorkerHost", "A3CWorkerClient"),
}
KIND_NAMED = re.compile(r"def (rollout|replay|learner|ppo_learner|evaluator|shard|a3c_worker)\(")


def files_at(rev: str) -> dict[str, str]:
    """{path: text} of every Python file under raylab/ at ``rev``."""
    names = subprocess.run(
        ["git", "ls-tree", "-r", "--name-only", rev, "raylab"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.split()
    out = {}
    for name in names:
        if name.endswith(".py"):
            out[name] = subprocess.run(
                ["git", "show", f"{rev}:{name}"], cwd=REPO, capture_output=True, text=True, check=True
            ).stdout
    return out


def lines(text: str) -> int:
    return len(text.splitlines())


def functions(path: str, text: str) -> list[tuple[int, str]]:
    out = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            out.append((node.end_lineno - node.lineno + 1, f"{path}:{node.lineno} {node.name}"))  # type: ignore[operator]
    return out


def package(module: str) -> str:
    parts = module.split(".")
    return ".".join(parts[:2]) if len(parts) > 1 else module


def mutual_packages(files: dict[str, str]) -> list[list[str]]:
    edges: dict[str, set[str]] = {}
    for path, text in files.items():
        me = package(path.removesuffix(".py").replace("/", ".").removesuffix(".__init__"))
        for node in ast.walk(ast.parse(text)):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names = [node.module]
            for name in names:
                if name.startswith("raylab.") and package(name) != me:
                    edges.setdefault(me, set()).add(package(name))
    return sorted([a, b] for a in edges for b in edges[a] if a < b and a in edges.get(b, set()))


def shape(rev: str) -> dict[str, Any]:
    files = files_at(rev)
    seam = {p: lines(t) for p, t in files.items() if p.startswith("raylab/remote/") or "inprocess" in p}
    kinds = {
        kind: sorted(p for p, t in files.items() if any(re.search(rf"\b{n}\b", t) for n in names))
        for kind, names in KINDS.items()
    }
    loop = next((t for p, t in files.items() if p == "raylab/driver/loop.py"), "")
    protocol = loop[loop.find("class Backend(Protocol)") : loop.find("class Job(Protocol)")]
    longest = sorted(
        (f for p, t in files.items() if p.startswith(("raylab/topology/", "raylab/driver/")) for f in functions(p, t)),
        reverse=True,
    )[:8]
    return {
        "revision": subprocess.run(
            ["git", "rev-parse", "--short", rev], cwd=REPO, capture_output=True, text=True
        ).stdout.strip(),
        "seam_lines": sum(seam.values()),
        "seam_files": seam,
        "files_naming_each_actor_kind": {k: len(v) for k, v in kinds.items()},
        "files_by_kind": kinds,
        "backend_methods_named_after_a_kind": KIND_NAMED.findall(protocol),
        "longest_functions_topology_driver": [{"lines": n, "where": w} for n, w in longest],
        "topology_files": {p: lines(t) for p, t in sorted(files.items()) if p.startswith("raylab/topology/")},
        "modules_over_400_lines": {p: lines(t) for p, t in sorted(files.items()) if lines(t) > 400},
        "package_pairs_importing_each_other": mutual_packages(files),
        "package_lines": sum(lines(t) for t in files.values()),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before")
    parser.add_argument("after")
    parser.add_argument("--output", required=True)
    args = parser.parse_args()
    results = {"before": shape(args.before), "after": shape(args.after)}
    save_report(
        args.output,
        "code_shape",
        "the source at two revisions, read with git show (nothing checked out or imported); the seam is "
        "raylab/remote/ plus the in-process backend",
        f"python benchmarks/code_shape.py {args.before} {args.after} --output {args.output}",
        results,
    )
    for side in ("before", "after"):
        s = results[side]
        print(
            f"{side} {s['revision']}: seam {s['seam_lines']} lines; kind files {s['files_naming_each_actor_kind']}; "
            f"backend kind methods {s['backend_methods_named_after_a_kind']}; "
            f"longest {s['longest_functions_topology_driver'][0]}; over 400: {s['modules_over_400_lines']}; "
            f"mutual packages {s['package_pairs_importing_each_other']}"
        )


if __name__ == "__main__":
    main()

"""pyproject.toml lists every package explicitly (conf/ is mapped in as raylab.conf): keep it complete."""

import re
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RAY_IMPORT = re.compile(r"^\s*(import|from) ray\b", re.MULTILINE)


def test_every_subpackage_and_config_group_is_packaged():
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "raylab").rglob("__init__.py")}
    found |= {"raylab.conf"} | {f"raylab.conf.{d.name}" for d in (ROOT / "conf").iterdir() if d.is_dir()}
    found = {f for f in found if "__pycache__" not in f}
    assert found <= listed, f"add to [tool.setuptools] packages: {sorted(found - listed)}"


def test_only_remote_imports_ray():
    """Ray at the edge: the Ray backend and the runtime that starts Ray (raylab/remote/ray_backend.py,
    runtime.py). The hosts (raylab/hosts.py) and the in-process backend in raylab/remote are checked like the rest."""
    offenders = []
    for path in (ROOT / "raylab").rglob("*.py"):
        rel = path.relative_to(ROOT / "raylab").parts
        if rel[0] == "remote" and rel[-1] in ("ray_backend.py", "runtime.py"):
            continue
        if RAY_IMPORT.search(path.read_text()):
            offenders.append(str(path.relative_to(ROOT)))
    assert not offenders, f"only raylab/remote/ray_backend.py and runtime.py may import ray: {offenders}"


def test_the_local_topology_never_imports_ray():
    """topology=local: the flows, the in-process backend and the driver loop run without Ray installed."""
    code = (
        "import sys, raylab.train, raylab.topology, raylab.remote.inprocess, raylab.topology.apex_dqn, "
        "raylab.topology.ppo, raylab.topology.appo, raylab.topology.a3c; sys.exit('ray' in sys.modules)"
    )
    assert subprocess.run([sys.executable, "-c", code], cwd=ROOT).returncode == 0, "topology=local imports ray"

"""raylab as users get it: a built wheel (not the editable checkout), its version single-sourced, under its
distribution name (PyPI's "raylab" is another project: every install line must name this one).

The default tier builds the wheel without dependencies and reads it; the slow tier installs it with its
dependencies into a fresh venv and runs ``python -m raylab.train debug=smoke`` from outside the checkout.
"""

from __future__ import annotations

import email
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

import raylab

REPO = Path(__file__).resolve().parents[2]
DIST = "raylab-actor-learner"  # the distribution name; the import name stays raylab


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out, src = tmp_path_factory.mktemp("wheel"), tmp_path_factory.mktemp("src")
    # built from a copy of what the wheel is made of: setuptools leaves build/ behind in the tree it builds
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, src / name)
    skip = shutil.ignore_patterns("__pycache__", "conf")  # raylab/conf: a worktree's symlink to conf/
    shutil.copytree(REPO / "raylab", src / "raylab", ignore=skip)
    shutil.copytree(REPO / "conf", src / "conf", ignore=shutil.ignore_patterns("__pycache__"))
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out), str(src)],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (path,) = out.glob("raylab_actor_learner-*.whl")
    return path


def test_the_version_is_written_once():
    pyproject = (REPO / "pyproject.toml").read_text()
    assert 'dynamic = ["version"]' in pyproject and 'attr = "raylab.__version__"' in pyproject
    assert "\nversion = " not in pyproject.split("[tool.setuptools.dynamic]")[0]  # no second copy in [project]


def test_the_wheel_carries_the_code_and_every_config_but_no_tests(wheel: Path):
    assert wheel.name.startswith(f"raylab_actor_learner-{raylab.__version__}-py3-none-any")
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        (metadata_name,) = [n for n in names if n.endswith(".dist-info/METADATA")]
        metadata = email.message_from_bytes(zf.read(metadata_name))
    assert metadata["Name"] == DIST and metadata["Version"] == raylab.__version__
    conf = {n.removeprefix("raylab/conf/") for n in names if n.startswith("raylab/conf/") and n.endswith(".yaml")}
    shipped = {str(p.relative_to(REPO / "conf")) for p in (REPO / "conf").rglob("*.yaml")}
    assert conf == shipped and "config.yaml" in conf and "experiment/cartpole_dqn.yaml" in conf
    modules = {str(p.relative_to(REPO)) for p in (REPO / "raylab").rglob("*.py") if "conf" not in p.parts}
    assert modules <= names
    assert not any(n.startswith(("tests/", "benchmarks/", "docs/")) for n in names)


def test_the_distribution_name_is_ours_and_the_extras_refer_to_it():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert project["name"] == DIST
    refs = [r for deps in project["optional-dependencies"].values() for r in deps if r.startswith("raylab")]
    assert refs and all(r.startswith(f"{DIST}[") for r in refs), refs  # raylab[bench] would be PyPI's raylab


# `raylab[extra]` (or `pip install raylab`) as a word of its own: what PyPI resolves to the other project
OTHER_RAYLAB = re.compile(r"(?<![\w./-])raylab\\?\[|pip install ['\"]?raylab(?![\w.-])")


def test_no_install_line_names_pypis_other_raylab():
    paths = [REPO / "README.md", REPO / "Makefile", REPO / "pyproject.toml"]
    for folder in ("docs", "conf", "raylab", "scripts", "docker", "examples", ".ci"):
        paths += [p for p in (REPO / folder).rglob("*") if p.is_file() and p.suffix not in (".pyc", ".png")]
    found = [
        f"{p.relative_to(REPO)}: {m.group()}" for p in paths for m in OTHER_RAYLAB.finditer(p.read_text("latin-1"))
    ]
    assert not found, found
    assert OTHER_RAYLAB.search("pip install 'raylab[mario]'") and OTHER_RAYLAB.search("pip install raylab")
    assert not OTHER_RAYLAB.search(f"pip install '{DIST}[mario]' raylab.conf pkg://raylab.conf")


@pytest.mark.slow  # a fresh venv with torch, Ray and the rest: minutes, and about 2 GB of disk
def test_the_wheel_installs_into_a_fresh_venv_and_trains(wheel: Path, tmp_path: Path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    py = str(venv / "bin" / "python")
    for spec in (["torch==2.13.0"], [f"{wheel}[bench]"]):  # torch first, pinned to the CPU build (README)
        proc = subprocess.run([py, "-m", "pip", "install", "--quiet", *spec], capture_output=True, text=True,
                              timeout=1800)  # fmt: skip
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    run_dir = tmp_path / "run"
    env = {**os.environ, "WANDB_MODE": "disabled", "PYTHONPATH": ""}
    proc = subprocess.run(
        [py, "-m", "raylab.train", "debug=smoke", f"hydra.run.dir={run_dir}"],
        capture_output=True, text=True, timeout=900, cwd=tmp_path, env=env,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    where = subprocess.run([py, "-c", "import raylab; print(raylab.__file__, raylab.__version__)"],
                           capture_output=True, text=True, cwd=tmp_path, env=env)  # fmt: skip
    path, version = where.stdout.split()
    assert path.startswith(str(venv)) and version == raylab.__version__  # the installed wheel, not the checkout
    assert json.loads((run_dir / "benchmark_metrics.json").read_text())["total_timesteps"] > 0

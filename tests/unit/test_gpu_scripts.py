"""The one-call GPU scripts (benchmarks/gpu_atari.sh, gpu_mario.sh) refuse what a user can get wrong with a
one-line message naming the fix and exit 2, before any phase starts; gpu_mario.sh unpacks MARIO_WHEELS where
nes-py is missing. DEADLINE_S=0 skips every phase, so nothing trains here."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = ["gpu_atari.sh", "gpu_mario.sh"]


def _run(script: str, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"  # python3 is this interpreter
    full = {**os.environ, "PATH": path, "DEADLINE_S": "0", **(env or {})}
    return subprocess.run(
        ["bash", f"benchmarks/{script}", *args], cwd=REPO, env=full, capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize("script", SCRIPTS)
def test_without_an_output_directory_the_script_says_how_to_call_it(script):
    out = _run(script)
    assert out.returncode == 2
    assert f"usage: bash benchmarks/{script} OUT_DIR" in out.stderr


@pytest.mark.parametrize("script", SCRIPTS)
def test_an_output_directory_that_cannot_be_made_is_refused_naming_the_fix(script, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    out = _run(script, str(blocker / "out"))  # under a regular file: mkdir fails whoever runs it
    assert out.returncode == 2
    assert f"cannot write to {blocker / 'out'}: pass an OUT_DIR" in out.stderr


def _fake_python3(bin_dir: Path) -> dict[str, str]:
    """A python3 whose `import nes_py` fails (a machine without Mario) unless the script's unpacked
    raylab-mario-site is on PYTHONPATH, delegating everything else; the environment that puts it first on PATH."""
    bin_dir.mkdir()
    (bin_dir / "python3").write_text(
        "#!/bin/sh\n"
        'case "$*" in *"import nes_py"*) case "$PYTHONPATH" in *mario-site*) ;; *) exit 1;; esac;; esac\n'
        f'exec {shlex.quote(sys.executable)} "$@"\n'
    )
    (bin_dir / "python3").chmod(0o755)
    return {"PATH": f"{bin_dir}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}


def test_gpu_mario_without_nes_py_stops_before_any_phase_naming_the_fix(tmp_path):
    env = {**_fake_python3(tmp_path / "bin"), "MARIO_WHEELS": ""}
    out = _run("gpu_mario.sh", str(tmp_path / "out"), env=env)
    assert out.returncode == 2
    assert "nes-py is not importable: install raylab's mario extra (make install), or set MARIO_WHEELS=" in out.stderr
    assert not (tmp_path / "out" / "nproc.txt").exists()  # stopped before gpu_phases.sh records the machine


def test_gpu_mario_refuses_a_mario_wheels_folder_without_wheels_naming_the_fix(tmp_path):
    env = {**_fake_python3(tmp_path / "bin"), "MARIO_WHEELS": "wheels"}  # relative: not where the script looks
    out = _run("gpu_mario.sh", str(tmp_path / "out"), env=env)
    assert out.returncode == 2
    assert "MARIO_WHEELS=wheels holds no .whl: name the absolute path of the folder" in out.stderr
    assert not (tmp_path / "out" / "nproc.txt").exists()


def _wheel(path: Path, package: str) -> None:
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(f"{package}/__init__.py", "")


def test_gpu_mario_unpacks_mario_wheels_where_nes_py_is_missing(tmp_path):
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    _wheel(wheels / "nes_py-0-py3-none-any.whl", "nes_py")
    _wheel(wheels / "gym_super_mario_bros-0-py3-none-any.whl", "gym_super_mario_bros")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    env = {**_fake_python3(tmp_path / "bin"), "MARIO_WHEELS": str(wheels), "TMPDIR": str(scratch)}
    out = _run("gpu_mario.sh", str(tmp_path / "out"), env=env)
    assert out.returncode == 0, out.stderr
    [site] = scratch.glob("raylab-mario-site-*")  # outside OUT_DIR: the pack carries no wheels
    assert (site / "nes_py" / "__init__.py").is_file() and (site / "gym_super_mario_bros" / "__init__.py").is_file()
    assert not list((tmp_path / "out").rglob("nes_py"))
    skipped = (tmp_path / "out" / "skipped.txt").read_text()
    assert "env_limit skipped" in skipped and "mario skipped" in skipped  # DEADLINE_S=0: nothing trained

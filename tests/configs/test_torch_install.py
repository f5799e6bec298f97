"""Which torch `make install` installs, and when it installs again: scripts/torch_choice.py's decision (from
pip's dry-run reports, canned: no torch is installed or downloaded), the Makefile's request stamp (a changed
TORCH_SPEC or EXTRAS installs again), and scripts/install.sh replacing a torch that a new spec would keep."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("torch_choice", REPO / "scripts" / "torch_choice.py")
assert spec is not None and spec.loader is not None
torch_choice = importlib.util.module_from_spec(spec)
sys.modules["torch_choice"] = torch_choice
spec.loader.exec_module(torch_choice)

CPU_INDEX = "https://download.pytorch.org/whl/cpu"
LOCAL_CPU = "file:///opt/wheels/torch-2.13.0%2Bcpu-cp311-cp311-manylinux_2_28_x86_64.whl"
PYPI_CUDA = "https://files.pythonhosted.org/packages/ab/cd/torch-2.13.0-cp311-cp311-manylinux_2_28_x86_64.whl"
INDEX_CPU = "https://download.pytorch.org/whl/cpu/torch-2.13.0%2Bcpu-cp311-cp311-manylinux_2_28_x86_64.whl"
NVIDIA = ["filelock", 'nvidia-cublas-cu13==13.0.0.19; platform_system == "Linux"', "sympy>=1.13.3"]


def report(url: str, version: str, requires: list[str]) -> dict:
    meta = {"name": "torch", "version": version, "requires_dist": requires}
    return {"version": "1", "install": [{"download_info": {"url": url}, "metadata": meta}]}


def test_a_cpu_wheel_at_hand_keeps_the_pin_and_the_index_is_not_asked():
    pinned = torch_choice.from_report(report(LOCAL_CPU, "2.13.0+cpu", ["filelock", "sympy>=1.13.3"]))
    choice = torch_choice.choose(pinned, lambda: pytest.fail("the CPU index asked for"), CPU_INDEX)
    assert choice.args == ["torch==2.13.0"]
    assert choice.line == (
        "torch: torch==2.13.0, a CPU build found by pip (torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl "
        "from /opt/wheels)"
    )


def test_the_public_index_alone_takes_the_cpu_index():
    pinned = torch_choice.from_report(report(PYPI_CUDA, "2.13.0", NVIDIA))
    offered = torch_choice.from_report(report(INDEX_CPU, "2.13.0+cpu", ["filelock"]))
    choice = torch_choice.choose(pinned, lambda: offered, CPU_INDEX)
    assert choice.args == ["torch==2.13.0+cpu", "--extra-index-url", CPU_INDEX]
    assert "from the PyTorch CPU index" in choice.line
    assert "torch-2.13.0-cp311-cp311-manylinux_2_28_x86_64.whl, a CUDA build" in choice.line


def test_neither_warns_with_what_it_downloads_and_the_fix():
    pinned = torch_choice.from_report(report(PYPI_CUDA, "2.13.0", NVIDIA))
    choice = torch_choice.choose(pinned, lambda: None, CPU_INDEX)
    assert choice.args == ["torch==2.13.0"]
    assert choice.line.startswith("torch: warning: torch==2.13.0 installs torch-2.13.0-cp311")
    assert "a CUDA build of several GB" in choice.line and 'TORCH_SPEC="torch --index-url <index>"' in choice.line


def test_a_cpu_build_only_counts_from_the_cpu_index_itself():
    """The CPU index is asked with --index-url, but pip's find-links still apply: a local wheel it returns
    instead says nothing about the index answering."""
    pinned = torch_choice.from_report(report(PYPI_CUDA, "2.13.0", NVIDIA))
    local = torch_choice.from_report(report(LOCAL_CPU, "2.13.0+cpu", []))
    assert torch_choice.choose(pinned, lambda: local, CPU_INDEX).line.startswith("torch: warning:")


@pytest.mark.parametrize(
    ("version", "requires", "cuda"),
    [("2.13.0", NVIDIA, True), ("2.13.0+cu130", [], True), ("2.13.0+cpu", ["filelock"], False), ("2.13.0", [], False)],
)
def test_a_cuda_build_is_told_by_its_metadata(version, requires, cuda):
    assert torch_choice.is_cuda_build(version, requires) is cuda


def fake_pip(tmp_path: Path, reports: dict[str, dict | None]) -> Path:
    """A Python stand-in whose `-m pip install --dry-run ... --report - <requirement> ...` prints a canned
    report for the requirement (or fails, as an index that does not answer); it logs each call."""
    script = tmp_path / "python"
    log = tmp_path / "calls.jsonl"
    script.write_text(
        f"#!{sys.executable}\nimport json, sys\n"
        f"reports = {json.dumps(reports)}\n"
        f"open({str(log)!r}, 'a').write(json.dumps(sys.argv[1:]) + '\\n')\n"
        "req = sys.argv[sys.argv.index('-') + 1]\n"
        "if reports.get(req) is None:\n    sys.exit(1)\n"
        "print(json.dumps(reports[req]))\n"
    )
    script.chmod(0o755)
    return script


def run_choice(python: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(REPO / "scripts" / "torch_choice.py"), "--pip", str(python)],
        capture_output=True, text=True, timeout=60, env={**os.environ, **env},
    )  # fmt: skip


def test_the_script_prints_the_pip_arguments_and_one_line_why(tmp_path):
    at_hand = fake_pip(tmp_path, {"torch==2.13.0": report(LOCAL_CPU, "2.13.0+cpu", [])})
    proc = run_choice(at_hand)
    assert proc.returncode == 0 and proc.stdout == "torch==2.13.0\n"
    assert proc.stderr.startswith("torch: torch==2.13.0, a CPU build found by pip") and proc.stderr.count("\n") == 1
    calls = [json.loads(line) for line in (tmp_path / "calls.jsonl").read_text().splitlines()]
    assert len(calls) == 1 and "--dry-run" in calls[0] and "--no-deps" in calls[0]  # nothing installed

    public = tmp_path / "public"
    public.mkdir()
    index = "http://127.0.0.1:9/whl/cpu"
    reports = {"torch==2.13.0": report(PYPI_CUDA, "2.13.0", NVIDIA),
               "torch==2.13.0+cpu": report(f"{index}/torch-2.13.0%2Bcpu-cp311.whl", "2.13.0+cpu", [])}  # fmt: skip
    proc = run_choice(fake_pip(public, reports), RAYLAB_TORCH_CPU_INDEX=index)
    assert proc.stdout == f"torch==2.13.0+cpu --extra-index-url {index}\n", proc.stderr
    calls = [json.loads(line) for line in (public / "calls.jsonl").read_text().splitlines()]
    assert calls[1][-2:] == ["--index-url", index]


MAKE_VARS = ["PY=" + sys.executable, "PYTHON=" + sys.executable]


def make_stamp(tmp_path: Path, *assignments: str) -> subprocess.CompletedProcess[str]:
    fake = tmp_path / "install.sh"
    fake.write_text(f'echo "TORCH_SPEC=$TORCH_SPEC EXTRAS=$EXTRAS" >> {tmp_path / "installs.log"}\n')
    venv = tmp_path / "venv"
    return subprocess.run(
        ["make", "-C", str(REPO), f"{venv}/.raylab-installed", f"VENV={venv}", f"INSTALL_SCRIPT={fake}",
         *MAKE_VARS, *assignments],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def installs(tmp_path: Path) -> list[str]:
    log = tmp_path / "installs.log"
    return log.read_text().splitlines() if log.exists() else []


def test_make_install_acts_on_a_changed_torch_spec_or_extras(tmp_path):
    assert make_stamp(tmp_path).returncode == 0
    assert installs(tmp_path) == ["TORCH_SPEC=auto EXTRAS=dev,bench,mario,procgen"]
    stamp = (tmp_path / "venv" / ".raylab-installed").read_text().splitlines()
    assert stamp[:2] == ["TORCH_SPEC=auto", "EXTRAS=dev,bench,mario,procgen"] and stamp[2].startswith("torch=")

    assert make_stamp(tmp_path).returncode == 0  # the same request: nothing to do
    assert len(installs(tmp_path)) == 1

    cuda = "TORCH_SPEC=torch --index-url https://download.pytorch.org/whl/cu130"
    assert make_stamp(tmp_path, cuda).returncode == 0
    assert installs(tmp_path)[-1] == f"{cuda} EXTRAS=dev,bench,mario,procgen"
    assert (tmp_path / "venv" / ".raylab-installed").read_text().startswith(cuda + "\n")
    assert make_stamp(tmp_path, cuda).returncode == 0
    assert len(installs(tmp_path)) == 2
    assert make_stamp(tmp_path, cuda, "EXTRAS=dev").returncode == 0
    assert installs(tmp_path)[-1].endswith(" EXTRAS=dev") and len(installs(tmp_path)) == 3


def fake_torch_wheel(folder: Path, build: str) -> Path:
    """A wheel of a distribution named torch, version 0.0.1, whose module says which ``build`` it is."""
    folder.mkdir()
    path = folder / "torch-0.0.1-py3-none-any.whl"
    files = {
        "torch/__init__.py": f"BUILD = {build!r}\n",
        "torch-0.0.1.dist-info/METADATA": "Metadata-Version: 2.1\nName: torch\nVersion: 0.0.1\n",
        "torch-0.0.1.dist-info/WHEEL": (
            "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        ),
    }
    record = "".join(f"{name},,\n" for name in files) + "torch-0.0.1.dist-info/RECORD,,\n"
    with zipfile.ZipFile(path, "w") as whl:
        for name, text in {**files, "torch-0.0.1.dist-info/RECORD": record}.items():
            whl.writestr(name, text)
    return path


@pytest.mark.slow  # 40 s of venvs and pip installs; the decision itself is tested above without installing
def test_install_replaces_a_torch_that_the_new_spec_would_keep(tmp_path):
    """`pip install torch --find-links GPU` keeps an installed torch 0.0.1: it satisfies `torch`. install.sh
    knows the torch was installed with another spec and replaces it."""
    cpu = fake_torch_wheel(tmp_path / "cpu", "cpu")
    fake_torch_wheel(tmp_path / "gpu", "gpu")
    venv = tmp_path / "venv"

    def install(torch_spec: str) -> subprocess.CompletedProcess[str]:
        env = {
            **os.environ, "VENV": str(venv), "PYTHON": sys.executable, "SKIP_SYSTEM_DEPS": "1",
            "TORCH_SPEC": torch_spec, "EXTRAS": "", "RAYLAB_PIP_ARGS": "--no-deps",
        }  # fmt: skip
        return subprocess.run(["bash", str(REPO / "scripts" / "install.sh")], env=env, capture_output=True,
                              text=True, timeout=600)  # fmt: skip

    def build() -> str:
        return subprocess.run([str(venv / "bin" / "python"), "-c", "import torch; print(torch.BUILD)"],
                              capture_output=True, text=True, timeout=60, cwd=tmp_path).stdout.strip()  # fmt: skip

    first = install(str(cpu))
    assert first.returncode == 0, first.stdout + first.stderr
    assert build() == "cpu" and (venv / ".raylab-torch").read_text() == f"{cpu}\n"
    gpu_spec = f"torch --no-index --find-links {tmp_path / 'gpu'}"
    second = install(gpu_spec)
    assert second.returncode == 0, second.stdout + second.stderr
    assert f"torch: replacing the torch installed with '{cpu}' by '{gpu_spec}'" in second.stdout
    assert build() == "gpu" and (venv / ".raylab-torch").read_text() == f"{gpu_spec}\n"
    third = install(gpu_spec)  # the same spec: nothing replaced
    assert third.returncode == 0 and "replacing" not in third.stdout and build() == "gpu"
    (venv / ".raylab-torch").unlink()  # a venv installed before the record was kept
    fourth = install(str(cpu))
    assert fourth.returncode == 0, fourth.stdout + fourth.stderr
    assert f"torch: replacing the torch installed with 'an unrecorded spec' by '{cpu}'" in fourth.stdout
    assert build() == "cpu"

"""docker/: what can be checked without a Docker engine (none runs on these machines). The Dockerfiles pass
hadolint and install through scripts/install.sh, the same script `make install` runs; that script really
installs raylab into a fresh venv; the compose file publishes nothing beyond loopback and keeps the Ray token
out of the image."""

import os
import re
import subprocess
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
DOCKERFILES = [REPO / "docker" / "Dockerfile.cpu", REPO / "docker" / "Dockerfile.cuda"]


def test_dockerfiles_pass_hadolint():
    hadolint = Path(sys.executable).parent / "hadolint"
    proc = subprocess.run(
        [str(hadolint), "--config", str(REPO / ".hadolint.yaml"), *map(str, DOCKERFILES)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_one_install_procedure_for_make_and_both_images():
    for dockerfile in DOCKERFILES:
        text = dockerfile.read_text()
        assert re.search(r"^RUN .*bash scripts/install.sh", text, re.MULTILINE), dockerfile
        assert "pip install" not in text, f"{dockerfile} installs around scripts/install.sh"
        assert "COPY scripts/ scripts/" in text and "USER 1000" in text  # not root at run time
    makefile = (REPO / "Makefile").read_text()
    stamp_recipe = makefile.split("$(STAMP): pyproject.toml scripts/install.sh", 1)[1].split("\n\n", 1)[0]
    assert "bash scripts/install.sh" in stamp_recipe and "pip install" not in stamp_recipe
    assert "bash scripts/install.sh --system-deps-only" in makefile


def test_install_script_installs_raylab_into_a_fresh_venv(tmp_path):
    venv = tmp_path / "venv"
    env = {
        **os.environ, "VENV": str(venv), "PYTHON": sys.executable, "SKIP_SYSTEM_DEPS": "1", "TORCH_SPEC": "",
        "EXTRAS": "", "RAYLAB_PIP_ARGS": "--no-deps",
    }  # fmt: skip
    proc = subprocess.run(["bash", str(REPO / "scripts" / "install.sh")], env=env, capture_output=True, text=True,
                          timeout=600)  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"raylab installed into {venv}" in proc.stdout
    check = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import raylab, raylab.conf; print(raylab.__version__, raylab.__file__)"],
        capture_output=True, text=True, timeout=60, cwd=tmp_path,
    )  # fmt: skip
    assert check.returncode == 0, check.stderr
    assert check.stdout.split()[1].startswith(str(REPO / "raylab"))  # editable: the checkout's code


def test_system_deps_step_alone():
    proc = subprocess.run(["bash", str(REPO / "scripts" / "install.sh"), "--system-deps-only"],
                          capture_output=True, text=True, timeout=600)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "system packages present" in proc.stdout  # this machine has them (make install put them there)


def test_compose_publishes_only_loopback_and_keeps_the_token_out():
    compose = yaml.safe_load((REPO / "docker" / "compose.yaml").read_text())
    services = compose["services"]
    assert set(services) == {"ray-head", "ray-worker"}
    head, worker = services["ray-head"], services["ray-worker"]
    assert all(port.startswith("127.0.0.1:") for port in head["ports"])
    assert "ports" not in worker
    assert "ray start --head" in head["command"] and "--address=ray-head:6379" in worker["command"]
    for service in (head, worker):
        assert service["build"]["dockerfile"] == "docker/Dockerfile.cpu"
        assert service["environment"]["RAY_AUTH_MODE"] == "token"
        assert service["environment"]["RAY_AUTH_TOKEN"].startswith("${RAY_AUTH_TOKEN")  # from .env, not literal
    ignored = (REPO / ".dockerignore").read_text().split()
    assert {".venv", "outputs", ".git", "*.pt"} <= set(ignored)

"""docker/: what can be checked without a Docker engine (none runs on these machines). The Dockerfiles pass
hadolint and install through scripts/install.sh, the same script `make install` runs; that script really
installs raylab into a fresh venv; the compose file publishes nothing beyond loopback and keeps the Ray token
out of the image."""

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
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
    assert "bash $(INSTALL_SCRIPT)" in stamp_recipe and "pip install" not in stamp_recipe
    assert "INSTALL_SCRIPT ?= scripts/install.sh" in makefile
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


def test_image_build_takes_pip_settings_from_every_config_file(tmp_path):
    """`make image` hands the machine's pip settings to the build. They are read from pip's merged
    configuration, not from the user file alone: here from $PIP_CONFIG_FILE, [install] over [global]."""
    wheels, constraints = tmp_path / "wheels", tmp_path / "constraints.txt"
    wheels.mkdir()
    constraints.write_text("numpy<3\n")
    config = tmp_path / "pip.conf"
    config.write_text(
        f"[global]\nfind-links = {wheels}\nconstraint = /nonexistent\n[install]\nconstraint = {constraints}\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env |= {"PIP_CONFIG_FILE": str(config), "OUT": str(tmp_path / "out")}
    proc = subprocess.run(["bash", str(REPO / "scripts" / "image.sh"), "pip-config"], env=env, capture_output=True,
                          text=True, timeout=120)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert f"--build-arg PIP_CONSTRAINT={constraints}" in lines and f"-v {constraints}:{constraints}:ro" in lines
    assert f"--build-arg PIP_FIND_LINKS={wheels}" in lines and f"-v {wheels}:{wheels}:ro" in lines
    # the environment overrides every file, as it does for pip itself
    env["PIP_CONSTRAINT"] = str(tmp_path / "env-constraints.txt")
    (tmp_path / "env-constraints.txt").write_text("")
    proc = subprocess.run(["bash", str(REPO / "scripts" / "image.sh"), "pip-config"], env=env, capture_output=True,
                          text=True, timeout=120)  # fmt: skip
    assert f"--build-arg PIP_CONSTRAINT={tmp_path / 'env-constraints.txt'}" in proc.stdout.splitlines()


def node_wrapper(data: Path) -> str:
    """scripts/image.sh's NODE_WRAPPER (what each Ray node container runs), with /data at ``data``."""
    text = (REPO / "scripts" / "image.sh").read_text()
    return text.split("\nNODE_WRAPPER='", 1)[1].split("'\n", 1)[0].replace("/data/", f"{data}/")


@pytest.mark.parametrize("stopped", [True, False])
def test_image_cluster_nodes_stop_cleanly_when_asked_and_fail_loudly_otherwise(tmp_path, stopped):
    """The cluster step's cleanup asks each node to stop (a file in its /data): `ray start --block` gets SIGTERM
    and exits 1, as Ray's does, and the node ends with status 0 and one line saying so. A node whose
    `ray start` ends by itself keeps that status."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake_ray = bin_dir / "ray"  # exits 1 on SIGTERM like `ray start --block`; else runs 60 s or fails at once
    fake_ray.write_text(
        "#!/bin/sh\n"
        f"trap 'echo TERM > {tmp_path}/signal; exit 1' TERM\n"
        f'echo "$@" > {tmp_path}/args.tmp && mv {tmp_path}/args.tmp {tmp_path}/args\n'
        + ("i=0; while [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done\n" if stopped else "exit 3\n")
    )
    fake_ray.chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    node = subprocess.Popen(["sh", "-c", node_wrapper(tmp_path), "node", "worker", "--address=127.0.0.1:1"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)  # fmt: skip
    if stopped:  # once the node runs (its trap set before it wrote its arguments), ask it to stop
        deadline = time.monotonic() + 60
        while not (tmp_path / "args").exists() and node.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        (tmp_path / ".stop-worker").touch()
    out, _ = node.communicate(timeout=30)
    assert (tmp_path / "args").read_text().split() == ["start", "--block", "--address=127.0.0.1:1"]
    if stopped:
        assert node.returncode == 0 and out.strip() == "raylab image: the worker node stopped"
        assert (tmp_path / "signal").read_text().strip() == "TERM"
    else:
        assert node.returncode == 3 and "stopped" not in out


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


def test_cuda_image_build_leaves_out_the_local_wheel_folder(tmp_path):
    """The CUDA image takes PyPI's CUDA torch: a find-links folder (where a CPU torch of the same version lies)
    would win over it, so `KIND=cuda` hands the build every pip setting but that one, and says so."""
    wheels, constraints = tmp_path / "wheels", tmp_path / "constraints.txt"
    wheels.mkdir()
    constraints.write_text("torch<=2.14.1\n")
    config = tmp_path / "pip.conf"
    config.write_text(f"[global]\nfind-links = {wheels}\nconstraint = {constraints}\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env |= {"PIP_CONFIG_FILE": str(config), "OUT": str(tmp_path / "out")}
    for kind, has_wheels in (("cpu", True), ("cuda", False)):
        proc = subprocess.run(["bash", str(REPO / "scripts" / "image.sh"), "pip-config"], env=env | {"KIND": kind},
                              capture_output=True, text=True, timeout=120)  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        lines = proc.stdout.splitlines()
        assert f"--build-arg PIP_CONSTRAINT={constraints}" in lines, kind
        assert (f"--build-arg PIP_FIND_LINKS={wheels}" in lines) is has_wheels, kind
        assert ("leaves out pip's find-links folder" in proc.stderr) is not has_wheels, kind
    proc = subprocess.run(["bash", str(REPO / "scripts" / "image.sh"), "pip-config"], env=env | {"KIND": "rocm"},
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert proc.returncode == 2 and proc.stderr.strip() == (
        "raylab image: unknown KIND 'rocm': use KIND=cpu or KIND=cuda"
    )

"""``make image`` end to end (slow tier): scripts/image.sh builds docker/Dockerfile.cpu with buildah (chroot
isolation, vfs storage) from a Debian base made with debootstrap, runs a short training run inside the image
with its outputs on a bind mount, then a Ray head and a worker node in two ``buildah run`` containers and a
``ray job submit`` from the host, whose actors must land on both nodes. Skipped, with the reason in one
line, where it cannot run: not root, or buildah/debootstrap missing (``make install-image-tools``)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.slow, pytest.mark.cluster]


def missing() -> str | None:
    if os.geteuid() != 0:
        return "make image needs root (buildah chroot isolation with vfs storage)"
    tools = [tool for tool in ("buildah", "debootstrap") if shutil.which(tool) is None]
    if tools:
        return f"{' and '.join(tools)} not installed: run `make install-image-tools`"
    return None


@pytest.mark.skipif(missing() is not None, reason=missing() or "")
def test_make_image_builds_runs_and_serves_a_two_container_cluster(tmp_path):
    env = {**os.environ, "OUT": str(tmp_path), "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    proc = subprocess.run(
        ["bash", str(REPO / "scripts" / "image.sh"), "all"], env=env, capture_output=True, text=True, timeout=3600
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    timings = json.loads((tmp_path / "timings.json").read_text())
    assert set(timings) == {"base", "build", "smoke", "cluster"}
    # the smoke run trained inside the image and wrote to the host folder mounted at /data
    smoke = json.loads((tmp_path / "smoke" / "run" / "benchmark_metrics.json").read_text())
    assert smoke["total_timesteps"] > 0 and smoke["total_updates"] > 0
    assert (tmp_path / "smoke" / "run" / "checkpoints" / "final.pt").exists()
    # the job submitted from the host ran with rollout actors on both containers' nodes
    placement = json.loads((tmp_path / "cluster" / "run" / "benchmark_metrics.json").read_text())["placement"]
    assert placement["nodes"] == 2
    assert len({node for name, node in placement["actors"].items() if name.startswith("rollout_")}) == 2
    assert "raylab: done" in (tmp_path / "job.log").read_text()


@pytest.mark.skipif(missing() is not None, reason=missing() or "")
def test_make_image_cuda_builds_with_pypi_cuda_torch_and_trains_on_the_cpu(tmp_path):
    """`make image-cuda`: no CUDA base image, PyPI's CUDA build of torch (several GB of wheels from the index),
    and the smoke run on this machine's CPU, which a CUDA torch does where there is no GPU."""
    env = {**os.environ, "KIND": "cuda", "OUT": str(tmp_path)}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    proc = subprocess.run(
        ["bash", str(REPO / "scripts" / "image.sh"), "all"], env=env, capture_output=True, text=True, timeout=3600
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    assert set(json.loads((tmp_path / "timings.json").read_text())) == {"base", "build", "smoke"}
    assert json.loads((tmp_path / "image.json").read_text())["image"] == "localhost/raylab:cuda"
    torch_line = (tmp_path / "torch.log").read_text()
    assert "CUDA 13.0" in torch_line and "a GPU here: False" in torch_line, torch_line
    smoke = json.loads((tmp_path / "smoke" / "run" / "benchmark_metrics.json").read_text())
    assert smoke["total_timesteps"] > 0 and smoke["total_updates"] > 0

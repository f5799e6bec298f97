"""notebooks/throughput.ipynb runs end to end (nbclient, a real kernel) on a run this test makes."""

import os
from pathlib import Path

import pytest

from raylab.train import run
from tests.conftest import FAKE, make_config

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def tiny_run(tmp_path) -> Path:
    run_dir = tmp_path / "run"
    run(make_config(run_dir, *FAKE, "debug=smoke", "topology=local", "logger.report_every_seconds=0.2"))
    return run_dir


def test_throughput_notebook_executes(tiny_run, monkeypatch):
    import nbformat
    from nbclient import NotebookClient

    monkeypatch.setenv("RAYLAB_RUN_DIRS", str(tiny_run))
    monkeypatch.setenv("RAYLAB_REPO", str(REPO))
    monkeypatch.delenv("MPLBACKEND", raising=False)  # the kernel's inline backend shows the figures
    nb = nbformat.read(REPO / "notebooks" / "throughput.ipynb", as_version=4)
    assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code")  # committed without outputs
    client = NotebookClient(nb, timeout=180, kernel_name="python3", resources={"metadata": {"path": str(REPO)}})
    client.execute()  # raises CellExecutionError on the first failing cell
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    text = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert f"{tiny_run.name} (local, Fake-v0)" in text and "rollout " in text and "learner " in text
    images = [o for o in outputs if o.output_type == "display_data" and "image/png" in o.data]
    assert len(images) >= 4  # throughput, stage breakdown, per-worker wait, scaling curve
    assert os.environ["RAYLAB_RUN_DIRS"] == str(tiny_run)

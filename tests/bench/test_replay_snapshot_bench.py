"""``python -m raylab.bench replay_snapshot`` measures snapshot writes and loads, and a run with vs without."""

import json

import pytest

from raylab.bench.__main__ import main


def bench(tmp_path, *extra):
    out = tmp_path / "snap.json"
    argv = ["replay_snapshot", "--repeats", "1", "--cartpole-capacity", "3000", "--mario-capacity", "5000",
            "--runs-dir", str(tmp_path / "runs"), "--output", str(out), *extra]  # fmt: skip
    assert main(argv) == 0
    assert out.with_suffix(".png").stat().st_size > 0
    return json.loads(out.read_text())


def test_each_layout_is_written_and_loaded_in_full(tmp_path):
    report = bench(tmp_path, "--rounds", "0")
    for layout, row in report["per_snapshot"].items():
        assert row["transitions"] == row["capacity"], layout
        assert row["file_bytes"] > 0 and row["write_s"] > 0 and row["load_s"] > 0
    # frame de-duplication: about one 84x84 frame per transition on disk, not two stacks of four (the pool's
    # slack is a chunk's frames in flight, so this holds from a few thousand transitions up)
    mario = report["per_snapshot"]["mario_dedup"]
    assert mario["file_bytes"] / mario["transitions"] < 1.3 * 84 * 84
    assert report["run"] == {}


@pytest.mark.slow
def test_runs_with_and_without_snapshots_are_compared(tmp_path):
    report = bench(tmp_path, "--rounds", "1", "--seconds", "4", "--checkpoint-every", "1")
    assert report["run"]["snapshots_on"]["snapshot_s"] > 0 and report["run"]["snapshots_off"]["snapshot_s"] == 0
    assert report["run"]["snapshots_on"]["env_steps_per_s"] > 0
    assert list((tmp_path / "runs" / "on_0" / "checkpoints").glob("replay_0_step_*.npz"))

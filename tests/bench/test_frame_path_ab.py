"""benchmarks/frame_path_ab.py: two trees' frame paths, alternating; medians per tree and their ratio."""

from __future__ import annotations

import sys
from typing import Any

import pytest

from tests.bench import ROOT, load_benchmark


@pytest.fixture(scope="module")
def ab() -> Any:
    return load_benchmark("frame_path_ab")


def report(env_only: float, workers: float) -> dict[str, Any]:
    """A frame_path.py report of one run: agent steps/s per measurement."""
    med = {"env_only": env_only, "1_workers/bf16": workers}
    return {"results": {"pong": {"frame_skip": 4, "median_agent_steps_per_s": med}}}


def test_each_tree_gets_its_median_and_new_over_old(ab):
    runs = {
        "old": [report(1000, 400), report(1100, 500), report(900, 300)],
        "new": [report(1000, 600), report(1000, 700)],
    }
    out = ab.summarize(runs, ["pong"])["pong"]["measurements"]
    assert out["env_only"]["old_median_frames_per_s"] == 4000 and out["env_only"]["new_median_frames_per_s"] == 4000
    assert out["env_only"]["new_over_old"] == 1.0
    row = out["1_workers/bf16"]
    assert row["old_agent_steps_per_s"] == [400, 500, 300] and row["new_agent_steps_per_s"] == [600, 700]
    assert row["old_median_frames_per_s"] == 1600 and row["new_median_frames_per_s"] == 2600
    assert row["new_over_old"] == pytest.approx(650 / 400)


def test_a_tree_without_the_benchmark_is_refused(ab, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(sys, "argv", ["frame_path_ab.py", "--old", str(tmp_path), "--new", str(ROOT)])
    assert ab.main() == 2
    assert f"--old {tmp_path} has no benchmarks/frame_path.py" in capsys.readouterr().out

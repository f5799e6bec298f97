"""benchmarks/frame_conversion.py, tiny: both conversions timed per shape and inside the learner, alternating,
with their medians and after / before; the module's conversion is restored after the rounds."""

from __future__ import annotations

import json
import sys

import raylab.models.factory as factory
from tests.bench import load_benchmark


def test_it_times_both_conversions_and_the_learner_with_each(tmp_path, monkeypatch):
    bench = load_benchmark("frame_conversion")
    out = tmp_path / "conversion.json"
    argv = ["frame_conversion.py", str(out), "--rounds", "2", "--seconds", "0.2"]
    monkeypatch.setattr(sys, "argv", argv)
    assert bench.main() == 0
    assert factory.scaled_frames is bench.VERSIONS["after"]
    report = json.loads(out.read_text())
    assert set(report["conversion_us"]) == {name for name, _, _ in bench.SHAPES}
    for name, summary in report["conversion_us"].items():
        rounds = report["conversion_us_rounds"][name]
        assert len(rounds["before"]) == len(rounds["after"]) == 2 and min(rounds["before"] + rounds["after"]) > 0
        assert summary["ratio"] == summary["after"] / summary["before"]
    assert report["dtypes"]["rollout actor, 4 envs, 84x84, bf16"] == "bfloat16"
    for frame in ("64", "84"):
        summary = report["learner_updates_per_s"][frame]
        assert min(report["learner_updates_per_s_rounds"][frame]["before"]) > 0
        assert summary["ratio"] == summary["after"] / summary["before"]

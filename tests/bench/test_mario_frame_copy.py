"""benchmarks/mario_frame_copy.py, tiny: both frame copies timed in MarioEnv.step and in a rollout actor's vector
env, alternating, with their medians and after / before."""

from __future__ import annotations

import json
import sys

from tests.bench import load_benchmark


def test_it_times_both_copies_alone_and_in_the_vector_env(tmp_path, monkeypatch):
    bench = load_benchmark("mario_frame_copy")
    out = tmp_path / "copy.json"
    monkeypatch.setattr(sys, "argv", ["mario_frame_copy.py", str(out), "--rounds", "2", "--seconds", "0.2"])
    assert bench.main() == 0
    report = json.loads(out.read_text())
    assert report["vector_envs"] == 4 and report["frame_skip"] == 4 and report["overrides"] == bench.OVERRIDES
    for key in ("env_frames_per_s", "vector_agent_steps_per_s"):
        rounds, summary = report[f"{key}_rounds"], report[key]
        assert len(rounds["before"]) == len(rounds["after"]) == 2 and min(rounds["before"] + rounds["after"]) > 0
        assert summary["ratio"] == summary["after"] / summary["before"]

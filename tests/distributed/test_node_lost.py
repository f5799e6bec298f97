"""A node lost mid-run (benchmarks/node_lost.py's scenario): on a two-node Ray cluster on this machine, the worker
node holding a rollout actor and an inference actor is removed; their actors restart on the head node and the
run reaches its target, having lost at most the chunks that were in flight on that node."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

pytestmark = [pytest.mark.distributed, pytest.mark.slow]


def load_scenario():
    path = Path(__file__).resolve().parents[2] / "benchmarks" / "node_lost.py"
    spec = importlib.util.spec_from_file_location("node_lost", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_lost_node_s_actors_restart_on_what_is_left_and_the_run_reaches_its_target(tmp_path):
    result = load_scenario().lose_a_node(tmp_path / "run")
    assert {"RolloutHost", "InferenceHost"} <= set(result["held_by_the_lost_node"])
    assert result["returncode"] == 0 and result["stop_reason"].startswith("eval return"), result
    restarts = result["restarts"]
    lost = [name for name in result["held_by_the_lost_node"] if name in ("RolloutHost", "InferenceHost")]
    assert restarts["restarts/rollout"] == lost.count("RolloutHost"), restarts
    assert restarts["restarts/inference"] == lost.count("InferenceHost"), restarts
    assert result["lost_chunks"] <= lost.count("RolloutHost") + restarts["restarts/learner"] * 2, result
    assert result["total_env_steps"] > result["env_steps_at_loss"]

"""A node lost mid-run: a two-node Ray cluster on this machine (ray.cluster_utils.Cluster), a central-inference
run across it, and the worker node removed once it holds a rollout actor and an inference actor. Ray restarts
their actors on the head node; the run goes on to its target. What was lost is read from the run's own
metrics: chunks (restarts/lost_chunks), agent steps (those chunks' steps) and seconds (from the removal to
the first report whose rate is back to half the rate before it).

    python benchmarks/node_lost.py --output benchmarks/node_lost.json

tests/distributed/test_node_lost.py runs the same scenario (``lose_a_node``) and checks it.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HEAD_CPUS, WORKER_CPUS = 5, 3
"""Logical CPUs: the head alone holds the whole run (2 rollout actors, 2 inference actors, the learner)."""


def rows(run_dir: Path) -> list[dict[str, Any]]:
    path = run_dir / "metrics.jsonl"
    if not path.exists():
        return []
    text = path.read_text()
    return [json.loads(line) for line in text[: text.rfind("\n") + 1].splitlines()]


def actors_on(node_id: str) -> list[str]:
    """The classes of the live actors on node ``node_id`` (read from the GCS: the cluster runs no dashboard)."""
    from ray._private.state import actors

    return sorted(
        a["ActorClassName"] for a in actors().values()
        if a.get("State") == "ALIVE" and a.get("Address", {}).get("NodeID") == node_id
    )  # fmt: skip


def lose_a_node(run_dir: Path, experiment: str = "cartpole_appo", timeout: float = 600) -> dict[str, Any]:
    """The scenario; returns what the run lost and how it ended (raises if the worker node never held a rollout
    actor and an inference actor, or the run did not end)."""
    import ray
    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": HEAD_CPUS, "include_dashboard": False})
    worker = cluster.add_node(num_cpus=WORKER_CPUS)
    cluster.wait_for_nodes()
    ray.init(address=cluster.address, include_dashboard=False, logging_level="ERROR")
    cmd = [
        sys.executable, "-m", "raylab.train", f"+experiment={experiment}", "topology.inference=central",
        "topology.inference_actors=2", "topology.num_workers=2", f"ray.address={cluster.address}",
        "logger.report_every_seconds=1", "logger.console=false", "checkpoint.every_seconds=5",
        f"hydra.run.dir={run_dir}",
    ]  # fmt: skip
    log_path = run_dir.parent / f"{run_dir.name}.out"
    env = {**os.environ, "WANDB_MODE": "disabled"}
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + timeout
        while True:  # the run has started training, and the worker node holds what the scenario loses
            assert proc.poll() is None, f"the run ended before the node was lost: {log_path.read_text()[-2000:]}"
            assert time.monotonic() < deadline, "the run never put a rollout and an inference actor on the node"
            done = rows(run_dir)
            held = actors_on(worker.node_id)
            if done and done[-1]["env_steps"] > 0 and {"RolloutHost", "InferenceHost"} <= set(held):
                break
            time.sleep(0.2)
        before = rows(run_dir)
        lost_at = time.time()
        cluster.remove_node(worker)
        proc.wait(timeout=max(deadline - time.monotonic(), 1))
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=60)
        ray.shutdown()
        cluster.shutdown()
    bm = json.loads((run_dir / "benchmark_metrics.json").read_text())
    after = rows(run_dir)
    rate_before = before[-1]["env_steps"] / max(before[-1]["time_s"], 1e-9) if before else 0.0
    later = [r for r in after[len(before) :] if r["time_s"] > before[-1]["time_s"] + 1]
    recovered = next((r for r in later if r.get("throughput/env_steps_per_s", 0.0) >= 0.5 * rate_before), None)
    chunk = bm["config"]["topology"]["rollout_length"] * bm["config"]["topology"]["envs_per_worker"]
    return {
        "experiment": experiment,
        "held_by_the_lost_node": held,
        "returncode": proc.returncode,
        "stop_reason": bm["stop_reason"],
        "restarts": bm["restarts"],
        "lost_chunks": bm["restarts"]["restarts/lost_chunks"],
        "lost_agent_steps": bm["restarts"]["restarts/lost_chunks"] * chunk,
        "seconds_to_half_rate": None if recovered is None else recovered["time_s"] - before[-1]["time_s"],
        "env_steps_at_loss": before[-1]["env_steps"],
        "total_env_steps": bm["total_timesteps"],
        "duration_s": bm["duration_hours"] * 3600,
        "lost_at": time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(lost_at)),
        "final_eval": bm.get("eval"),
    }


def main() -> int:
    from raylab.bench.machine import machine_info

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--experiment", default="cartpole_appo")
    parser.add_argument("--output", default="benchmarks/node_lost.json")
    args = parser.parse_args()
    run_dir = Path(tempfile.mkdtemp(prefix="raylab-node-lost-")) / "run"
    result = lose_a_node(run_dir, args.experiment)
    report = {"benchmark": "node_lost", "machine": machine_info(), "cluster": {"head_cpus": HEAD_CPUS,
              "worker_cpus": WORKER_CPUS}, "run_dir": str(run_dir), **result}  # fmt: skip
    Path(args.output).write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

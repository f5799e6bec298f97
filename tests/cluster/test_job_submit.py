"""The real cluster flow on one machine: ``ray start --head`` plus a second ``ray start --address`` node (two
raylets talking over loopback), then ``ray job submit --working-dir . -- python -m raylab.train ...``. The job
finishes, its actors ran on both nodes (benchmark_metrics.json's placement), and its outputs are in the
``hydra.run.dir`` it was given. The cluster uses Ray's token authentication with a token made here; the
test checks that the token is in nothing the run wrote."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent

pytestmark = pytest.mark.cluster


def free_ports(n: int) -> list[int]:
    """``n`` distinct free ports: every socket stays bound until all are picked, so the OS cannot hand the same
    port out twice (closing each one before the next bind did: Ray refused a head whose dashboard agent's grpc and
    http ports were both 52039)."""
    with contextlib.ExitStack() as stack:
        socks = [stack.enter_context(socket.socket()) for _ in range(n)]
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [int(s.getsockname()[1]) for s in socks]


def start_cluster(env: dict, temp: Path) -> tuple[int, int]:
    """``ray start`` a head and a second node with every port picked here; once more with new ports if another
    process took one of them between the pick and Ray's bind. Returns the GCS and dashboard ports."""
    for attempt in range(3):
        gcs, dashboard, client, *node = free_ports(11)
        head = [
            str(BIN / "ray"), "start", "--head", "--node-ip-address=127.0.0.1", f"--port={gcs}", "--num-cpus=2",
            "--include-dashboard=true", "--dashboard-host=127.0.0.1", f"--dashboard-port={dashboard}",
            f"--ray-client-server-port={client}", f"--temp-dir={temp}", *node_ports(node[:4]),
        ]  # fmt: skip
        worker = [
            str(BIN / "ray"), "start", f"--address=127.0.0.1:{gcs}", "--node-ip-address=127.0.0.1", "--num-cpus=2",
            *node_ports(node[4:]),
        ]  # fmt: skip
        for cmd in (head, worker):
            proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=180)
            if proc.returncode != 0:
                break
        else:
            return gcs, dashboard
        taken = "port" in proc.stderr.lower() and ("in use" in proc.stderr or "used by" in proc.stderr)
        if not taken or attempt == 2:
            raise AssertionError(proc.stdout[-3000:] + proc.stderr[-3000:])
        stop_cluster(str(temp))
    raise AssertionError("unreachable")


def node_ports(ports: list[int]) -> list[str]:
    """Ports a second raylet on the same machine must not share with the first."""
    listen, grpc, metrics, runtime_env = ports
    return [
        f"--dashboard-agent-listen-port={listen}", f"--dashboard-agent-grpc-port={grpc}",
        f"--metrics-export-port={metrics}", f"--runtime-env-agent-port={runtime_env}",
    ]  # fmt: skip


def stop_cluster(tag: str) -> None:
    """Kill this cluster's processes only (``ray stop`` would stop every Ray on the machine, the test
    session's own included): those whose command line names its temp dir, and their children."""
    procs = set()
    for proc in psutil.process_iter(["cmdline"]):
        try:
            if proc.pid != os.getpid() and any(tag in part for part in proc.info["cmdline"] or []):
                procs.add(proc)
                procs.update(proc.children(recursive=True))
        except psutil.Error:
            continue
    for proc in procs:
        with contextlib.suppress(psutil.Error):
            proc.kill()
    psutil.wait_procs(list(procs), timeout=10)


@pytest.fixture(scope="module")
def cluster() -> Iterator[dict]:
    temp = Path(tempfile.mkdtemp(prefix="raylab-cluster-", dir="/tmp"))  # short: Ray's socket paths are limited
    env = {
        **os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}", "RAY_AUTH_MODE": "token",
        "RAY_AUTH_TOKEN": secrets.token_hex(32), "RAY_USAGE_STATS_ENABLED": "0", "WANDB_MODE": "disabled",
    }  # fmt: skip
    env.pop("RAY_ADDRESS", None)
    try:
        gcs, dashboard = start_cluster(env, temp)
        yield {"env": env, "gcs": f"127.0.0.1:{gcs}", "dashboard": f"http://127.0.0.1:{dashboard}", "temp": temp}
    finally:
        stop_cluster(str(temp))
        shutil.rmtree(temp, ignore_errors=True)


def test_two_raylets_join_one_cluster(cluster):
    deadline = time.monotonic() + 60
    while True:
        proc = subprocess.run([str(BIN / "ray"), "status", f"--address={cluster['gcs']}"], env=cluster["env"],
                              capture_output=True, text=True, timeout=60)  # fmt: skip
        active = proc.stdout.split("Active:")[-1].split("Pending:")[0]
        if active.count("node_") == 2 or time.monotonic() > deadline:
            break
        time.sleep(1)
    assert active.count("node_") == 2, proc.stdout + proc.stderr


@pytest.mark.slow  # 32 s; the default tier keeps two raylets joining one cluster
def test_job_submit_runs_on_both_nodes(cluster, tmp_path):
    out = tmp_path / "run"
    cmd = [
        str(BIN / "ray"), "job", "submit", f"--address={cluster['dashboard']}", f"--working-dir={REPO}", "--",
        "python", "-m", "raylab.train", "+experiment=cartpole_dqn", "topology.num_workers=2", "stop.seconds=8",
        "stop.mean_return=null", "eval.every_seconds=null", "eval.final_episodes=2", "logger.console=false",
        f"hydra.run.dir={out}",
    ]  # fmt: skip
    proc = subprocess.run(cmd, env=cluster["env"], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    assert "raylab: done" in proc.stdout and "actors on 2 Ray nodes" in proc.stdout
    bm = json.loads((out / "benchmark_metrics.json").read_text())
    placement = bm["placement"]
    assert placement["nodes"] == 2
    rollout_nodes = {node for name, node in placement["actors"].items() if name.startswith("rollout_")}
    assert len(rollout_nodes) == 2  # SPREAD: one rollout actor per node
    assert bm["total_timesteps"] > 0 and (out / "checkpoints" / "final.pt").exists()
    token = cluster["env"]["RAY_AUTH_TOKEN"].encode()
    assert not [p for p in out.rglob("*") if p.is_file() and token in p.read_bytes()]

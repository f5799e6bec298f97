"""The Ray dashboard an embedded run starts binds to loopback unless ray.dashboard_host says otherwise."""

import os
import subprocess
import sys
import time

import psutil

ENV = {**os.environ, "WANDB_MODE": "disabled"}


def dashboard_listeners(root: int) -> tuple[int, set[str]] | None:
    """(the dashboard's HTTP port, the addresses listening on it) among the run's processes."""
    for proc in psutil.Process(root).children(recursive=True):
        try:
            cmdline = proc.cmdline()
        except psutil.Error:
            continue
        if not any(part.endswith("dashboard/dashboard.py") for part in cmdline):
            continue
        port = int(next(a.split("=", 1)[1] for a in cmdline if a.startswith("--port=")))
        try:
            addresses = {c.laddr.ip for c in proc.net_connections(kind="tcp") if c.status == psutil.CONN_LISTEN
                         and c.laddr.port == port}  # fmt: skip
        except psutil.Error:
            continue
        if addresses:
            return port, addresses
    return None


def test_embedded_dashboard_listens_on_loopback_only(tmp_path):
    cmd = [sys.executable, "-m", "raylab.train", "env=fake", "ray.include_dashboard=true", "stop.seconds=60",
           "stop.env_steps=null", "logger.console=false", f"hydra.run.dir={tmp_path}/run"]  # fmt: skip
    proc = subprocess.Popen(cmd, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline, found = time.monotonic() + 90, None
        while found is None and time.monotonic() < deadline and proc.poll() is None:
            found = dashboard_listeners(proc.pid)
            time.sleep(0.5)
        assert found is not None, "no dashboard found under the run"
        _, addresses = found
        assert addresses == {"127.0.0.1"}, addresses
    finally:
        proc.terminate()
        proc.wait(timeout=60)

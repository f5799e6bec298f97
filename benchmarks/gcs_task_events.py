"""Ray's GCS memory in a long run, with Ray's default task-event buffer (100,000 tasks) and with it capped
at 10,000 (RAY_task_events_max_num_task_in_gcs): two cartpole_appo runs side by side for --seconds, GCS RSS
sampled every 10 s."""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

ARGS = argparse.ArgumentParser(description=__doc__)
ARGS.add_argument("--seconds", type=float, default=420)
ARGS.add_argument("--output", default="benchmarks/gcs_task_events.json")
OPT = ARGS.parse_args()
SECONDS = OPT.seconds
PY = sys.executable
variants = {"ray_default": {}, "capped_10000": {"RAY_task_events_max_num_task_in_gcs": "10000"}}
procs = {}
for name, extra in variants.items():
    env = {**os.environ, "WANDB_MODE": "disabled", **extra}
    env.setdefault("RAY_task_events_max_num_task_in_gcs", "100000")  # Ray's own default, said explicitly
    cmd = [
        PY,
        "-m",
        "raylab.train",
        "+experiment=cartpole_appo",
        f"stop.seconds={SECONDS}",
        "stop.mean_return=null",
        "stop.env_steps=null",
        "logger.console=false",
        f"hydra.run.dir={tempfile.mkdtemp(prefix=name + '-')}",
    ]
    procs[name] = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
samples = {n: [] for n in variants}
start = time.monotonic()
while any(p.poll() is None for p in procs.values()):
    t = time.monotonic() - start
    for name, p in procs.items():
        try:
            gcs = [c for c in psutil.Process(p.pid).children(recursive=True) if c.name().startswith("gcs_server")]
            if gcs:
                samples[name].append((round(t), round(gcs[0].memory_info().rss / 2**20, 1)))
        except psutil.Error:
            pass
    time.sleep(10)
out = {"seconds": SECONDS, "samples": samples, "returncodes": {n: p.returncode for n, p in procs.items()}}
for name, s in samples.items():
    print(name, s[len(s) // 8] if s else None, s[-1] if s else None)
Path(OPT.output).write_text(
    json.dumps({"benchmark": "gcs_task_events", "command": " ".join(["python", *sys.argv]), **out}, indent=1)
)

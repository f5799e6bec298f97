"""A soak: long runs with actors killed on a schedule, every process's memory and file descriptors, Ray's
object store and the run directory sampled throughout, to see whether anything grows after warm-up.

    python benchmarks/soak.py --minutes 30 --kill-every 2 --learner-at 15 --sample-every 10 \
        --runs-dir /tmp/raylab-soak --output benchmarks/soak.json

For each experiment (``--experiments``, default cartpole_dqn, whose topology is apex_dqn, then cartpole_appo),
one fresh ``python -m raylab.train`` for ``--minutes`` of training (no early stop: stop.mean_return and
stop.env_steps off), periodic checkpoints every ``--checkpoint-every`` s with ``--keep`` kept (apex_dqn also
snapshots its replay beside each, checkpoint.replay), topology.max_actor_restarts=-1. One rollout actor is
SIGKILLed every ``--kill-every`` minutes (round-robin over the live ones), the learner once at
``--learner-at`` minutes. Actor processes are found by their Ray process titles (``ray::RolloutHost``...)
under the run's driver, as benchmarks/fault_run.py does.

Every ``--sample-every`` s, from the moment the run writes metrics.jsonl (training time 0): each process of
the run's tree (the driver, every Ray actor and worker by its title, Ray's raylet, which holds the object
store, gcs_server and helper processes) with its RSS and open file descriptors; the object store's used
bytes, asked from the run's raylet over gRPC (GetNodeStats, as ``ray memory --stats-only`` does); the run
directory's size (apparent bytes of its files) and its checkpoint files; the machine's 1-minute load average
and available memory (others may be using the machine).

Figures per run: for every process kind, RSS and fds at ``--early`` minutes (5) and at the end (the median
over the kind's live processes at the sample nearest each time; a killed rollout actor's replacement is a
new process); growth from ``--early`` to the end as a ratio, and as a least-squares slope in MB/min over the
last ``--window`` minutes (20) of that kind's per-sample median; the same for the object store, the fds and
the run directory. "flat" is a computed verdict, not an assertion: slope below ``FLAT_SLOPE_MB_MIN`` and
ratio below ``FLAT_RATIO``.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import math
import os
import re
import shlex
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psutil

FLAT_SLOPE_MB_MIN = 1.0
"""A kind (or the object store, or the run directory) is "flat" when it grows slower than this over the last
``--window`` minutes (20 MB over 20 min)..."""
FLAT_RATIO = 1.10
"""...and its value at the end is below this multiple of its value at ``--early`` minutes."""
FLAT_FDS_SLOPE = 0.5
"""Open descriptors per minute below which a kind's fds count as flat."""
MB = 2**20
STARTING = {"IDLE", "default_worker", "setup_worker"}
"""Kinds of a Ray worker process before it has become an actor (its title is set once it has)."""


def kind_of(proc: psutil.Process, root: int) -> str:
    """A process's kind: the driver, a Ray actor's class (``ray::RolloutHost.sample`` -> RolloutHost), an idle
    Ray worker (IDLE), or the name of a Ray system process (raylet, gcs_server, log_monitor...)."""
    if proc.pid == root:
        return "driver"
    cmd = proc.cmdline()
    if not cmd:
        return proc.name()
    head = cmd[0]
    if head.startswith("ray::"):
        return head[5:].split(".")[0].split("(")[0].split()[0]
    base = os.path.basename(head)
    if base in {"raylet", "gcs_server"}:
        return base
    for arg in cmd[1:4]:  # python .../ray/_private/log_monitor.py, .../dashboard/agent.py
        if arg.endswith(".py"):
            return os.path.basename(arg).removesuffix(".py")
    return base


def tree(root: int) -> list[psutil.Process]:
    try:
        top = psutil.Process(root)
        return [top, *top.children(recursive=True)]
    except psutil.Error:
        return []


def actor_pids(root: int, name: str) -> list[int]:
    pids = []
    for proc in tree(root)[1:]:
        try:
            if kind_of(proc, root) == name:
                pids.append(proc.pid)
        except psutil.Error:
            continue
    return sorted(pids)


def object_store(root: int) -> dict[str, float] | None:
    """The object store's used MB, its plasma objects, the primary copies pinned and the bytes spilled, from the
    debug state the run's raylet writes every 10 s (<session>/logs/debug_state.txt, found from the GCS
    server's --log_dir): used = the node's object_store_memory resource total less its available, which the
    raylet keeps equal to plasma's used bytes (what ``ray status`` shows). Read from the file because asking
    the raylet over gRPC needs the cluster's auth token. None before the raylet has written it."""
    for proc in tree(root):
        try:
            cmd = proc.cmdline()
        except psutil.Error:
            continue
        if not cmd or os.path.basename(cmd[0]) != "gcs_server":
            continue
        log_dir = next((a.split("=", 1)[1] for a in cmd if a.startswith("--log_dir=")), None)
        try:
            text = (Path(log_dir) / "debug_state.txt").read_text() if log_dir else ""
        except OSError:
            return None
        local = re.search(r"Local resources: .*?object_store_memory: \[(\d+)\].*?object_store_memory: \[(\d+)\]", text)
        if not local:
            return None
        total, available = (int(x) / 1e4 for x in local.groups())  # Ray's fixed point: 1e-4 units
        names = ("num local plasma objects", "pinned objects size", "num bytes currently spilled")
        figures = {name: float(m.group(1)) if (m := re.search(rf"- {name}: (\d+)", text)) else None for name in names}
        return {
            "used_mb": (total - available) / MB,
            "objects": figures["num local plasma objects"],
            "pinned_mb": (figures["pinned objects size"] or 0) / MB,
            "spilled_mb": (figures["num bytes currently spilled"] or 0) / MB,
            "capacity_mb": total / MB,
        }
    return None


def dir_size(path: Path) -> tuple[float, int]:
    """Apparent MB of the files under ``path`` and their count."""
    total, count = 0, 0
    for dirpath, _, files in os.walk(path):
        for name in files:
            try:
                total += os.stat(os.path.join(dirpath, name)).st_size
                count += 1
            except OSError:
                continue
    return total / MB, count


def sample(root: int, run_dir: Path, t: float, procs: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """One sample: appends each live process's (t, RSS MB, fds) to ``procs`` (keyed by pid and create time) and
    returns the run-wide figures."""
    for proc in tree(root):
        try:
            with proc.oneshot():
                if proc.status() == psutil.STATUS_ZOMBIE:  # killed, not yet reaped: no memory, no fds left
                    continue
                key = f"{proc.pid}-{proc.create_time():.2f}"
                entry = procs.get(key) or {
                    "pid": proc.pid,
                    "kind": kind_of(proc, root),
                    "t": [],
                    "rss_mb": [],
                    "fds": [],
                }
                rss, fds = proc.memory_info().rss / MB, proc.num_fds()
        except psutil.Error:
            continue
        procs[key] = entry
        if entry["kind"] in STARTING:  # a starting or idle worker becomes an actor: re-read its title
            with contextlib.suppress(psutil.Error):
                entry["kind"] = kind_of(proc, root)
        entry["t"].append(round(t, 1))
        entry["rss_mb"].append(round(rss, 1))
        entry["fds"].append(fds)
    size, files = dir_size(run_dir)
    store = object_store(root)
    return {
        "t": round(t, 1),
        "object_store_mb": None if store is None else round(store["used_mb"], 2),
        "object_store_objects": None if store is None else store["objects"],
        "object_store_pinned_mb": None if store is None else round(store["pinned_mb"], 2),
        "object_store_spilled_mb": None if store is None else round(store["spilled_mb"], 2),
        "run_dir_mb": round(size, 2),
        "run_dir_files": files,
        "checkpoints": sorted(p.name for p in (run_dir / "checkpoints").glob("*")) if run_dir.exists() else [],
        "load1": round(os.getloadavg()[0], 2),
        "mem_available_mb": round(psutil.virtual_memory().available / MB),
    }


def overrides(experiment: str, seconds: float, checkpoint_every: float, keep: int, run_dir: Path) -> list[str]:
    extra = ["checkpoint.replay=true"] if experiment.endswith("_dqn") else []
    return [
        f"+experiment={experiment}",
        f"stop.seconds={seconds:g}",
        "stop.mean_return=null",
        "stop.env_steps=null",
        f"checkpoint.every_seconds={checkpoint_every:g}",
        f"checkpoint.keep={keep}",
        *extra,
        "topology.max_actor_restarts=-1",
        "logger.console=false",
        f"hydra.run.dir={run_dir}",
    ]


def soak(experiment: str, run_dir: Path, args: argparse.Namespace) -> dict[str, Any]:
    seconds = args.minutes * 60
    cmd = [
        sys.executable,
        "-m",
        "raylab.train",
        *overrides(experiment, seconds, args.checkpoint_every, args.keep, run_dir),
    ]
    env = {**os.environ, "WANDB_MODE": "disabled"}
    run_dir.mkdir(parents=True, exist_ok=True)
    log = (run_dir.parent / f"{run_dir.name}.log").open("wb")
    launched = time.monotonic()
    proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT)
    print(f"[{experiment}] pid {proc.pid}: {shlex.join(cmd)}", flush=True)
    while not (run_dir / "metrics.jsonl").exists() and proc.poll() is None:
        time.sleep(0.2)
    start = time.monotonic()
    kills: list[dict[str, Any]] = []
    samples: list[dict[str, Any]] = []
    procs: dict[str, dict[str, Any]] = {}
    next_kill = args.kill_every * 60 if args.kill_every else None
    learner_at = args.learner_at * 60 if args.learner_at is not None else None
    next_sample = 0.0
    rollouts_killed = 0
    while proc.poll() is None:
        elapsed = time.monotonic() - start
        if next_kill is not None and elapsed >= next_kill and elapsed < seconds:
            pids = actor_pids(proc.pid, "RolloutHost")
            if pids:
                pid = pids[rollouts_killed % len(pids)]
                os.kill(pid, signal.SIGKILL)
                rollouts_killed += 1
                kills.append({"actor": "rollout", "pid": pid, "at_s": round(elapsed, 1)})
            next_kill += args.kill_every * 60
        if learner_at is not None and elapsed >= learner_at:
            pids = actor_pids(proc.pid, "LearnerHost")
            if pids:
                os.kill(pids[0], signal.SIGKILL)
                kills.append({"actor": "learner", "pid": pids[0], "at_s": round(elapsed, 1)})
                learner_at = None
        if elapsed >= next_sample:
            samples.append(sample(proc.pid, run_dir, elapsed, procs))
            next_sample += args.sample_every
            if len(samples) % 30 == 1:
                s = samples[-1]
                print(
                    f"[{experiment}] t={s['t']:.0f}s store={s['object_store_mb']} MB dir={s['run_dir_mb']:.1f} MB "
                    f"load={s['load1']} kills={len(kills)}",
                    flush=True,
                )
        time.sleep(0.2)
    wall = time.monotonic() - launched
    log.close()
    bm_path = run_dir / "benchmark_metrics.json"
    bm = json.loads(bm_path.read_text()) if bm_path.exists() else {}
    ckpt = run_dir / "checkpoints"
    tail = (run_dir.parent / f"{run_dir.name}.log").read_text(errors="replace")[-3000:]
    return {
        "experiment": experiment,
        "command": shlex.join(["python", "-m", "raylab.train", *cmd[3:]]),
        "run_dir": str(run_dir),
        "returncode": proc.returncode,
        "wall_s": round(wall, 1),
        "train_s": round(bm.get("duration_hours", 0) * 3600, 1),
        "stop_reason": bm.get("stop_reason"),
        "env_steps": bm.get("total_timesteps"),
        "restarts": bm.get("restarts"),
        "final_eval": bm.get("eval", {}).get("return_mean"),
        "final_pt": (ckpt / "final.pt").exists(),
        "checkpoint_files_at_end": sorted(p.name for p in ckpt.glob("*")) if ckpt.exists() else [],
        "kills": kills,
        "samples": samples,
        "processes": list(procs.values()),
        "log_tail": tail if proc.returncode else "",
    }


def live_samples(run: dict[str, Any]) -> list[tuple[dict[str, Any], list[tuple[float, float, int]]]]:
    """Each process with its (t, RSS MB, fds) samples, less those taken at or after the soak SIGKILLed it (the
    sample in the same tick as a kill can catch the process while the kernel tears it down, its RSS near 0)."""
    killed = {k["pid"]: k["at_s"] for k in run["kills"]}
    out = []
    for p in run["processes"]:
        dead = killed.get(p["pid"], math.inf) if p["kind"] in {"RolloutHost", "LearnerHost"} else math.inf
        rows = [(t, r, f) for t, r, f in zip(p["t"], p["rss_mb"], p["fds"], strict=True) if t < dead]
        out.append((p, rows))
    return out


def kind_series(run: dict[str, Any], settle: float) -> dict[str, tuple[list[float], list[float], list[float]]]:
    """Per process kind: the sample times and, at each, the median RSS (MB) and median fds over the kind's live
    processes. A process started after the run's first sample (a replaced actor) counts from ``settle`` s after
    it was first seen: a fresh process is still loading (its RSS a fraction of its peers'), and a kind's median
    would dip at every kill."""
    first = run["samples"][0]["t"] if run["samples"] else 0.0
    per_kind: dict[str, dict[float, list[tuple[float, int]]]] = {}
    for p, rows in live_samples(run):
        born = p["t"][0]
        for t, rss, fds in rows:
            if born <= first or t - born >= settle:
                per_kind.setdefault(p["kind"], {}).setdefault(t, []).append((rss, fds))
    out = {}
    for kind, per_t in sorted(per_kind.items()):
        ts = sorted(per_t)
        out[kind] = (
            ts,
            [statistics.median(r for r, _ in per_t[t]) for t in ts],
            [statistics.median(f for _, f in per_t[t]) for t in ts],
        )
    return out


def _at(ts: list[float], vs: list[float], when: float) -> float | None:
    """The value at the sample nearest ``when`` (None without samples)."""
    if not ts:
        return None
    i = min(range(len(ts)), key=lambda j: abs(ts[j] - when))
    return vs[i]


def _slope(ts: list[float], vs: list[float]) -> float | None:
    """Least-squares slope, per minute."""
    if len(ts) < 3:
        return None
    mt, mv = statistics.fmean(ts), statistics.fmean(vs)
    den = sum((t - mt) ** 2 for t in ts)
    return None if den == 0 else sum((t - mt) * (v - mv) for t, v in zip(ts, vs, strict=True)) / den * 60


def _growth(
    ts: list[float],
    vs: list[float],
    early: float,
    end: float,
    window: float,
    flat_slope: float,
    flat_ratio: float | None,
) -> dict[str, Any]:
    """The value at ``early`` and at ``end`` s, their ratio, the slope over the last ``window`` s and the
    verdict."""
    pairs = [(t, v) for t, v in zip(ts, vs, strict=True) if v is not None and t <= end]
    ts, vs = [t for t, _ in pairs], [v for _, v in pairs]
    a, b = _at(ts, vs, early), _at(ts, vs, end)
    tail = [(t, v) for t, v in pairs if t >= end - window]
    slope = _slope([t for t, _ in tail], [v for _, v in tail])
    ratio = b / a if a and b is not None else None
    flat = None
    if slope is not None:
        flat = slope < flat_slope and (flat_ratio is None or ratio is None or ratio < flat_ratio)
    return {
        "early": a,
        "end": b,
        "ratio": None if ratio is None else round(ratio, 3),
        "slope_per_min": None if slope is None else round(slope, 3),
        "flat": flat,
    }


def summarize(run: dict[str, Any], args: argparse.Namespace) -> dict[str, Any]:
    """Per kind: RSS and fds at --early minutes and at the end, growth; the same for the object store and the run
    directory; kills, restarts, checkpoint files, exit status."""
    samples = run["samples"]
    times = [s["t"] for s in samples]
    end = min(args.minutes * 60, times[-1]) if times else 0.0
    early, window = args.early * 60, args.window * 60
    kinds: dict[str, dict[str, Any]] = {}
    for kind, (ts, rss, fds) in kind_series(run, args.settle).items():
        # the longest-lived processes' own slopes: a kind's median mixes a replaced actor's young process in
        own = []
        for p, rows in live_samples(run):
            tail = [(t, v) for t, v, _ in rows if end - window <= t <= end]
            if p["kind"] == kind and len(tail) >= 3 and tail[-1][0] - tail[0][0] >= min(window, 300):
                own.append(_slope([t for t, _ in tail], [v for _, v in tail]))
        kinds[kind] = {
            "processes": sum(1 for p in run["processes"] if p["kind"] == kind),
            "rss_mb": _growth(ts, rss, early, end, window, FLAT_SLOPE_MB_MIN, FLAT_RATIO),
            "fds": _growth(ts, fds, early, end, window, FLAT_FDS_SLOPE, None),
            "max_process_rss_slope_mb_min": round(max((s for s in own if s is not None), default=0.0), 3)
            if own
            else None,
        }
    series = {key: [s[key] for s in samples] for key in ("object_store_mb", "object_store_pinned_mb", "run_dir_mb")}
    loads = [s["load1"] for s in samples]
    restarts = run["restarts"] or {}
    return {
        "kinds": kinds,
        "object_store_mb": _growth(times, series["object_store_mb"], early, end, window, FLAT_SLOPE_MB_MIN, FLAT_RATIO),
        "object_store_pinned_mb": _growth(
            times, series["object_store_pinned_mb"], early, end, window, FLAT_SLOPE_MB_MIN, FLAT_RATIO
        ),
        "run_dir_mb": _growth(times, series["run_dir_mb"], early, end, window, FLAT_SLOPE_MB_MIN, FLAT_RATIO),
        "kills": {k: sum(1 for x in run["kills"] if x["actor"] == k) for k in ("rollout", "learner")},
        "restarts": {k.removeprefix("restarts/"): v for k, v in restarts.items() if v},
        "checkpoint_files_at_end": run["checkpoint_files_at_end"],
        "max_checkpoint_files": max((len(s["checkpoints"]) for s in samples), default=0),
        "returncode": run["returncode"],
        "final_pt": run["final_pt"],
        "load1": {
            "min": min(loads, default=None),
            "median": statistics.median(loads) if loads else None,
            "max": max(loads, default=None),
        },
        "samples": len(samples),
        "end_s": end,
    }


def dumps(report: dict[str, Any]) -> str:
    """The report as indented JSON with each sample and each process's series on one line (indented, they
    would take a line per number)."""
    compact: dict[str, str] = {}

    def mark(x: Any) -> str:
        compact[key := f"@@{len(compact)}@@"] = json.dumps(x)
        return key

    runs = [{**r, "samples": [mark(x) for x in r["samples"]], "processes": [mark(x) for x in r["processes"]]}
            for r in report["runs"]]  # fmt: skip
    text = json.dumps({**report, "runs": runs}, indent=1)
    return re.sub(r'"(@@\d+@@)"', lambda m: compact[m.group(1)], text) + "\n"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--experiments", nargs="+", default=["cartpole_dqn", "cartpole_appo"])
    p.add_argument("--minutes", type=float, default=30.0, help="training minutes per run")
    p.add_argument("--kill-every", type=float, default=2.0, help="minutes between rollout-actor SIGKILLs (0: none)")
    p.add_argument("--learner-at", type=float, default=15.0, help="minute at which the learner is SIGKILLed once")
    p.add_argument("--sample-every", type=float, default=10.0, help="seconds between samples")
    p.add_argument("--checkpoint-every", type=float, default=60.0, help="checkpoint.every_seconds")
    p.add_argument("--keep", type=int, default=2, help="checkpoint.keep")
    p.add_argument("--early", type=float, default=5.0, help="minute of the 'after warm-up' figures")
    p.add_argument(
        "--settle",
        type=float,
        default=30.0,
        help="seconds a replaced actor's new process is left out of its kind's median",
    )
    p.add_argument("--window", type=float, default=20.0, help="minutes at the end the slopes are fitted over")
    p.add_argument("--runs-dir", default="/tmp/raylab-soak")
    p.add_argument("--output", required=True)
    p.add_argument(
        "--summarize-only",
        action="store_true",
        help="run nothing: recompute --output's summaries and PNG from the samples it recorded",
    )
    args = p.parse_args()
    from raylab.bench.machine import machine_info

    output = Path(args.output)
    if args.summarize_only:
        report = json.loads(output.read_text())
        recorded = argparse.Namespace(**{**vars(args), **report["protocol"], "settle": args.settle})
        for run in report["runs"]:
            run["summary"] = summarize(run, recorded)
        report["protocol"]["settle"] = args.settle
        report["summarized_at_commit"] = machine_info()["git_commit"]
        output.write_text(dumps(report))
        plot(report, output.with_suffix(".png"))
        print(f"re-summarized {output} and {output.with_suffix('.png')}")
        return
    machine = {**machine_info(), "nproc": os.cpu_count(), "affinity": len(os.sched_getaffinity(0))}  # at the start
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    runs = []
    for experiment in args.experiments:
        run = soak(experiment, Path(args.runs_dir) / f"{stamp}_{experiment}", args)
        run["summary"] = summarize(run, args)
        runs.append(run)
        print(json.dumps({experiment: {k: v for k, v in run["summary"].items() if k != "kinds"}}), flush=True)
    report = {
        "benchmark": "soak",
        "machine": machine,
        "finished": dt.datetime.now().isoformat(timespec="seconds"),
        "command": shlex.join(["python", "benchmarks/soak.py", *sys.argv[1:]]),
        "protocol": {
            **vars(args),
            "flat_slope_mb_min": FLAT_SLOPE_MB_MIN,
            "flat_ratio": FLAT_RATIO,
            "flat_fds_slope": FLAT_FDS_SLOPE,
        },
        "runs": runs,
    }
    output.write_text(dumps(report))
    plot(report, output.with_suffix(".png"))
    print(f"wrote {output} and {output.with_suffix('.png')}")


def plot(report: dict[str, Any], path: Path) -> None:
    """Per run (a row): RSS per process kind, object store used, open fds per kind, run directory size; the
    kills marked (dashed: a rollout actor, solid: the learner)."""
    import matplotlib

    from raylab.bench.plots import figure, save

    runs = report["runs"]
    fig, axes = figure(width=18, height=4.2 * len(runs), rows=len(runs), cols=4)
    main = ["driver", "RolloutHost", "LearnerHost", "ReplayHost", "EvalHost", "raylet", "gcs_server"]
    seen = {p["kind"] for r in runs for p in r["processes"]}
    kinds = [k for k in main if k in seen] + sorted(seen - set(main))
    cmap = matplotlib.colormaps["tab20"]
    order = [*range(0, 20, 2), *range(1, 20, 2)]  # the 10 saturated colours first, then their light twins
    colour = {kind: cmap(order[i % 20]) for i, kind in enumerate(kinds)}
    for row, run in zip(axes, runs, strict=True):
        name = run["experiment"]
        for kind, (ts, rss, fds) in kind_series(run, report["protocol"]["settle"]).items():
            minutes = [t / 60 for t in ts]
            row[0].plot(minutes, rss, color=colour[kind], label=kind, linewidth=1)
            row[2].plot(minutes, fds, color=colour[kind], label=kind, linewidth=1)
        ts = [s["t"] / 60 for s in run["samples"]]
        for key, label, col in (
            ("object_store_mb", "used", "#4c72b0"),
            ("object_store_pinned_mb", "primary copies pinned", "#dd8452"),
        ):
            store = [(t, s[key]) for t, s in zip(ts, run["samples"], strict=True) if s.get(key) is not None]
            if store:
                row[1].plot(*zip(*store, strict=True), color=col, label=label)
        row[1].legend(fontsize=7)
        row[3].plot(ts, [s["run_dir_mb"] for s in run["samples"]], color="#55a868")
        rc = run["returncode"]
        row[0].set_title(f"{name}: RSS per process kind, MB\n(median of the kind's processes, log scale)", fontsize=9)
        row[1].set_title(f"{name}: Ray object store, MB\n(raylet's debug state, every 10 s)", fontsize=9)
        row[2].set_title(f"{name}: open file descriptors per process\n(median of the kind's processes)", fontsize=9)
        row[3].set_title(f"{name}: run directory size, MB\n(checkpoints rotating; exit status {rc})", fontsize=9)
        row[0].set_yscale("log")
        row[0].legend(fontsize=7, ncol=2)
        for ax in row:
            for kill in run["kills"]:
                ax.axvline(
                    kill["at_s"] / 60,
                    color="#c44e52",
                    alpha=0.4,
                    linestyle="-" if kill["actor"] == "learner" else "--",
                    linewidth=0.8,
                )
            ax.set_xlabel("training minutes (red: SIGKILL, dashed rollout, solid learner)", fontsize=8)
    save(fig, path)


if __name__ == "__main__":
    main()

"""``replay_snapshot``: what ``checkpoint.replay=true`` costs, per snapshot and on a training run.

    python -m raylab.bench replay_snapshot --output benchmarks/replay_snapshot.json

Two measurements, in one run:
- **per snapshot**: seconds to write (``save_snapshot``: npz, fsync, rename) and to load a full replay shard,
  and its size on disk, for three layouts: CartPole's (4 floats, uniform), the same prioritized, and Mario's
  (4 x 84 x 84 uint8 stacks with frame de-duplication; ``--mario-capacity``). Buffers are filled with
  synthetic chunks (random frames, so de-duplication stores one frame per step as on a real emulator);
  medians over ``--repeats``.
- **on a run**: ``cartpole_dqn`` on Ray with a checkpoint every ``--checkpoint-every`` seconds, with and
  without replay snapshots, alternated round by round, each in a fresh ``python -m raylab.train``
  process; training-time env steps/s and updates/s from benchmark_metrics.json, and the seconds the driver
  spent snapshotting (``timing/replay/snapshot_s``).
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from raylab.bench import plots
from raylab.bench.checks import count, duration, output_file
from raylab.bench.machine import machine_info
from raylab.bench.timer_overhead import train_run
from raylab.replay.buffer import PrioritizedSpec, ReplayBuffer
from raylab.replay.snapshot import load_snapshot, save_snapshot
from raylab.types import Chunk

RUN = ("+experiment=cartpole_dqn", "stop.mean_return=null", "eval.every_seconds=null", "eval.final_episodes=0",
       "logger.console=false", "stop.env_steps=null")  # fmt: skip


def add_parser(commands: Any) -> None:
    p = commands.add_parser("replay_snapshot", help="cost of checkpoint.replay: per snapshot, and a run on vs off")
    p.add_argument("--repeats", type=count, default=3, help="snapshot writes and loads per layout")
    p.add_argument("--cartpole-capacity", type=int, default=50_000, help="cartpole_dqn's replay.capacity")
    p.add_argument("--mario-capacity", type=int, default=100_000, help="mario_dqn's replay.capacity")
    p.add_argument("--rounds", type=int, default=3, help="training runs per setting (alternating); 0: none")
    p.add_argument("--seconds", type=duration, default=30.0, help="training seconds per run")
    p.add_argument("--checkpoint-every", type=float, default=5.0, help="checkpoint.every_seconds of the runs")
    p.add_argument("--runs-dir", default=None, help="where the runs write (default outputs/bench/<output stem>)")
    p.add_argument("--output", type=output_file, required=True, help="JSON to write; the PNG goes next to it")
    p.set_defaults(func=run)


def _chunk(rng: np.random.Generator, obs_shape: tuple[int, ...], dtype: Any, steps: int, envs: int, seq: int) -> Chunk:
    if np.dtype(dtype) == np.uint8:  # frame stacks that shift by one new random frame per step
        k = obs_shape[0]
        frames = rng.integers(0, 256, (steps + k, envs, *obs_shape[1:]), dtype=np.uint8)
        obs = np.stack([frames[t : t + k].transpose(1, 0, 2, 3) for t in range(steps + 1)])
    else:
        obs = rng.standard_normal((steps + 1, envs, *obs_shape)).astype(dtype)
    return Chunk(
        obs=obs, actions=rng.integers(0, 2, (steps, envs)), rewards=np.ones((steps, envs), np.float32),
        terminated=np.zeros((steps, envs), bool), truncated=np.zeros((steps, envs), bool),
        final_obs=np.zeros((0, *obs_shape), dtype), final_index=np.zeros((0, 2), np.int64),
        policy_version=0, worker_id=0, seq=seq,
    )  # fmt: skip


def filled_buffer(layout: str, capacity: int) -> ReplayBuffer:
    rng = np.random.default_rng(0)
    shape: tuple[int, ...]
    dtype: np.dtype[Any]
    if layout == "mario_dedup":
        shape, dtype = (4, 84, 84), np.dtype(np.uint8)
        buffer = ReplayBuffer(capacity, shape, dtype, n_step=3, gamma=0.99, seed=0, frame_stack=4, dedup=True)
    else:
        shape, dtype = (4,), np.dtype(np.float32)
        spec = PrioritizedSpec() if layout == "cartpole_prioritized" else None
        buffer = ReplayBuffer(capacity, shape, dtype, n_step=3, gamma=0.99, seed=0, prioritized=spec)
    seq = 0
    while buffer.writer.total < capacity:
        buffer.add_chunk(_chunk(rng, shape, dtype, 64, 8, seq))
        seq += 1
    return buffer


def per_snapshot(layout: str, capacity: int, repeats: int) -> dict[str, Any]:
    buffer = filled_buffer(layout, capacity)
    writes, loads = [], []
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "replay_0_step_000000000001.npz"
        for _ in range(repeats):
            start = time.perf_counter()
            save_snapshot(path, buffer)
            writes.append(time.perf_counter() - start)
            start = time.perf_counter()
            load_snapshot(path, buffer)
            loads.append(time.perf_counter() - start)
        size = path.stat().st_size
    return {
        "capacity": capacity,
        "transitions": len(buffer),
        "replay_nbytes": buffer.nbytes,
        "file_bytes": size,
        "write_s": statistics.median(writes),
        "load_s": statistics.median(loads),
        "write_mb_per_s": size / 2**20 / statistics.median(writes),
        "writes": writes,
        "loads": loads,
    }


def run(args: argparse.Namespace, overrides: list[str]) -> int:
    output = Path(args.output)
    runs_dir = Path(args.runs_dir or Path("outputs") / "bench" / output.stem)
    layouts = {"cartpole": args.cartpole_capacity, "cartpole_prioritized": args.cartpole_capacity,
               "mario_dedup": args.mario_capacity}  # fmt: skip
    snapshots = {}
    for layout, capacity in layouts.items():
        snapshots[layout] = row = per_snapshot(layout, capacity, args.repeats)
        print(f"{layout:22s} {row['transitions']:>7,} transitions  {row['file_bytes'] / 2**20:8.1f} MiB  "
              f"write {row['write_s']:.3f} s  load {row['load_s']:.3f} s", flush=True)  # fmt: skip
    results: dict[str, list[dict[str, Any]]] = {"on": [], "off": []}
    for r in range(args.rounds):
        for setting in ("on", "off") if r % 2 == 0 else ("off", "on"):
            extra = [
                *RUN,
                f"stop.seconds={args.seconds}",
                f"checkpoint.every_seconds={args.checkpoint_every}",
                f"checkpoint.replay={'true' if setting == 'on' else 'false'}",
                f"seed={r}",
                *overrides,
            ]
            run_dir = runs_dir / f"{setting}_{r}"
            result = train_run(extra, run_dir)
            rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
            result["snapshot_s"] = sum(row.get("timing/replay/snapshot_s", 0.0) for row in rows)
            results[setting].append(result)
            print(
                f"round {r} snapshots {setting:3s}: {result['env_steps_per_s']:8.0f} env steps/s "
                f"{result['updates_per_s']:7.1f} updates/s, {result['snapshot_s']:.2f} s snapshotting",
                flush=True,
            )
    summary: dict[str, Any] = {}
    if args.rounds:
        keys = ("env_steps_per_s", "updates_per_s", "snapshot_s")
        med = {s: {k: statistics.median(x[k] for x in results[s]) for k in keys} for s in results}
        summary = {
            "snapshots_on": med["on"],
            "snapshots_off": med["off"],
            "ratio_on_over_off": {k: med["on"][k] / med["off"][k] for k in keys[:2]},
        }
    report = {
        "benchmark": "replay_snapshot",
        "protocol": {
            "repeats": args.repeats,
            "rounds": args.rounds,
            "seconds": args.seconds,
            "checkpoint_every_seconds": args.checkpoint_every,
            "run_overrides": [*RUN, *overrides],
            "statistic": "medians; snapshot on/off alternated each round",
        },
        "machine": machine_info(),
        "per_snapshot": snapshots,
        "run": summary,
        "runs": results,
    }
    per = {k: {m: v[m] for m in ("file_bytes", "write_s", "load_s")} for k, v in snapshots.items()}
    plots.write_report(output, report, _plot, {"per_snapshot": per, "run": summary})
    return 0


def _plot(report: dict[str, Any], path: Path) -> None:
    fig, axes = plots.figure(width=11, height=3.6, rows=1, cols=2)
    ax_snap, ax_run = axes[0]
    names = list(report["per_snapshot"])
    rows = [report["per_snapshot"][n] for n in names]
    y = np.arange(len(names))
    for offset, key, color in ((-0.2, "write_s", "#4c72b0"), (0.2, "load_s", "#dd8452")):
        values = [r[key] for r in rows]
        ax_snap.barh(y + offset, values, height=0.4, label=key.removesuffix("_s"), color=color)
        for yy, v in zip(y + offset, values, strict=True):
            ax_snap.text(v, yy, f" {v * 1e3:.0f} ms" if v < 1 else f" {v:.2f} s", va="center", fontsize=7)
    labels = [
        f"{n}\n{r['transitions']:,} tr, {r['file_bytes'] / 2**20:.0f} MiB" for n, r in zip(names, rows, strict=True)
    ]
    ax_snap.set_yticks(y, labels, fontsize=7)
    ax_snap.set_xlabel("seconds per full shard (median)")
    ax_snap.set_title("one replay snapshot")
    ax_snap.legend(loc="center right")
    runs = report["runs"]
    if runs["on"] and runs["off"]:
        base = report["run"]["snapshots_off"]["env_steps_per_s"]
        for i, (setting, color) in enumerate((("off", "#55a868"), ("on", "#c44e52"))):
            values = [x["env_steps_per_s"] / base for x in runs[setting]]
            ax_run.scatter(values, [i] * len(values), c=color)
            median = report["run"][f"snapshots_{setting}"]["env_steps_per_s"] / base
            ax_run.plot([median, median], [i - 0.3, i + 0.3], color="black")
            ax_run.text(median, i + 0.35, f"median {median:.3f}", fontsize=8, ha="center")
        ax_run.set_yticks([0, 1], [f"snapshots off\n({base:,.0f}/s)", "snapshots on"], fontsize=8)
        ax_run.set_ylim(-0.6, 1.8)
        ax_run.axvline(1.0, color="grey", linestyle="--", linewidth=0.8)
        ax_run.set_xlabel("env steps/s ÷ snapshots-off median (dot: one run)")
        every = report["protocol"]["checkpoint_every_seconds"]
        ax_run.set_title(f"cartpole_dqn on Ray, a checkpoint every {every:g} s")
    plots.save(fig, path)

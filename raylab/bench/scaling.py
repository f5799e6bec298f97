"""``scaling``: seed 000's A3C worker-scaling benchmark, with per-worker wait time.

    python -m raylab.bench scaling +experiment=snake_a3c --output benchmarks/a3c_scaling.json

Protocol (seed 000): workers in {1, 2, 4, 8, 16} share a fixed number of segments (1000 "episodes" of up to
16 steps, cut at episode ends); each row is run once from the initial model and once from a trained
("final") one, whose longer episodes make rollouts heavier relative to updates. Torch runs one thread per
worker. A row's ``total_s`` is the wall time from the first segment to the last push applied; ``wait_s``
is the mean per-worker time blocked on the parameter server (seed 000's mutex wait per thread); ``apply_s``
the server's own time applying pushes. Each row is repeated and the medians reported; rows, models and
push modes alternate so machine noise spreads over all of them.

Two push modes are compared on the same actors: ``pushes_in_flight=1`` (raylab's default: send and keep
rolling out, block only when the server is behind) and ``pushes_in_flight=0`` (wait for every push to be
applied before the next segment, the synchronous behaviour of seed 000's locked update).

The final model is ``--checkpoint`` (a run's final.pt) or, by default, trained here first for
``--train-seconds`` with the same config.
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
from pathlib import Path
from typing import Any

import numpy as np

from raylab.bench import plots
from raylab.bench.machine import machine_info
from raylab.driver.resources import available_cores

SEED_000 = {
    "source": "../shared/seeds/000: C++ A3C, Snake, 1000 episodes, manual timer + atomic counter (mimalloc build)",
    "rows": {
        "1": {"initial_total_s": 33.7, "initial_wait_s": 0.00875, "final_total_s": 71.7, "final_wait_s": 0.0109},
        "2": {"initial_total_s": 18.1, "initial_wait_s": 0.405, "final_total_s": 38.3, "final_wait_s": 0.257},
        "4": {"initial_total_s": 10.7, "initial_wait_s": 0.673, "final_total_s": 21.7, "final_wait_s": 0.432},
        "8": {"initial_total_s": 9.34, "initial_wait_s": 1.31, "final_total_s": 18.1, "final_wait_s": 0.742},
        "16": {"initial_total_s": 9.26, "initial_wait_s": 4.16, "final_total_s": 18.9, "final_wait_s": 1.72},
    },
    "wait_share_16_initial": 4.16 / 9.26,
}


def add_parser(commands: Any) -> None:
    p = commands.add_parser("scaling", help="A3C worker scaling (seed 000): total and per-worker wait time")
    p.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4, 8, 16])
    p.add_argument("--segments", type=int, default=1000, help="segments (seed 000's episodes) per row")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--in-flight", type=int, nargs="+", default=[1, 0], help="push modes to compare")
    p.add_argument("--checkpoint", default=None, help="final.pt of a trained run (default: train one first)")
    p.add_argument("--train-seconds", type=float, default=60.0)
    p.add_argument("--output", default="benchmarks/a3c_scaling.json", help="JSON to write; the PNG goes next to it")
    p.add_argument("--runs-dir", default=None, help="where the training run goes (default: outputs/bench/<name>)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace, overrides: list[str]) -> int:
    from raylab.bench.scaling_harness import ScalingHarness
    from raylab.builders import build_parameter_servers
    from raylab.config import resolve
    from raylab.envs.registry import env_spaces
    from raylab.errors import ConfigError
    from raylab.train import check_overrides, compose

    output = Path(args.output)
    if min(args.workers) < 1 or min(args.in_flight) < 0 or args.repeats < 1:
        raise ConfigError(
            "--workers must be >= 1, --in-flight >= 0 and --repeats >= 1 (e.g. --workers 1 2 4 --in-flight 1 0)"
        )
    if args.segments < max(args.workers):
        raise ConfigError(
            f"--segments={args.segments} is fewer than --workers={max(args.workers)}: every worker needs one"
        )
    check_overrides(overrides)
    cfg = resolve(compose(overrides), run_dir=str(args.runs_dir or Path("outputs") / "bench" / output.stem))
    if cfg.topology.name != "a3c":
        raise ConfigError(
            "the scaling benchmark times the a3c topology: add +experiment=snake_a3c (or topology=a3c algo=a3c)"
        )
    spaces = env_spaces(cfg.env)
    layout, bounds, initial_slices = build_parameter_servers(cfg, spaces)
    initial = np.concatenate(initial_slices)
    final, checkpoint = load_final(args, cfg, layout)
    models = {"initial": initial, "final": final}

    harness = ScalingHarness(cfg, spaces, max(args.workers), initial_slices, bounds)
    rows: list[dict[str, Any]] = []
    try:
        for repeat in range(args.repeats):
            for n in args.workers:
                for model, flat in models.items():
                    modes = args.in_flight if repeat % 2 == 0 else list(reversed(args.in_flight))
                    for in_flight in modes:
                        row = harness.measure(flat, n, args.segments, in_flight)
                        row.update(model=model, repeat=repeat, wait_share=row["wait_s"] / row["total_s"])
                        rows.append(row)
                        print(
                            f"repeat {repeat} {model:7s} workers {n:2d} in_flight {in_flight}: "
                            f"total {row['total_s']:6.2f} s  wait {row['wait_s']:6.3f} s "
                            f"({100 * row['wait_share']:4.1f} %)  apply {row['apply_ms_per_push']:.3f} ms/push  "
                            f"lag {row['lag_mean']:.1f}",
                            flush=True,
                        )
    finally:
        harness.close()

    summary = summarize(rows, args.workers, args.in_flight)
    cores = available_cores()
    plateaus = {mode: plateau(summary, mode) for mode in summary}
    report: dict[str, Any] = {
        "benchmark": "a3c_scaling",
        "protocol": {
            "segments_per_row": args.segments,
            "rollout_length": cfg.topology.rollout_length,
            "envs_per_worker": cfg.topology.envs_per_worker,
            "cut_at_episode_end": getattr(cfg.algo, "cut_at_episode_end", None),
            "repeats": args.repeats,
            "num_shards": cfg.params.num_shards,
            "statistic": "median over repeats",
        },
        "overrides": overrides,
        "final_checkpoint": checkpoint,
        "cores_available": cores,
        "machine": machine_info(),
        "summary": summary,
        "plateau": plateaus,
        "seed_000": SEED_000,
        "rows": rows,
    }
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(report, indent=2) + "\n")
    plot(report, output.with_suffix(".png"))
    print_table(summary, cores)
    for mode, found in plateaus.items():
        print(f"plateau ({mode}): {found}")
    print(f"wrote {output} and {output.with_suffix('.png')}")
    return 0


def load_final(args: argparse.Namespace, cfg: Any, layout: Any) -> tuple[np.ndarray, str]:
    """The trained model's flat weights: from --checkpoint, or from a run trained here first."""
    import torch

    from raylab.errors import ConfigError

    path = args.checkpoint
    if path is None:
        from dataclasses import replace

        from raylab.config import LoggerConfig, StopConfig
        from raylab.train import run as train

        run_dir = Path(cfg.run_dir) / "train"
        train_cfg = replace(
            cfg,
            run_dir=str(run_dir),
            stop=StopConfig(env_steps=None, seconds=args.train_seconds, mean_return=None),
            logger=LoggerConfig(console=False, report_every_seconds=5.0),
        )
        print(f"training the final model for {args.train_seconds:g} s ({run_dir})", flush=True)
        summary = train(train_cfg)
        path = str(Path(summary.run_dir) / "checkpoints" / "final.pt")
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except (OSError, RuntimeError) as err:
        raise ConfigError(f"cannot read --checkpoint {path} ({err}): pass a final.pt written by an a3c run") from err
    params = state.get("policy", {}).get("params", {})
    if list(params) != list(layout.names):
        raise ConfigError(
            f"--checkpoint {path} holds a different model than the config builds: pass the same overrides"
        )
    return np.concatenate([params[n].reshape(-1).numpy() for n in layout.names]).astype(np.float32), path


def summarize(rows: list[dict[str, Any]], workers: list[int], modes: list[int]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for mode in modes:
        table: dict[str, Any] = {}
        for n in workers:
            entry: dict[str, Any] = {}
            for model in ("initial", "final"):
                sel = [r for r in rows if r["workers"] == n and r["model"] == model and r["pushes_in_flight"] == mode]
                if not sel:
                    continue
                for key in ("total_s", "wait_s", "apply_s", "push_s", "lag_mean"):
                    entry[f"{model}_{key}"] = statistics.median(r[key] for r in sel)
                entry[f"{model}_wait_share"] = entry[f"{model}_wait_s"] / entry[f"{model}_total_s"]
                entry[f"{model}_runs"] = len(sel)
            table[str(n)] = entry
        base = table.get(str(workers[0]), {})
        for n in workers:
            for model in ("initial", "final"):
                if f"{model}_total_s" in base and f"{model}_total_s" in table[str(n)]:
                    speedup = base[f"{model}_total_s"] / table[str(n)][f"{model}_total_s"] * workers[0]
                    table[str(n)][f"{model}_speedup"] = speedup
        out[f"pushes_in_flight={mode}"] = table
    return out


def plateau(summary: dict[str, Any], mode: str) -> str:
    """The worker count after which doubling workers stops paying (< 10 % faster), per model."""
    parts = []
    for model in ("initial", "final"):
        table = summary[mode]
        ns = sorted(int(n) for n in table if f"{model}_total_s" in table[n])
        found = ns[-1] if ns else None
        for a, b in itertools.pairwise(ns):
            if table[str(a)][f"{model}_total_s"] / table[str(b)][f"{model}_total_s"] < 1.10:
                found = a
                break
        parts.append(f"{model} at {found} workers")
    return ", ".join(parts)


def print_table(summary: dict[str, Any], cores: int) -> None:
    for mode, table in summary.items():
        print(f"\n{mode} ({cores} cores; medians)")
        print("| workers | total_s initial | wait_s initial | speed-up | total_s final | wait_s final | speed-up |")
        print("|---|---|---|---|---|---|---|")
        for n, e in table.items():
            print(
                f"| {n} | {e.get('initial_total_s', float('nan')):.2f} | {e.get('initial_wait_s', float('nan')):.3f} "
                f"| {e.get('initial_speedup', float('nan')):.2f} | {e.get('final_total_s', float('nan')):.2f} "
                f"| {e.get('final_wait_s', float('nan')):.3f} | {e.get('final_speedup', float('nan')):.2f} |"
            )


def plot(report: dict[str, Any], path: Path) -> None:
    fig, axes = plots.figure(13.0, 4.0)
    fig.clf()
    axes = fig.subplots(1, 3)
    seed = report["seed_000"]["rows"]
    for mode, table in report["summary"].items():
        ns = [int(n) for n in table]
        for model, style in (("initial", "-o"), ("final", "--s")):
            if not all(f"{model}_total_s" in table[str(n)] for n in ns):
                continue
            label = f"raylab {model}, {mode}"
            axes[0].plot(ns, [table[str(n)][f"{model}_total_s"] for n in ns], style, label=label)
            axes[1].plot(ns, [table[str(n)][f"{model}_speedup"] for n in ns], style, label=label)
            axes[2].plot(ns, [100 * table[str(n)][f"{model}_wait_share"] for n in ns], style, label=label)
    seed_ns = [int(n) for n in seed]
    for model, style in (("initial", ":^"), ("final", ":v")):
        axes[0].plot(
            seed_ns, [seed[str(n)][f"{model}_total_s"] for n in seed_ns], style, color="gray", label=f"seed 000 {model}"
        )
        axes[2].plot(
            seed_ns,
            [100 * seed[str(n)][f"{model}_wait_s"] / seed[str(n)][f"{model}_total_s"] for n in seed_ns],
            style,
            color="gray",
            label=f"seed 000 {model}",
        )
    all_ns = sorted({int(n) for t in report["summary"].values() for n in t} | set(seed_ns))
    axes[1].plot(all_ns, all_ns, color="black", lw=0.8, label="ideal")
    axes[1].axvline(report["cores_available"], color="red", lw=0.8, ls=":", label=f"{report['cores_available']} cores")
    titles = ("wall time for the segments (s)", "speed-up vs 1 worker", "wait share: wait_s / total_s (%)")
    for ax, title in zip(axes, titles, strict=True):
        ax.set_xscale("log", base=2)
        ax.set_xticks(all_ns, [str(n) for n in all_ns])
        ax.set_xlabel("workers")
        ax.set_title(title, fontsize=10)
        ax.grid(alpha=0.3)
    axes[0].set_yscale("log")
    axes[1].set_yscale("log", base=2)
    axes[2].legend(fontsize=7)
    axes[1].legend(fontsize=7)
    fig.suptitle(
        f"A3C scaling, {report['protocol']['segments_per_row']} segments per row, "
        f"{report['cores_available']} cores ({report['machine']['cpu']})",
        fontsize=10,
    )
    plots.save(fig, path)

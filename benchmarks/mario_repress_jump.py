"""Mario's held-A trap, measured on trained policies: each run's checkpoint scored over the same greedy episodes
(its seed, its no-op starts) with ``env.options.repress_jump`` off and on, for the evaluation envs only.

    python benchmarks/mario_repress_jump.py outputs/bench/mario_learning/flag_reward_seed0 \
        outputs/bench/mario_learning/flag_stall_seed0 --output benchmarks/mario_repress_jump.json

Each evaluation is ``python -m raylab.evaluate run_dir=<run> checkpoint=<name> episodes=<n>
env_options.repress_jump=<off|on>``, called in-process (each also writes its JSON under <run>/eval/, never over an
earlier one). The policies trained with repress_jump off; "on" changes only what a jump action does on a frame
where A has been held on the ground for two frames (raylab/envs/mario.py). ``--reuse`` keeps the evaluations
the output already holds for the same run directory, checkpoint name, episodes and setting (the seed is the
run's; a checkpoint written again under the same name, as by a resumed run, is not noticed: leave --reuse off).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from raylab.bench.machine import machine_info  # noqa: E402
from raylab.evaluate import EvaluateArgs, evaluate  # noqa: E402

SETTINGS = {"off": False, "on": True}


def scored(run_dir: str, checkpoint: str, episodes: int, repress: bool) -> dict[str, Any]:
    start = time.perf_counter()
    out = evaluate(EvaluateArgs(run_dir=run_dir, checkpoint=checkpoint, episodes=episodes,
                                env_options={"repress_jump": repress}))  # fmt: skip
    return {
        "run": Path(run_dir).name,
        "run_dir": run_dir,
        "checkpoint": Path(out["checkpoint"]).name,
        "policy_version": out["policy_version"],
        "seed": out["seed"],
        "episodes": out["episodes"],
        "repress_jump": repress,
        "flag_rate": out["extras_mean"]["flag_get"],
        "x_pos": out["extras"]["x_pos"],
        "flag_get": out["extras"]["flag_get"],
        "lengths": out["lengths"],
        "returns": out["returns"],
        "seconds": round(time.perf_counter() - start, 1),
    }


def same(entry: dict[str, Any], run_dir: str, checkpoint: str, episodes: int, repress: bool) -> bool:
    return (entry["run_dir"], entry["checkpoint"], entry["episodes"], entry["repress_jump"]) == (
        run_dir, Path(checkpoint).name if checkpoint.endswith(".pt") else f"{checkpoint}.pt", episodes, repress
    )  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dirs", nargs="+")
    parser.add_argument("--checkpoint", default="final")
    parser.add_argument("--episodes", type=int, default=10)
    parser.add_argument("--output", type=Path, required=True)
    parser.add_argument("--reuse", action="store_true", help="keep the output's evaluations of the same setting")
    args = parser.parse_args(argv)
    kept = json.loads(args.output.read_text())["evaluations"] if args.reuse and args.output.exists() else []
    evaluations = []
    for run_dir in args.run_dirs:
        for repress in SETTINGS.values():
            old = [e for e in kept if same(e, run_dir, args.checkpoint, args.episodes, repress)]
            entry = old[-1] if old else scored(run_dir, args.checkpoint, args.episodes, repress)
            evaluations.append(entry)
            print(f"{entry['run']} repress_jump={repress}: flag rate {entry['flag_rate']:.1f}, x {entry['x_pos']}")
    report = {
        "benchmark": "mario_repress_jump",
        "command": "python benchmarks/mario_repress_jump.py " + " ".join(sys.argv[1:] if argv is None else argv),
        "machine": machine_info(),
        "evaluations": evaluations,
    }
    args.output.write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

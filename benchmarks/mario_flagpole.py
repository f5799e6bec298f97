"""Where a Mario run's greedy policy stops: its checkpoint scored over 10 episodes at the run's seed, then single
filmed episodes at other evaluation seeds, and a strip of one filmed episode's last frames when it ends near the
flag without reaching it (Mario at the foot of the pole while the game clock runs out).

    python benchmarks/mario_flagpole.py outputs/bench/mario_learning/default_seed0 --output benchmarks/mario_flagpole

Each evaluation is ``python -m raylab.evaluate run_dir=<run> checkpoint=best episodes=<n> video=<..> seed=<s>``,
called in-process (each also writes its JSON under <run>/eval/, never over an earlier one); the videos stay in a
temporary folder (the strip is drawn from them).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from raylab.evaluate import EvaluateArgs, evaluate  # noqa: E402

NEAR_FLAG = 3100  # x-position: past the last staircase of World 1-1; the flag pole stands at about 3,160
STRIP_BEFORE_END = (1500, 750, 0)  # frames before the episode's last: clock ~300, ~150 and 0 left (5 steps a tick)


def summary(out: dict[str, Any]) -> dict[str, Any]:
    keep = ("episodes", "return_mean", "returns", "lengths", "extras", "policy_version")
    return {k: out[k] for k in keep if k in out}


def strip(video: Path, path: Path) -> list[int]:
    import imageio.v3 as iio

    frames = iio.imread(video)
    picks = [max(0, len(frames) - 1 - back) for back in STRIP_BEFORE_END]
    iio.imwrite(path, np.concatenate([frames[i] for i in picks], axis=1))
    return picks


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir")
    parser.add_argument("--checkpoint", default="best")
    parser.add_argument("--episodes", type=int, default=10)
    parser.add_argument("--film-seeds", type=int, nargs="+", default=[1, 2, 3, 4, 5, 6])
    parser.add_argument("--output", type=Path, required=True, help="folder: evaluations.json, flagpole.png")
    args = parser.parse_args(argv)
    args.output.mkdir(parents=True, exist_ok=True)
    scored = evaluate(EvaluateArgs(run_dir=args.run_dir, checkpoint=args.checkpoint, episodes=args.episodes))
    filmed, stuck = [], None
    with tempfile.TemporaryDirectory() as tmp:
        for seed in args.film_seeds:
            video = Path(tmp) / f"seed{seed}.mp4"
            out = evaluate(EvaluateArgs(run_dir=args.run_dir, checkpoint=args.checkpoint, episodes=1, video=True,
                                        seed=seed, video_path=str(video)))  # fmt: skip
            ep = out["video"]
            filmed.append({"seed": seed, "x_pos": ep["episode_x_pos"], "flag_get": ep["episode_flag_get"],
                           "length": ep["episode_length"], "return": ep["episode_return"]})  # fmt: skip
            if stuck is None and ep["episode_x_pos"] >= NEAR_FLAG and not ep["episode_flag_get"]:
                stuck = {"seed": seed, "frames": strip(video, args.output / "flagpole.png")}
    report = {
        "run_dir": args.run_dir,
        "checkpoint": scored["checkpoint"],
        "command": "python benchmarks/mario_flagpole.py " + " ".join(sys.argv[1:] if argv is None else argv),
        "scored": summary(scored),
        "filmed": filmed,
        "strip": stuck,
    }
    (args.output / "evaluations.json").write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps({"scored_x": scored["extras"]["x_pos"], "filmed": filmed, "strip": stuck}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

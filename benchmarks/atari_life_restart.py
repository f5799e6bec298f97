"""Which actions start an Atari game's next life: a policy that repeats one action at the screen after a lost life
either plays on or waits there until the game's time limit (27,000 agent steps). A greedy evaluation whose argmax
at that screen is a waiting action scores nothing more for the rest of the game.

python benchmarks/atari_life_restart.py atari_life_restart.json [--games BeamRider Breakout SpaceInvaders]
    [--patience 27000] [--seed 0] [--actions 0 1 ...]

Two variants of each game: ``envpool``, the recipe as it is (EnvPool's FIRE reset: FIRE for one frame), and
``baselines``, the recipe with ``+env.options.reset_actions=[2]`` (OpenAI baselines' FireResetEnv: FIRE, then action
2, a whole agent step each).

Each game is raylab's own env as ``+experiment=atari_appo`` configures it (EnvPool's ALE, DeepMind's
preprocessing, episodic life: a lost life ends the training episode, EnvPool's reset step presses FIRE where the
game has it, and the game goes on, as raylab's evaluation plays it). For every action of the game's action set, a
fresh game (the same seed) is played with uniformly random actions from a seeded generator until its first lost
life, then with that one action repeated until the first of: a reward, another lost life, the game's end (each: it
``plays on``), the game's time limit (27,000 agent steps from its start: it waited there), or ``--patience`` agent
steps (``waits``, for a shorter check). The first lost life is at the same step for every action (same seed, same
random actions), so the rows differ only by the repeated action. ``rewards_before`` counts the rewarded steps
before the first lost life. One more game of each is NOOP from its start (``noop_from_start``): a policy that
never acts: what it scores before its first lost life, and whether the game then waits.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np

from raylab.bench.machine import machine_info
from raylab.envs import make_vector_env

OVERRIDES = ["+experiment=atari_appo"]
VARIANTS = {"envpool": [], "baselines": ["+env.options.reset_actions=[2]"]}
GAMES = ("BeamRider", "Breakout", "SpaceInvaders")
FIRST_LIFE_LIMIT = 27_000


def env_config(game: str, extra: list[str]) -> Any:
    """The env section of ``+experiment=atari_appo env.id=<game>-v5 <extra>``."""
    from raylab.config import resolve
    from raylab.config.checks import auto_keys
    from raylab.train import compose

    composed = compose([*OVERRIDES, f"env.id={game}-v5", *extra])
    for key in auto_keys(composed):  # the machine's worker count: no bearing on the env
        composed.topology[key] = 1
    return resolve(composed).env


def after_first_lost_life(cfg: Any, action: int, seed: int, patience: int, noop_first: bool = False) -> dict[str, Any]:
    """Random play (NOOP with ``noop_first``) to the first lost life, then ``action`` repeated until the game goes
    on, its time limit, or ``patience`` agent steps."""
    venv = make_vector_env(cfg, num_envs=1, seed=seed)
    venv.reset()
    rng = np.random.default_rng(seed)
    n = int(venv.single_action_space.n)
    lost_at, score = None, 0.0
    for step in range(1, FIRST_LIFE_LIMIT + 1):
        out = venv.step(np.zeros(1, np.int64) if noop_first else rng.integers(0, n, 1))
        score += float(out.rewards[0] != 0)
        if out.episodes:  # the game ended without a lost life first: a game of one life
            venv.close()
            return {
                "action": action, "first_lost_life": None, "rewards_before": score, "outcome": None, "steps": None,
                "plays_on": None,
            }  # fmt: skip
        if out.terminated[0]:
            lost_at = step
            break
    assert lost_at is not None, f"no life lost in {FIRST_LIFE_LIMIT} random steps"
    outcome, steps = "waits", patience
    for step in range(1, patience + 1):
        out = venv.step(np.array([action]))
        if out.truncated[0]:
            outcome, steps = "time limit", step
        elif out.episodes:
            outcome, steps = "game over", step
        elif out.terminated[0]:
            outcome, steps = "life lost", step
        elif out.rewards[0] != 0:
            outcome, steps = "reward", step
        if outcome != "waits":
            break
    venv.close()
    return {
        "action": action, "first_lost_life": lost_at, "rewards_before": score, "outcome": outcome, "steps": steps,
        "plays_on": outcome in ("reward", "life lost", "game over"),
    }  # fmt: skip


def measure(game: str, variant: str, seed: int, patience: int, actions: list[int] | None) -> dict[str, Any]:
    cfg = env_config(game, VARIANTS[variant])
    venv = make_vector_env(cfg, num_envs=1, seed=seed)
    n = int(venv.single_action_space.n)
    venv.close()
    rows = [after_first_lost_life(cfg, a, seed, patience) for a in (range(n) if actions is None else actions)]
    waiting = [r["action"] for r in rows if r["plays_on"] is False]  # to the time limit, or past the patience
    return {
        "game": game, "variant": variant, "overrides": VARIANTS[variant], "env_id": cfg.id, "actions": n,
        "rows": rows, "waiting_actions": waiting,
        "noop_from_start": after_first_lost_life(cfg, 0, seed, patience, noop_first=True),
    }  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("output", type=Path)
    parser.add_argument("--games", nargs="+", default=list(GAMES))
    parser.add_argument(
        "--patience", type=int, default=27_000, help="agent steps an action gets to go on (default: to the time limit)"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--actions", type=int, nargs="+", help="only these actions (default: all the game's)")
    args = parser.parse_args(argv)
    games = [measure(g, v, args.seed, args.patience, args.actions) for g in args.games for v in VARIANTS]
    report = {
        "benchmark": "atari_life_restart",
        "overrides": OVERRIDES,
        "variants": VARIANTS,
        "patience": args.patience,
        "seed": args.seed,
        "games": games,
        "machine": machine_info(),
    }
    args.output.write_text(json.dumps(report, indent=2) + "\n")
    for g in games:
        print(
            f"{g['game']} ({g['variant']}): {g['actions']} actions, waiting after a lost life: {g['waiting_actions']}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

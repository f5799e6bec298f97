"""Whether a finished run that ``bench learn --reuse`` would read back ran with the settings this invocation asks
for. A table's overrides can stay the same while the recipe they name changes (``+experiment=atari_appo`` after a
new default in conf/experiment/atari_appo.yaml): the run's own resolved config, kept in its
``benchmark_metrics.json`` and in the table's record of it, is set beside the config these overrides resolve to now.

What decides what is learned is compared: the seed, env, algorithm, model, topology, learner, replay, parameter
server, stop and evaluation settings, and the policies. The logger, checkpointing, Ray's own settings and the
run's directory are not. A key the run's config lacks (added since it ran) is taken to match.
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path
from typing import Any

from raylab.config.diff import first_difference, without_missing
from raylab.errors import ConfigError

COMPARED = (
    "seed", "env", "algo", "model", "topology", "learner", "replay", "params", "stop", "eval", "policies",
    "policy_mapping",
)  # fmt: skip


def settings(config: dict[str, Any]) -> dict[str, Any]:
    """The part of a resolved config (``RunConfig.to_dict()``) that decides what a run learns."""
    return {key: config[key] for key in COMPARED if key in config}


def settings_for(overrides: list[str], seed: int) -> dict[str, Any]:
    """The settings ``python -m raylab.train <overrides> seed=<seed>`` would run with."""
    from raylab.config import resolve
    from raylab.train import compose

    with tempfile.TemporaryDirectory(prefix="raylab-bench-settings-") as run_dir:
        return settings(resolve(compose([*overrides, f"seed={seed}"]), run_dir=run_dir).to_dict())


def difference(ran: dict[str, Any], asked: dict[str, Any]) -> str | None:
    """None when a run that ran with ``ran`` is the run ``asked`` describes; else its first differing setting,
    as ``algo.vtrace_lambda was 1.0, now 0.95``."""
    old, new = without_missing(settings(ran), settings(asked))
    if old == new:
        return None
    key, was, now = first_difference(old, new, "")
    return f"{key} was {was!r}, now {now!r}"


def move_other_settings_aside(runs_dir: Path, planned: list[tuple[str, list[str], int]], restart: bool) -> set[str]:
    """Each finished run of ``planned`` (its directory name, overrides, seed) that ran with other settings than
    these overrides resolve to now: renamed to ``<dir>.other-settings-<time>`` (never deleted) so it runs again
    with ``restart`` (--restart-unfinished); refused in one line without it, before anything changed. Returns
    the names moved (the table's record of such a run is not kept either)."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    moved = set()
    for name, overrides, seed in planned:
        metrics = runs_dir / name / "benchmark_metrics.json"
        if not metrics.exists():
            continue
        changed = difference(json.loads(metrics.read_text()).get("config") or {}, settings_for(overrides, seed))
        if changed is None:
            continue
        if not restart:
            raise ConfigError(
                f"{metrics.parent} ran with other settings than this invocation's ({changed}): add "
                f"--restart-unfinished to move it aside and run it again, or choose another --runs-dir (nothing "
                f"was changed)"
            )
        aside = metrics.parent.with_name(f"{name}.other-settings-{stamp}")
        metrics.parent.rename(aside)
        moved.add(name)
        print(f"{metrics.parent} ran with other settings ({changed}): moved to {aside}, running it again", flush=True)
    return moved


def same_recorded_runs(
    recorded: dict[tuple[str, int], dict[str, Any]], overrides: dict[str, list[str]]
) -> dict[tuple[str, int], dict[str, Any]]:
    """The recorded runs (by variant and seed) of the variants in ``overrides`` (name: every override) that ran with
    the settings those overrides resolve to now; the others' runs as they are. A record from before records kept
    their settings is kept, and said to be unchecked."""
    kept = {}
    for (variant, seed), record in recorded.items():
        if variant in overrides and "config" not in record:
            print(f"{variant} seed {seed}: recorded without its settings, kept unchecked", flush=True)
        elif variant in overrides:
            changed = difference(record["config"], settings_for(overrides[variant], seed))
            if changed is not None:
                print(f"{variant} seed {seed}: recorded with other settings ({changed}), running it again", flush=True)
                continue
        kept[(variant, seed)] = record
    return kept

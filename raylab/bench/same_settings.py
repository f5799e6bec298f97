"""Whether a finished run that ``bench learn --reuse`` would read back ran with the settings this invocation asks
for. A table's overrides can stay the same while the recipe they name changes (``+experiment=atari_appo`` after a
new default in conf/experiment/atari_appo.yaml): the run's own resolved config, kept in its
``benchmark_metrics.json`` and in the table's record of it, is set beside the config these overrides resolve to now.

What decides what is learned is compared: the seed, env, algorithm, model, topology, learner, replay, parameter
server, stop and evaluation settings, and the policies; not the logger, checkpointing, Ray's own settings or the
run's directory. A schema field the run's config lacks (added since it ran) is taken at its default
(raylab.config.diff.with_defaults); one it has that the schema no longer has is a difference. A free-form mapping
(``env.options``, ``policies``, ``stop.eval_extras``, ...) holds the user's own keys, so it is compared whole,
``policy_mapping`` in its order (the first pattern that matches wins). A topology key set to ``auto`` is sized by
the machine that ran it and is not compared.
"""

from __future__ import annotations

import dataclasses
import json
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from raylab.config.diff import first_difference, with_defaults
from raylab.errors import ConfigError

COMPARED = (
    "seed", "env", "algo", "model", "topology", "learner", "replay", "params", "stop", "eval", "policies",
    "policy_mapping",
)  # fmt: skip


def settings(config: dict[str, Any]) -> dict[str, Any]:
    """The part of a resolved config (``RunConfig.to_dict()``) that decides what a run learns."""
    return {key: config[key] for key in COMPARED if key in config}


@dataclass(frozen=True)
class Asked:
    """The settings an invocation would run with: ``values`` (``settings`` of the resolved config), the dotted
    paths that are schema sections (``""``, ``env``, ``algo``, ...; below them a key the run lacks was added since),
    and the keys left to the machine (``topology.num_workers`` set to auto)."""

    values: dict[str, Any]
    sections: frozenset[str]
    machine_sized: frozenset[str]


def settings_for(overrides: list[str], seed: int) -> Asked:
    """The settings ``python -m raylab.train <overrides> seed=<seed>`` would run with."""
    from raylab.config import resolve
    from raylab.config.checks import auto_keys
    from raylab.train import compose

    composed = compose([*overrides, f"seed={seed}"])
    auto = auto_keys(composed)
    for key in auto:  # any size resolves; the machine's own is the run's and is not compared
        composed.topology[key] = 1
    with tempfile.TemporaryDirectory(prefix="raylab-bench-settings-") as run_dir:
        run = resolve(composed, run_dir=run_dir)
    return Asked(settings(run.to_dict()), frozenset(_sections(run)), frozenset(f"topology.{k}" for k in auto))


def _sections(obj: Any, key: str = "") -> set[str]:
    found = {key}
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            found |= _sections(value, f"{key}.{f.name}" if key else f.name)
    return found


def difference(ran: dict[str, Any], asked: Asked) -> str | None:
    """None when a run whose resolved config was ``ran`` is the run ``asked`` describes; else its first differing
    setting, as ``algo.vtrace_lambda was 1.0, now 0.95``."""
    found = _first(settings(with_defaults(ran)), asked.values, "", asked)
    return None if found is None else f"{found[0]} was {found[1]!r}, now {found[2]!r}"


def _first(old: Any, new: Any, key: str, asked: Asked) -> tuple[str, Any, Any] | None:
    if key in asked.machine_sized:
        return None
    if key in asked.sections and isinstance(old, dict) and isinstance(new, dict):
        for sub in sorted(set(old) | set(new)):
            if sub not in old:  # a field added since the run
                continue
            found = _first(old[sub], new.get(sub), f"{key}.{sub}" if key else sub, asked)
            if found is not None:
                return found
        return None
    if {type(old), type(new)} <= {dict, type(None)} and not old and not new:  # no mapping at all, or an empty one
        return None
    if key == "policy_mapping" and isinstance(old, dict) and isinstance(new, dict):
        old, new = list(old.items()), list(new.items())
    return None if old == new else first_difference(old, new, key)


class SettingsCheck:
    """The check of one ``bench learn --reuse`` invocation, each variant's settings resolved once per seed."""

    def __init__(self, overrides: dict[str, list[str]]) -> None:
        self.overrides = overrides  # variant -> every override its runs take (variants from another tree left out)
        self._asked: dict[tuple[str, int], Asked] = {}

    def asked(self, variant: str, seed: int) -> Asked:
        if (variant, seed) not in self._asked:
            self._asked[(variant, seed)] = settings_for(self.overrides[variant], seed)
        return self._asked[(variant, seed)]

    def other_run_dirs(self, runs_dir: Path, planned: list[tuple[str, int]]) -> dict[str, str]:
        """The finished run directories of ``planned`` (variant, seed) that ran with other settings: name -> the
        first difference. Nothing is changed."""
        stale = {}
        for variant, seed in planned:
            metrics = runs_dir / f"{variant}_seed{seed}" / "benchmark_metrics.json"
            if variant in self.overrides and metrics.exists():
                changed = difference(json.loads(metrics.read_text()).get("config") or {}, self.asked(variant, seed))
                if changed is not None:
                    stale[metrics.parent.name] = changed
        return stale

    def same_records(
        self, recorded: dict[tuple[str, int], dict[str, Any]], from_record: set[tuple[str, int]]
    ) -> dict[tuple[str, int], dict[str, Any]]:
        """``recorded`` (the table's runs by variant and seed) without those of ``from_record`` (runs this
        invocation takes from their record, their directory gone) that ran with other settings. A record from
        before records kept their settings is kept, and said to be unchecked; the rest as they are."""
        kept = {}
        for (variant, seed), record in recorded.items():
            if (variant, seed) in from_record and variant in self.overrides:
                if "config" not in record:
                    print(f"{variant} seed {seed}: recorded without its settings, kept unchecked", flush=True)
                elif (changed := difference(record["config"], self.asked(variant, seed))) is not None:
                    print(
                        f"{variant} seed {seed}: recorded with other settings ({changed}), running it again", flush=True
                    )
                    continue
            kept[(variant, seed)] = record
        return kept


def refuse_or_move_aside(runs_dir: Path, stale: dict[str, str], restart: bool) -> None:
    """Each run directory of ``stale`` (name -> how its settings differ) renamed to ``<dir>.other-settings-<time>``
    (never deleted) to be run again, with ``restart`` (--restart-unfinished); without it the first is refused in
    one line, before anything changed."""
    if stale and not restart:
        name, changed = next(iter(stale.items()))
        raise ConfigError(
            f"{runs_dir / name} ran with other settings than this invocation's ({changed}): add "
            f"--restart-unfinished to move it aside and run it again, or choose another --runs-dir (nothing was "
            f"changed)"
        )
    stamp = time.strftime("%Y%m%d-%H%M%S")
    for name, changed in stale.items():
        aside = runs_dir / f"{name}.other-settings-{stamp}"
        (runs_dir / name).rename(aside)
        print(f"{runs_dir / name} ran with other settings ({changed}): moved to {aside}, running it again", flush=True)

"""Two resolved configs (``RunConfig.to_dict()``) side by side: the first setting in which they differ.

A saved config (a checkpoint's, a finished run's ``benchmark_metrics.json``) may predate keys added since. Such a
key is taken at its default (``with_defaults``): a key arrives with the default that keeps what runs did before it,
so a run from before it existed is not refused for that alone, while a new run that sets it otherwise
(``model.conv_channels=[16,32,32]`` against a checkpoint of the 32/64/64 network) is. A saved config that no longer
builds (a key renamed or removed since) keeps the older rule: a key it lacks is taken to match. Used by ``resume=``
(the checkpoint must match the run's data and network) and by ``bench learn --reuse`` (a run read back must have run
with the settings the table asks for).
"""

from __future__ import annotations

from typing import Any

from raylab.errors import ConfigError


def with_defaults(saved: dict[str, Any]) -> dict[str, Any]:
    """``saved`` (a resolved config as written) with every schema key it lacks at its default, built through the
    schema as config.yaml is read back; ``saved`` itself where it no longer builds."""
    from raylab.config.coerce import build
    from raylab.config.schema import RunConfig

    try:
        full = build(RunConfig, saved, "")
    except (ConfigError, TypeError, ValueError):
        return saved
    return fill_missing(saved, full.to_dict())


def fill_missing(saved: Any, full: Any) -> Any:
    """``saved`` with the keys only ``full`` has added from it, recursively; ``saved``'s own values kept."""
    if not (isinstance(saved, dict) and isinstance(full, dict)):
        return saved
    added = {k: v for k, v in full.items() if k not in saved}
    return {**{k: fill_missing(v, full.get(k)) for k, v in saved.items()}, **added}


def without_missing(old: Any, new: Any) -> tuple[Any, Any]:
    """``new`` without the keys ``old`` (a saved config) lacks, recursively: keys added since it was written."""
    if isinstance(old, dict) and isinstance(new, dict):
        kept = {k: without_missing(old[k], v)[1] for k, v in new.items() if k in old}
        return old, kept
    if old is None and new == {}:  # a mapping the saved config does not have at all, left empty
        return new, new
    return old, new


def select(config: dict[str, Any], dotted: str) -> Any:
    """``config``'s value at ``dotted`` (``algo.lr``); None where a part is missing."""
    value: Any = config
    for part in dotted.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def first_difference(old: Any, new: Any, key: str) -> tuple[str, Any, Any]:
    """The dotted key below ``key`` of the first (in sorted order) value that differs, with its two values."""
    if isinstance(old, dict) and isinstance(new, dict):
        for sub in sorted(set(old) | set(new)):
            if old.get(sub) != new.get(sub):
                return first_difference(old.get(sub), new.get(sub), f"{key}.{sub}" if key else sub)
    return key, old, new

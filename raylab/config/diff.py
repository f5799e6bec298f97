"""Two resolved configs (``RunConfig.to_dict()``) side by side: the first setting in which they differ.

A saved config (a checkpoint's, a finished run's ``benchmark_metrics.json``) may predate keys added since; such a key
is taken to match, so a run from before a new setting existed is not refused for that alone. Used by ``resume=``
(the checkpoint must match the run's data and network) and by ``bench learn --reuse`` (a run read back must have run
with the settings the table asks for).
"""

from __future__ import annotations

from typing import Any


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

"""The algorithm registry: ``algorithm(name)`` is the ``Algorithm`` spec (raylab.algos.spec) that
``raylab/algos/<package>/builder.py`` defines for ``algo=name``.

The table of names, topologies and builder locations is raylab.config.algorithms (torch-free, read by the config);
a builder module is imported on first use, so asking for one algorithm never imports the others.
"""

from __future__ import annotations

import importlib

from raylab.algos.spec import Algorithm
from raylab.config.algorithms import ALGORITHMS


def algorithm(name: str) -> Algorithm:
    """The spec of ``name``; KeyError naming the known algorithms for any other name (config validation
    lets none through)."""
    if name not in ALGORITHMS:
        raise KeyError(f"unknown algorithm {name!r}: raylab runs {', '.join(ALGORITHMS)}")
    module, _, attribute = ALGORITHMS[name].builder.partition(":")
    spec = getattr(importlib.import_module(module), attribute)
    assert isinstance(spec, Algorithm) and spec.name == name, f"{ALGORITHMS[name].builder} is not algo={name}'s spec"
    return spec


def algorithms() -> list[Algorithm]:
    """Every registered algorithm's spec, in the table's order."""
    return [algorithm(name) for name in ALGORITHMS]

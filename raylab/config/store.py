"""The dataclass defaults, as the Hydra ConfigStore nodes that conf/ composes on.

The dataclasses are the one place a default is written. A group file in conf/ states only what its option
changes, on top of its dataclass's node, ``schema/<dataclass name>``::

    # conf/topology/a3c.yaml
    defaults:
      - /schema/TopologyConfig@_here_   # TopologyConfig's defaults, at this file's package (topology)
      - _self_
    name: a3c
    envs_per_worker: 1

and conf/config.yaml starts from ``schema/RunConfig`` (seed, resume, stop, eval, checkpoint, ray). Every field
is then a key of the composed config, so ``topology.max_actor_restarts=0`` works on the command line whatever
the option, and a misspelled key is still Hydra's error. The nodes sit in their own group, ``schema``, rather
than among each group's options. ``register()`` runs when raylab.train is imported, before anything composes.
"""

from __future__ import annotations

import dataclasses
import typing
from typing import Any

from hydra.core.config_store import ConfigStore

from raylab.config.coerce import plain
from raylab.config.schema import RunConfig

GROUPS = ("env", "algo", "model", "topology", "learner", "replay", "params", "logger")
"""The config groups of conf/ that fill a section of RunConfig (experiment and debug only override)."""
SCHEMA_GROUP = "schema"
"""The ConfigStore group of the nodes, each named after its dataclass."""
ROOT = "RunConfig"
"""The node conf/config.yaml starts from: RunConfig's fields that no group fills."""


def schemas(group: str) -> tuple[type, ...]:
    """The dataclasses an option of ``group`` can be (algo: one per algorithm, told apart by ``name``)."""
    hint = typing.get_type_hints(RunConfig)[group]
    return typing.get_args(hint) or (hint,)


def defaults(cls: type) -> dict[str, Any]:
    """The defaults of dataclass ``cls`` as plain YAML-ready values (tuples as lists)."""
    return plain(dataclasses.asdict(cls()))


def root_defaults() -> dict[str, Any]:
    """RunConfig's defaults outside the groups (run_dir is not a key: resolve sets it)."""
    return {k: v for k, v in defaults(RunConfig).items() if k not in GROUPS and k != "run_dir"}


def register() -> None:
    """Store every schema's defaults in Hydra's ConfigStore (idempotent)."""
    store = ConfigStore.instance()
    store.store(group=SCHEMA_GROUP, name=ROOT, node=root_defaults(), provider="raylab")
    for group in GROUPS:
        for cls in schemas(group):
            store.store(group=SCHEMA_GROUP, name=cls.__name__, node=defaults(cls), provider="raylab")

"""conf/ states only what differs from the dataclass defaults, which Hydra composes in (raylab/config/store.py).

A default restated in YAML silently wins over the dataclass once someone changes the dataclass, and the
docstring beside it then lies; so a group file (and conf/config.yaml) may not restate one. Experiment and
debug files are overrides and are exempt. The one exception is a group's identity key (``IDENTITY``).
"""

from __future__ import annotations

import dataclasses
import typing
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from raylab.config import RunConfig
from raylab.config.coerce import TAG, coerce
from raylab.config.store import GROUPS, ROOT, schemas
from raylab.train import compose, config_groups

CONF = Path(__file__).resolve().parents[2] / "conf"
OVERRIDE_GROUPS = ("experiment", "debug")
IDENTITY = {"algo": "name", "topology": "name", "env": "family", "model": "encoder", "replay": "kind"}
"""The key that says which option a file is: every file of the group states it, equal to the file's name, even
where that is the dataclass default (topology/apex_dqn.yaml: ``name: apex_dqn``), so that no option silently
turns into another when a default changes."""
NOT_SCHEMA_KEYS = ("defaults", "hydra")
"""Hydra's keys: the defaults list (each file starts from its dataclass's node) and Hydra's own settings."""

FILES = [(group, CONF / group / f"{option}.yaml") for group in GROUPS for option in config_groups()[group]]
FILES.append(("", CONF / "config.yaml"))


def load(path: Path) -> dict[str, typing.Any]:
    data = OmegaConf.to_container(OmegaConf.load(path), resolve=False)
    assert isinstance(data, dict)
    return {str(k): v for k, v in data.items() if k not in NOT_SCHEMA_KEYS}


def schema_of(group: str, path: Path) -> type:
    if not group:
        return RunConfig
    options = schemas(group)
    if len(options) == 1:
        return options[0]
    return {typing.get_args(typing.get_type_hints(cls)[TAG])[0]: cls for cls in options}[path.stem]


def restated(cls: type, data: dict[str, typing.Any], prefix: str) -> list[str]:
    """The keys of ``data`` (a section of dataclass ``cls``) whose value equals the dataclass default."""
    hints, instance, found = typing.get_type_hints(cls), cls(), []
    for key, value in data.items():
        assert key in hints, f"'{prefix}{key}' is not a field of {cls.__name__}"
        default = getattr(instance, key)
        if dataclasses.is_dataclass(default) and isinstance(value, dict):
            found += restated(type(default), value, f"{prefix}{key}.")
        elif coerce(hints[key], value, f"{prefix}{key}") == default:
            found.append(f"{prefix}{key}: {value!r}")
    return found


@pytest.mark.parametrize(("group", "path"), FILES, ids=[str(p.relative_to(CONF)) for _, p in FILES])
def test_no_group_file_restates_a_dataclass_default(group, path):
    data = load(path)
    identity = IDENTITY.get(group)
    if identity:
        assert data.get(identity) == path.stem, f"{path}: state '{identity}: {path.stem}' (the option's identity)"
        del data[identity]
    found = restated(schema_of(group, path), data, f"{group}." if group else "")
    assert not found, (
        f"{path.relative_to(CONF.parent)} restates the dataclass defaults of {', '.join(found)}: delete them "
        f"(the defaults come from {schema_of(group, path).__name__}, see raylab/config/store.py)"
    )


@pytest.mark.parametrize(("group", "option"), [(g, o) for g in GROUPS for o in config_groups()[g]])
def test_every_field_of_a_group_option_is_a_key_of_the_composed_config(group, option):
    """So that ``group.field=value`` works on the command line for every field, whatever the file states."""

    def missing(cls: type, node: typing.Any, prefix: str) -> list[str]:
        out = []
        for f in dataclasses.fields(cls):
            default = getattr(cls(), f.name)
            if f.name not in node:
                out.append(prefix + f.name)
            elif dataclasses.is_dataclass(default):
                out += missing(type(default), node[f.name], f"{prefix}{f.name}.")
        return out

    composed = compose([f"{group}={option}"])[group]
    cls = schema_of(group, CONF / group / f"{option}.yaml")
    lacking = missing(cls, composed, f"{group}.")
    assert not lacking, f"{group}={option} lacks {lacking}: start its defaults list with /schema/{cls.__name__}@_here_"


def test_the_root_config_has_every_top_level_key():
    composed = compose([])
    root = [f.name for f in dataclasses.fields(RunConfig) if f.name != "run_dir"]
    lacking = [k for k in root if k not in composed]
    assert not lacking, f"conf/config.yaml lacks {lacking}: start its defaults list with /schema/{ROOT}@_here_"


def test_the_groups_are_the_conf_directories():
    assert set(GROUPS) == set(config_groups()) - set(OVERRIDE_GROUPS)

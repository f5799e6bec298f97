"""A generic DictConfig (or plain mapping) -> frozen dataclass coercion engine.

It knows nothing of raylab's schemas: it is given a dataclass and reads the type hints of its fields.
Supported hints: nested dataclasses, ``X | None``, unions of dataclasses told apart by a ``name: Literal[...]``
field (the tag), ``Literal``, ``tuple[X, ...]``, ``dict``, ``Any``, ``bool``, ``int``, ``float`` and ``str``.
Every mistake raises a one-line ``ConfigError`` that names the key and the fix: unknown keys (with the closest
valid one), wrong types, nulls where a value is needed.
"""

from __future__ import annotations

import difflib
import types
import typing
from collections.abc import Mapping
from dataclasses import fields, is_dataclass
from typing import Any, Literal

from raylab.errors import ConfigError

TAG = "name"
"""The field that tells the dataclasses of a union apart (each declares it ``Literal["<its name>"]``)."""


def to_container(cfg: Mapping[str, Any]) -> dict[str, Any]:
    """A plain dict of ``cfg``, interpolations resolved (a DictConfig), or a shallow copy (a mapping)."""
    try:
        from omegaconf import DictConfig, OmegaConf
    except ImportError:  # pragma: no cover - omegaconf ships with hydra-core
        return dict(cfg)
    if isinstance(cfg, DictConfig):
        try:
            container = OmegaConf.to_container(cfg, resolve=True)
        except Exception as err:  # interpolation errors from OmegaConf
            raise ConfigError(f"cannot resolve the config: {' '.join(str(err).split())}") from err
        assert isinstance(container, dict)
        return {str(k): v for k, v in container.items()}
    return dict(cfg)


def build(cls: Any, data: Any, path: str) -> Any:
    """An instance of dataclass ``cls`` from mapping ``data``; ``path`` names it in errors ('' = the root)."""
    if not isinstance(data, Mapping):
        raise ConfigError(f"{path or 'the config'} must be a mapping (got {data!r})")
    hints = typing.get_type_hints(cls)
    names = [f.name for f in fields(cls)]
    for key in data:
        if key not in names:
            hint = difflib.get_close_matches(str(key), names, n=1)
            fix = f"did you mean '{_join(path, hint[0])}'?" if hint else f"valid keys: {', '.join(names)}"
            raise ConfigError(f"unknown config key '{_join(path, str(key))}': {fix}")
    kwargs = {name: coerce(hints[name], data[name], _join(path, name)) for name in names if name in data}
    return cls(**kwargs)


def coerce(tp: Any, value: Any, path: str) -> Any:
    """``value`` as type hint ``tp`` (numbers from strings like '1e-3', lists as tuples), or ``ConfigError``."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        options = [a for a in args if a is not type(None)]
        if all(is_dataclass(a) for a in options) and len(options) > 1:
            return _build_tagged(options, value, path)
        errors = []
        for option in options:
            try:
                return coerce(option, value, path)
            except ConfigError as err:
                errors.append(err)
        raise errors[-1]
    if value is None:
        raise ConfigError(f"{path} must not be null: give it a value")
    if is_dataclass(tp):
        return build(tp, value, path)
    if origin is Literal:
        # by type as well as value: 0 == False and 1 == True in Python, but learner.fused=0 is not false
        if not any(type(value) is type(a) and value == a for a in args):
            raise ConfigError(f"{path} must be one of {', '.join(map(_literal, args))} (got {value!r})")
        return value
    if origin is tuple:
        if not isinstance(value, list | tuple):
            raise ConfigError(f"{path} must be a list (got {value!r}), e.g. {path}=[1,2]")
        return tuple(coerce(args[0], v, f"{path}[{i}]") for i, v in enumerate(value))
    if origin is dict or tp is dict:
        if not isinstance(value, Mapping):
            raise ConfigError(f"{path} must be a mapping (got {value!r})")
        if args and args[1] is not Any:  # dict[str, X]: every value an X
            return {str(k): coerce(args[1], v, _join(path, str(k))) for k, v in value.items()}
        return dict(value)
    if tp is Any:
        return value
    if tp is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{path} must be true or false (got {value!r})")
        return value
    if tp is int:
        number = _number(value, path, "an integer")
        if isinstance(number, int):  # exact, however large (a range check, where there is one, names the fix)
            return number
        if float(number) != int(number):
            raise ConfigError(f"{path} must be an integer (got {value!r})")
        return int(number)
    if tp is float:
        return float(_number(value, path, "a number"))
    if tp is str:
        if not isinstance(value, str):
            raise ConfigError(f"{path} must be a string (got {value!r}); quote it")
        return value
    raise TypeError(f"unsupported config type {tp!r} at {path}")  # a bug in the schema, not user input


def _build_tagged(options: list[Any], value: Any, path: str) -> Any:
    by_name = {typing.get_args(typing.get_type_hints(o)[TAG])[0]: o for o in options}
    name = value.get(TAG) if isinstance(value, Mapping) else None
    if name not in by_name:
        raise ConfigError(f"unknown {path} '{name}': choose one of {', '.join(by_name)}")
    return build(by_name[name], value, path)


def _number(value: Any, path: str, what: str) -> float | int:
    if isinstance(value, bool):
        raise ConfigError(f"{path} must be {what} (got {value!r})")
    if isinstance(value, int | float):
        return value
    if isinstance(value, str):
        try:
            return float(value.replace("_", ""))
        except ValueError:
            pass
    raise ConfigError(f"{path} must be {what} (got {value!r})")


def plain(value: Any) -> Any:
    """Nested dicts and lists only (tuples become lists): what ``dataclasses.asdict`` gives, YAML-ready."""
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return value


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _literal(value: Any) -> str:
    """A Literal option as a user writes it on the command line (true, not True)."""
    return str(value).lower() if isinstance(value, bool) else str(value)

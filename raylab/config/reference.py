"""The configuration reference, generated from the config dataclasses: every key reachable from ``RunConfig``
with its type, its default and the docstring written under its field.

    python -m raylab.config.reference > reference.md

The documentation site's "Configuration reference" page is this module's ``markdown()``, run when the site
is built (docs/hooks.py), so the page cannot drift from the code. Docstrings are read from each class's
source with ``ast`` (Python keeps no attribute docstrings at run time); tests/unit/test_config_reference.py
fails when a key has none. Nothing here imports more than ``raylab.config`` does.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import re
import textwrap
import types
import typing
from dataclasses import dataclass
from functools import cache
from typing import Any, Literal

from raylab.config.schema import RunConfig


@dataclass(frozen=True)
class Entry:
    """One config key."""

    key: str
    """Dotted key, as on the command line (``topology.num_workers``)."""
    type: str
    """Its type, in the words of a YAML value (``int or null``, ``one of mlp, nature_cnn``)."""
    default: str | None
    """Its default as YAML (None for a section: its keys have their own)."""
    doc: str
    """The docstring under the field ('' when it has none)."""
    section: bool = False
    """A nested dataclass (its keys follow it)."""


@cache
def field_docs(cls: type) -> dict[str, str]:
    """``{field name: docstring}`` of dataclass ``cls``: the string literal right under each annotated field
    in the class's source (fields without one are absent)."""
    source = textwrap.dedent(inspect.getsource(cls))
    node = ast.parse(source).body[0]
    assert isinstance(node, ast.ClassDef), f"{cls.__name__}'s source is not a class"
    docs: dict[str, str] = {}
    for stmt, after in zip(node.body, [*node.body[1:], None], strict=True):
        if (
            isinstance(stmt, ast.AnnAssign)
            and isinstance(stmt.target, ast.Name)
            and isinstance(after, ast.Expr)
            and isinstance(after.value, ast.Constant)
            and isinstance(after.value.value, str)
        ):
            docs[stmt.target.id] = inspect.cleandoc(after.value.value)
    return docs


def dataclass_types(hint: Any) -> tuple[type, ...]:
    """The dataclasses a field of type ``hint`` holds: itself, or each member of a union of dataclasses."""
    members = typing.get_args(hint) if _is_union(hint) else (hint,)
    return tuple(m for m in members if dataclasses.is_dataclass(m) and isinstance(m, type))


def entries(cls: type = RunConfig, prefix: str = "") -> list[Entry]:
    """Every key of dataclass ``cls`` in field order, nested dataclasses followed by their keys. A union of
    dataclasses (``algo``) lists each member's keys after it, told apart by its ``name``'s default."""
    hints = typing.get_type_hints(cls)
    docs = field_docs(cls)
    out: list[Entry] = []
    for f in dataclasses.fields(cls):
        key = f"{prefix}{f.name}"
        nested = dataclass_types(hints[f.name])
        if nested:
            out.append(Entry(key, " or ".join(c.__name__ for c in nested), None, docs.get(f.name, ""), True))
            for member in nested:
                out.extend(entries(member, f"{key}."))
        else:
            out.append(Entry(key, type_words(hints[f.name]), yaml_value(_default(f)), docs.get(f.name, "")))
    return out


def keys(cls: type = RunConfig) -> list[str]:
    """Every dotted key reachable from ``cls`` (a key shared by several algorithms once)."""
    return list(dict.fromkeys(e.key for e in entries(cls)))


def sections(cls: type = RunConfig) -> list[str]:
    """The fields of ``cls`` that are sections (nested dataclasses): each one a heading of the page."""
    hints = typing.get_type_hints(cls)
    return [f.name for f in dataclasses.fields(cls) if dataclass_types(hints[f.name])]


def markdown(cls: type = RunConfig) -> str:
    """The reference page's body: the top-level keys, then a section per nested dataclass (``algo``: one per
    algorithm), each a table of key, type, default and description."""
    hints = typing.get_type_hints(cls)
    docs = field_docs(cls)
    names = sections(cls)
    parts = ["## Top level\n", _table(e for e in entries(cls) if e.key.split(".")[0] not in names)]
    for name in names:
        parts.append(f"## `{name}`\n")
        parts.append(_describe(docs.get(name, "")) + "\n")
        members = dataclass_types(hints[name])
        for member in members:
            if len(members) > 1:
                parts.append(f"### `{name}={_name_default(member)}`\n")
            if _written_doc(member):
                parts.append(_describe(_written_doc(member)) + "\n")
            parts.append(_table(entries(member, f"{name}.")))
    return "\n".join(parts)


def _name_default(cls: type) -> str:
    return next(str(f.default) for f in dataclasses.fields(cls) if f.name == "name")


def _written_doc(cls: type) -> str:
    """The class docstring written in its source ('' for the signature dataclass makes up)."""
    doc = cls.__doc__ or ""
    return "" if doc.startswith(f"{cls.__name__}(") else inspect.cleandoc(doc)


def type_words(hint: Any) -> str:
    """A field's type as its YAML value reads: ``int``, ``float or null``, ``one of `a`, `b` ``, ``list of int``."""
    if hint is type(None):
        return "`null`"
    if typing.get_origin(hint) is Literal:
        return "one of " + ", ".join(f"`{yaml_value(v)}`" for v in typing.get_args(hint))
    if _is_union(hint):
        return " or ".join(type_words(a) for a in typing.get_args(hint))
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return f"list of {type_words(args[0])}"
        return f"list of {len(args)} {' / '.join(dict.fromkeys(type_words(a) for a in args))}"
    if origin is dict:
        return "mapping"
    if hint is Any:
        return "any"
    return f"`{getattr(hint, '__name__', str(hint))}`"


def yaml_value(value: Any) -> str:
    """``value`` as it is written in YAML or on the command line."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value if value else '""'
    if isinstance(value, tuple | list):
        return "[" + ", ".join(yaml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {yaml_value(v)}" for k, v in value.items()) + "}"
    return repr(value)


def _default(f: dataclasses.Field[Any]) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    raise AssertionError(f"config field {f.name} has no default")


def _is_union(hint: Any) -> bool:
    return typing.get_origin(hint) in (typing.Union, types.UnionType)


def _table(rows: typing.Iterable[Entry]) -> str:
    lines = ["| key | type | default | description |", "|---|---|---|---|"]
    for e in rows:
        default = "" if e.default is None else f"`{e.default}`"
        kind = f"section: {e.type}" if e.section else e.type
        lines.append(f"| `{e.key}` | {kind} | {default} | {_describe(e.doc)} |")
    return "\n".join(lines) + "\n"


_CODE = re.compile(r"(``.+?``|`[^`]+`)")
_ESCAPE = str.maketrans({"|": r"\|", "*": r"\*", "[": r"\[", "]": r"\]", "<": "&lt;", ">": "&gt;"})


def _describe(doc: str) -> str:
    """A docstring as one line of Markdown: code spans kept (RST's double backticks made single), any other
    character Markdown would read as markup or a table cell's end escaped."""
    text = " ".join(doc.split())
    pieces = _CODE.split(text)
    return "".join(f"`{piece.strip('`')}`" if i % 2 else piece.translate(_ESCAPE) for i, piece in enumerate(pieces))


if __name__ == "__main__":
    print(markdown())

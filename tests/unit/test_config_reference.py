"""The configuration reference (raylab/config/reference.py, the docs site's generated page): every config key
reachable from RunConfig has a docstring under its field, and every key is in the generated page.

The keys are walked here independently of the generator (dataclasses.fields and type hints), so a key the
generator skipped fails too.
"""

from __future__ import annotations

import dataclasses
import re
import types
import typing

from raylab.config import RunConfig
from raylab.config.reference import entries, field_docs, keys, markdown, type_words, yaml_value


def walk(cls: type, prefix: str = "") -> list[tuple[type, str, str]]:
    """(owning dataclass, field name, dotted key) of every field reachable from ``cls``, unions included."""
    found = []
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        key = f"{prefix}{f.name}"
        found.append((cls, f.name, key))
        hint = hints[f.name]
        members = typing.get_args(hint) if typing.get_origin(hint) in (typing.Union, types.UnionType) else (hint,)
        for member in members:
            if dataclasses.is_dataclass(member):
                found.extend(walk(member, f"{key}."))
    return found


def test_the_walk_reaches_every_section_and_every_algorithm():
    reached = {key for _, _, key in walk(RunConfig)}
    for key in ("seed", "topology.max_actor_restarts", "logger.wandb.project", "algo.epsilon.base", "algo.rho_bar"):
        assert key in reached
    assert len(reached) > 100


def test_every_config_key_has_a_docstring():
    missing = [f"{key} ({cls.__name__}.{name})" for cls, name, key in walk(RunConfig) if not field_docs(cls).get(name)]
    assert not missing, "config keys without a docstring under their field: " + ", ".join(missing)


def test_every_config_key_is_in_the_generated_page():
    page = markdown()
    absent = [key for _, _, key in walk(RunConfig) if f"| `{key}` |" not in page and f"\n## `{key}`\n" not in page]
    assert not absent, f"keys missing from the configuration reference: {absent}"
    assert keys() == list(dict.fromkeys(key for _, _, key in walk(RunConfig)))


def test_every_row_shows_the_fields_docstring_and_default():
    page = markdown()
    row = next(line for line in page.splitlines() if line.startswith("| `topology.max_actor_restarts` |"))
    assert "| `int` | `-1` |" in row and "rollout" in row and "parameter-server" in row
    assert "| `learner.max_grad_norm` | `float` or `null` | `10.0` |" in page
    assert "| `model.hidden_sizes` | list of `int` | `[256, 256]` |" in page
    for algo in ("dqn", "a3c", "ppo", "appo"):
        assert f"### `algo={algo}`" in page


def test_a_table_row_has_exactly_four_cells():
    """Docstrings hold pipes, stars, brackets and <placeholders>: escaped, they never split a cell or vanish
    as HTML."""
    for line in markdown().splitlines():
        if line.startswith("| `"):
            cells = re.split(r"(?<!\\)\|", line.strip())[1:-1]
            assert len(cells) == 4, line
    assert "&lt;run_dir&gt;/tensorboard" in markdown()


def test_field_docs_reads_the_string_under_each_field():
    @dataclasses.dataclass
    class Example:
        a: int = 1
        """First."""
        b: int = 2
        c: str = "x"
        """Third,
        on two lines."""

    assert field_docs(Example) == {"a": "First.", "c": "Third,\non two lines."}


def test_types_and_defaults_read_as_yaml():
    assert type_words(int | None) == "`int` or `null`"
    assert type_words(typing.Literal["auto", True, False]) == "one of `auto`, `true`, `false`"
    assert type_words(tuple[int, int] | None) == "list of 2 `int` or `null`"
    values = (None, True, "", (1, 2), {}, 1e-3)
    assert [yaml_value(v) for v in values] == ["null", "true", '""', "[1, 2]", "{}", "0.001"]
    assert all(e.default is None for e in entries() if e.section)

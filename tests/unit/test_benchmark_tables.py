"""The benchmark tables (docs/tables/, the docs site's benchmark pages): every table renders from
the committed JSON, every committed result of a kind they render is in one, every table is on a docs page, and the
short README quotes its table as generated."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from docs import tables
from docs.tables import BENCHMARKS, TABLES, module_bullets, table

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


@pytest.mark.parametrize("name", list(TABLES))
def test_every_table_renders_from_the_committed_json(name):
    text = table(name)
    blocks = re.findall(r"(?m)(?:^\|.*\n)+", text)  # each Markdown table in it
    assert blocks, f"table {name} rendered no table"
    for block in blocks:
        header, rule, *body = block.splitlines()
        columns = len(re.split(r"(?<!\\)\|", header.strip())) - 2
        assert rule == "|" + "---|" * columns
        assert body, f"table {name} has no rows"
        for row in body:
            cells = re.split(r"(?<!\\)\|", row.strip())[1:-1]
            assert len(cells) == columns, row
            assert all(cell.strip() for cell in cells), f"empty cell in {row}"
    assert not re.search(r"\b(None|nan|inf)\b", text), text
    for file in TABLES[name].files:
        assert f"benchmarks/{file}" in text
    assert ("cores" in text and "commit" in text) or "machine not recorded" in text  # each file's machine line


def test_every_committed_result_of_a_rendered_kind_has_a_table():
    """A new `make bench-*` result (learner_cuda.json, another *_learning.json) must not go unrendered."""
    claimed = {file for spec in TABLES.values() for file in spec.files}
    kinds = {json.loads((BENCHMARKS / file).read_text())["benchmark"] for file in claimed}
    unclaimed = [
        path.name
        for path in sorted(BENCHMARKS.glob("*.json"))
        if json.loads(path.read_text()).get("benchmark") in kinds and path.name not in claimed
    ]
    assert not unclaimed, f"benchmark results with no table in docs/tables/registry.py: {unclaimed}"


def test_every_table_is_on_a_docs_page():
    pages = "\n".join(path.read_text() for path in DOCS.rglob("*.md"))
    missing = [name for name in TABLES if f"<!-- raylab:bench {name} -->" not in pages]
    assert not missing, f"tables no docs page shows: {missing}"


def test_the_short_readme_quotes_its_table_as_generated():
    """README.md's headline table is pasted from `python -m docs.tables`: it must still be what
    the JSON says."""
    readme = (ROOT / "README.md").read_text()
    assert table("cartpole_ppo_vs_rllib", link=lambda file: f"benchmarks/{file}") in readme


def test_figures_match_their_json():
    text = table("cartpole_dqn_learning")
    data = json.loads((BENCHMARKS / "cartpole_dqn_learning.json").read_text())
    summary = data["summary"]["apex_dqn"]
    assert f"{round(summary['median_env_steps']):,}" in text
    assert f"{summary['median_train_seconds']:.1f} s" in text
    assert data["machine"]["date"][:10] in text


def test_links_point_where_the_caller_says(tmp_path):
    text = table("e2e_mario", link=lambda file: f"assets/benchmarks/{file}")
    assert "[`e2e_mario.json`](assets/benchmarks/e2e_mario.json)" in text
    assert "[`e2e_mario_free.json`](assets/benchmarks/e2e_mario_free.json)" in text


def test_the_command_line_prints_every_table(capsys):
    assert tables.main([]) == 0
    out = capsys.readouterr().out
    assert out.count("\n### ") + out.startswith("### ") == len(TABLES)
    with pytest.raises(SystemExit):
        tables.main(["no_such_table"])


def test_module_bullets_reads_a_docstrings_variants(tmp_path):
    module = tmp_path / "m.py"
    module.write_text('"""Title.\n\n- ``a``: first,\n  continued.\n- ``b``: uses ``a``.\n\nAfter.\n"""\n')
    assert module_bullets(module) == {"a": "first, continued.", "b": "uses `a`."}

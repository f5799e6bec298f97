"""docs/hooks.py, the documentation site's build-time generator: every marker on every page expands (the
same check `mkdocs build --strict` makes, without building), and an unknown marker fails."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import SimpleNamespace

import pytest

pytest.importorskip("mkdocs")  # the docs extra (in dev)

from mkdocs.exceptions import PluginError

DOCS = Path(__file__).resolve().parents[2] / "docs"


@pytest.fixture(scope="module")
def hooks():
    spec = importlib.util.spec_from_file_location("raylab_docs_hooks", DOCS / "hooks.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def expand(hooks, text: str, src_uri: str = "page.md") -> str:
    page = SimpleNamespace(file=SimpleNamespace(src_uri=src_uri))
    return hooks.on_page_markdown(text, page=page, config=None, files=None)


@pytest.mark.parametrize("path", sorted(DOCS.rglob("*.md")), ids=lambda p: p.name)
def test_every_marker_on_every_page_expands(hooks, path):
    out = expand(hooks, path.read_text(), path.relative_to(DOCS).as_posix())
    assert not hooks.MARKER.search(out), "a marker was left unexpanded"


def test_markers_expand_indented_and_links_are_relative_to_the_page(hooks):
    out = expand(hooks, "!!! quote\n    <!-- raylab:docstring raylab/topology/ppo.py -->\n", "sub/page.md")
    assert "\n    Synchronous PPO on Ray" in out
    out = expand(hooks, "<!-- raylab:bench e2e_mario -->", "sub/page.md")
    assert "(../assets/benchmarks/e2e_mario.json)" in out


def test_an_unknown_marker_fails_the_build(hooks):
    for marker in ("<!-- raylab:nope -->", "<!-- raylab:bench no_such_table -->", "<!-- raylab:docstring x.py -->"):
        with pytest.raises(PluginError):
            expand(hooks, marker)


def test_docstrings_become_markdown(hooks):
    md = hooks.docstring_markdown("Title with ``code`` and <tag>.\n    drawing -> <arrow>\nafter")
    assert md.splitlines() == ["Title with `code` and &lt;tag>.", "", "    drawing -> <arrow>", "after"]
    assert re.search(r"\| `cartpole_dqn` \|", hooks.experiments())


def test_the_applicability_table_is_the_one_the_check_reads(hooks):
    """docs/configuration.md shows raylab/config/applicability.py's TABLE, generated at build time: every key."""
    from raylab.config.applicability import TABLE, markdown_table

    page = (DOCS / "configuration.md").read_text()
    assert "<!-- raylab:applicability -->" in page
    out = expand(hooks, page, "configuration.md")
    assert markdown_table() in out
    for entry in TABLE:
        assert f"| `{entry.key}` (default `" in out

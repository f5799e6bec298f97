"""scripts/check_docs.py: pages that Python-Markdown would render differently from how they read fail
``make lint``, one line per finding; a page written right passes; the real docs pass."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("check_docs", ROOT / "scripts" / "check_docs.py")
assert spec and spec.loader
check_docs = importlib.util.module_from_spec(spec)
spec.loader.exec_module(check_docs)

BROKEN = """# A page

Options:
- one
- two

- **Observation.** What it sees:
  - a window
  - its heading

```text
Fenced:
- not a list
  - not nested
```

![a curve](assets/benchmarks/missing.png)
"""

GOOD = """---
hide:
  - navigation
---

# A page

Options:

- one, which wraps
  onto a second line
- two

- **Observation.** What it sees:
    - a window
    - its heading

    An indented paragraph of the item.
- three

```text
Fenced:
- not a list
```

![a curve](assets/benchmarks/curve.png)
![a picture](pictures/shown.png)
"""


def site(tmp_path: Path, page: str, images: list[str]) -> tuple[Path, Path]:
    docs, benchmarks = tmp_path / "docs", tmp_path / "benchmarks"
    for path in [docs / "sub" / "page.md", *(tmp_path / image for image in images)]:
        path.parent.mkdir(parents=True, exist_ok=True)
    page = page.replace("](assets/", "](../assets/").replace("](pictures/", "](../pictures/")
    (docs / "sub" / "page.md").write_text(page)
    for image in images:
        (tmp_path / image).write_bytes(b"png")
    return docs, benchmarks


def test_a_broken_page_fails_one_line_per_finding(tmp_path, capsys):
    docs, benchmarks = site(tmp_path, BROKEN, ["docs/pictures/unshown.png"])
    assert check_docs.main(["--docs", str(docs), "--benchmarks", str(benchmarks)]) == 1
    assert capsys.readouterr().out.splitlines() == [
        "docs/sub/page.md:4: list item right after a paragraph line; put a blank line before it",
        "docs/sub/page.md:8: list item indented by 2 spaces; nest lists by 4",
        "docs/sub/page.md:9: list item indented by 2 spaces; nest lists by 4",
        "docs/sub/page.md:17: image assets/benchmarks/missing.png does not exist",
        "docs/pictures/unshown.png:1: image no page shows; show it or remove it",
    ]


def test_a_page_written_right_passes(tmp_path, capsys):
    docs, benchmarks = site(tmp_path, GOOD, ["benchmarks/curve.png", "docs/pictures/shown.png"])
    assert check_docs.main(["--docs", str(docs), "--benchmarks", str(benchmarks)]) == 0
    assert capsys.readouterr().out == ""


def test_the_real_docs_pass():
    assert check_docs.check(ROOT / "docs", ROOT / "benchmarks") == []


PROCESS = """# A page

The game of seeds 000/004, against `seed004` here (seed 003's workflow); legend: seed 000 initial/final.
Built from the machine's apt mirror with the machine's pip configuration; podman fails on the machine that ran it.
161 of them (marked new), on a CI-class machine. The harness now kills the group; the first, plausible-looking fix
failed. The tree was 0d6c994 plus the two changes. Measured in this session.

```bash
python -m raylab.bench snake  # vs seed004
```
"""


def test_each_process_word_fails_where_it_stands(tmp_path, capsys):
    docs, benchmarks = site(tmp_path, PROCESS, [])
    assert check_docs.main(["--docs", str(docs), "--benchmarks", str(benchmarks)]) == 1
    found = [line.split(" is about", 1)[0] for line in capsys.readouterr().out.splitlines()]
    assert found == [
        "docs/sub/page.md:3: 'seeds 000/004'", "docs/sub/page.md:3: 'seed004'", "docs/sub/page.md:3: 'seed 003'",
        "docs/sub/page.md:3: 'seed 000'", "docs/sub/page.md:4: 'the machine's apt mirror'",
        "docs/sub/page.md:4: 'the machine's pip configuration'", "docs/sub/page.md:4: 'on the machine that ran'",
        "docs/sub/page.md:5: 'marked new'", "docs/sub/page.md:5: 'CI-class'", "docs/sub/page.md:5: 'The harness now'",
        "docs/sub/page.md:5: 'plausible-looking fix'", "docs/sub/page.md:6: 'The tree was 0d6c994'",
        "docs/sub/page.md:6: 'plus the two changes'", "docs/sub/page.md:6: 'this session'",
        "docs/sub/page.md:9: 'seed004'",
    ]  # fmt: skip


def test_the_site_build_applies_it_to_generated_parts(tmp_path):
    """docs/hooks.py runs the same rule on a page after its markers are expanded (tables, docstrings, text)."""
    import types

    pytest.importorskip("mkdocs")
    from mkdocs.exceptions import PluginError

    from docs import hooks

    report = tmp_path / "report.txt"
    report.write_text("loop  steps/s\nraylab  9000\nvs seed004 here  1.9x\n")
    page = types.SimpleNamespace(file=types.SimpleNamespace(src_uri="benchmarks/page.md"))
    with pytest.raises(PluginError, match=r"benchmarks/page.md \(as generated\):6: 'seed004' is about how raylab"):
        hooks.on_page_markdown(f"# A page\n\n<!-- raylab:text {report} -->\n", page, {}, None)
    report.write_text("vs the reference loop here  1.9x\n")
    assert "the reference loop" in hooks.on_page_markdown(f"<!-- raylab:text {report} -->\n", page, {}, None)

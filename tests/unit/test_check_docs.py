"""scripts/check_docs.py: pages that Python-Markdown would render differently from how they read fail
``make lint``, one line per finding; a page written right passes; the real docs pass."""

from __future__ import annotations

import importlib.util
from pathlib import Path

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

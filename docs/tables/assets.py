"""Which benchmark images the site publishes: the ones a page shows. docs/hooks.py copies exactly these into
the site (beside every top-level benchmark JSON); scripts/check_docs.py holds the pages to the same rule."""

from __future__ import annotations

import posixpath
import re
from pathlib import Path

ASSETS = "assets/benchmarks"
"""Where the site serves benchmarks/ from."""

IMAGE = re.compile(r"!\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)|<img\s[^>]*src=\"([^\"]+)\"")
"""A Markdown image or an HTML <img>: group 1 or 2 is its target."""


def images(page: Path, docs: Path) -> list[tuple[int, str]]:
    """``(line, target)`` of each image ``page`` shows, the target relative to ``docs`` (a site path)."""
    here = posixpath.dirname(page.relative_to(docs).as_posix())
    found = []
    for number, line in enumerate(page.read_text().splitlines(), 1):
        for match in IMAGE.finditer(line):
            target = (match[1] or match[2]).split("#")[0]
            if "://" not in target:
                found.append((number, posixpath.normpath(posixpath.join(here, target))))
    return found


def shown_benchmark_images(docs: Path) -> set[str]:
    """The paths under benchmarks/ (``a3c_scaling.png``, ``coinrun_ppo_timed/comparison.png``) the pages show."""
    prefix = ASSETS + "/"
    return {
        target[len(prefix) :]
        for page in sorted(docs.rglob("*.md"))
        for _, target in images(page, docs)
        if target.startswith(prefix)
    }

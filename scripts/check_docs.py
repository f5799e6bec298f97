"""Do the docs pages render as written? Python-Markdown (MkDocs) reads some Markdown differently from GitHub:

1. a list item directly under a paragraph line, with no blank line between, stays part of the paragraph
   (the reader sees a raw "- " in the text);
2. a nested list item indented by fewer than 4 spaces is not nested (the list comes out flat);
3. an image under docs/ that no page shows is dead weight, and an image a page shows must exist: benchmark
   images (``assets/benchmarks/...``) under benchmarks/, which the site copies only when a page shows them
   (docs/tables/assets.py), anything else under docs/;
4. words about how raylab was made have no place on pages users read: the seed documents' numbers
   ("seed 004"), the machine or the session that wrote a page, change-log talk ("the harness now ...").
   The site's build applies the same rule to the generated parts (docs/hooks.py: tables, docstrings).

    python scripts/check_docs.py            # the checkout's docs/ and benchmarks/
    python scripts/check_docs.py --docs DIR --benchmarks DIR

One line per finding, ``file:line: what``; exit status 1 when there is any. Fenced code blocks and YAML front
matter are skipped. Standard library only (``make lint`` runs it before the site is built).
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from docs.tables.assets import ASSETS, images  # noqa: E402

LIST_ITEM = re.compile(r"^(?P<indent> *)(?:[-*+]|\d+[.)])(?: +|$)")
FENCE = re.compile(r"^ *(```|~~~)")
SEPARATOR = re.compile(r"^ *(#{1,6} |!!!|\?\?\?|\|)")
"""Lines that end a block of their own: headings, admonition openers, table rows."""
IMAGE_SUFFIXES = {".png", ".jpg", ".jpeg", ".gif", ".svg", ".webp"}
PROCESS_WORDS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"\bseeds? 00\d(?:/00\d)?\b|\bseed00\d\b", re.IGNORECASE),
     "name the reference by what it is (the Snake DQN reference, the C++ A3C benchmark)"),
    (re.compile(r"\bthe machine's (?:apt mirror|pip configuration)|\bon the machine that ran\b", re.IGNORECASE),
     "say what a user's machine needs, not what the one that wrote this had"),
    (re.compile(r"\bmarked new\b|\bCI-class\b", re.IGNORECASE), "say what it means for a user"),
    (re.compile(r"\bthe harness now\b|\bplausible-looking fix\b|\bthe tree was [0-9a-f]{7}|\bplus the two changes\b",
                re.IGNORECASE), "say what it does now, not how it came to"),
    (re.compile(r"\b(?:this|that|an earlier|a previous|the last) session\b", re.IGNORECASE),
     "say what was measured and with which commit, not by whom"),
]  # fmt: skip
"""Rule 4: each pattern, and what to write instead."""


def prose_lines(text: str) -> Iterator[tuple[int, str]]:
    """``(number, line)`` of every line outside fenced code blocks and front matter; a skipped stretch reads as
    one blank line."""
    lines = text.splitlines()
    start = 0
    if lines and lines[0].strip() == "---":
        end = next((i for i, line in enumerate(lines[1:], 1) if line.strip() == "---"), 0)
        start = end + 1
    fence: str | None = None
    for number, line in enumerate(lines[start:], start + 1):
        match = FENCE.match(line)
        if fence is None and match:
            fence = match[1]
            yield number, ""
        elif fence is not None:
            if line.strip().startswith(fence):
                fence = None
        else:
            yield number, line


def list_findings(page: Path, name: str) -> list[str]:
    """Rules 1 and 2 on one page."""
    found = []
    in_list = False  # inside a list: its items, their continuation lines and their indented paragraphs
    block_start = True  # the next non-blank line opens a block (after a blank line, a heading, a table row...)
    for number, line in prose_lines(page.read_text()):
        if not line.strip() or SEPARATOR.match(line):
            block_start = True
            if line.strip():
                in_list = False
            continue
        item = LIST_ITEM.match(line)
        if item:
            if not block_start and not in_list:
                found.append(f"{name}:{number}: list item right after a paragraph line; put a blank line before it")
            indent = len(item["indent"])
            if indent % 4:
                found.append(f"{name}:{number}: list item indented by {indent} spaces; nest lists by 4")
            in_list = True
        elif block_start and not (in_list and line.startswith(" ")):
            in_list = False
        block_start = False
    return found


def image_findings(docs: Path, benchmarks: Path) -> list[str]:
    """Rule 3: images no page shows, and images a page shows that are not there."""
    found = []
    shown: set[str] = set()
    for page in sorted(docs.rglob("*.md")):
        for number, target in images(page, docs):
            shown.add(target)
            if target.startswith(ASSETS + "/"):
                exists = (benchmarks / target[len(ASSETS) + 1 :]).is_file()
            else:
                exists = (docs / target).is_file()
            if not exists:
                found.append(f"{page.relative_to(docs.parent)}:{number}: image {target} does not exist")
    for path in sorted(p for p in docs.rglob("*") if p.suffix.lower() in IMAGE_SUFFIXES):
        if path.relative_to(docs).as_posix() not in shown:
            found.append(f"{path.relative_to(docs.parent)}:1: image no page shows; show it or remove it")
    return found


def process_findings(text: str, name: str) -> list[str]:
    """Rule 4 on one page's text (its code blocks included: a command's comment is read too)."""
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        for pattern, instead in PROCESS_WORDS:
            for match in pattern.finditer(line):
                found.append(f"{name}:{number}: '{match[0]}' is about how raylab was made; {instead}")
    return found


def check(docs: Path, benchmarks: Path) -> list[str]:
    findings = []
    for page in sorted(docs.rglob("*.md")):
        name = page.relative_to(docs.parent).as_posix()
        findings += list_findings(page, name) + process_findings(page.read_text(), name)
    return findings + image_findings(docs, benchmarks)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scripts/check_docs.py", description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--docs", type=Path, default=ROOT / "docs")
    parser.add_argument("--benchmarks", type=Path, default=ROOT / "benchmarks")
    args = parser.parse_args(argv)
    findings = check(args.docs, args.benchmarks)
    for finding in findings:
        print(finding)
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())

"""mkdocs hooks (mkdocs.yml ``hooks:``): the parts of the site that are generated from the code and the data
at build time, so that they cannot drift from them.

A page asks for a generated part with a line of its own (indented, the part is indented alike):

    <!-- raylab:config-reference -->        every config key: raylab/config/reference.py
    <!-- raylab:bench NAME -->              benchmark table NAME from benchmarks/*.json: docs/tables/
    <!-- raylab:docstring PATH -->          the module docstring of PATH (e.g. raylab/topology/ppo.py)
    <!-- raylab:docstring-text PATH -->     the same, verbatim in a text block (docstrings that draw tables)
    <!-- raylab:groups -->                 the config groups in conf/ and their options
    <!-- raylab:applicability -->          the keys that apply to some runs only: raylab/config/applicability.py
    <!-- raylab:experiments -->            the named jobs in conf/experiment/ and what each one says it is
    <!-- raylab:console PATH -->            console lines the logger prints for a committed metrics.jsonl
    <!-- raylab:text PATH -->               a committed text file, verbatim (a benchmark's own report)
    <!-- raylab:catalogue -->               the catalogue of bad inputs: tests/cli/catalogue.py

Any other ``raylab:`` marker fails the build. Every top-level benchmark JSON, and each benchmark image a page
shows (docs/tables/assets.py), is copied into the site under assets/benchmarks/ (pages link them there); nothing
is copied into docs/ by hand.
"""

from __future__ import annotations

import ast
import json
import posixpath
import re
import sys
from pathlib import Path
from typing import Any

from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this checkout's raylab, whichever one the environment has installed; docs.tables

from docs import tables  # noqa: E402
from docs.tables.assets import ASSETS, shown_benchmark_images  # noqa: E402
from raylab.config import applicability, reference  # noqa: E402
from scripts.check_docs import process_findings  # noqa: E402
from tests.cli import catalogue  # noqa: E402  (imported now: MkDocs takes ROOT off sys.path once hooks load)

BENCHMARKS = ROOT / "benchmarks"
MARKER = re.compile(r"^(?P<indent>[ ]*)<!-- raylab:(?P<kind>[\w-]+)(?: (?P<arg>[^ ]+))? -->$", re.MULTILINE)


def on_files(files: Files, config: Any) -> Files:
    """Every benchmark image a page shows (run folders included) and every top-level benchmark JSON, into
    assets/benchmarks/. An image no page shows stays in benchmarks/, beside its JSON."""
    shown = [BENCHMARKS / name for name in sorted(shown_benchmark_images(Path(config["docs_dir"])))]
    for path in [*(p for p in shown if p.is_file()), *sorted(BENCHMARKS.glob("*.json"))]:
        uri = f"{ASSETS}/{path.relative_to(BENCHMARKS).as_posix()}"
        files.append(File.generated(config, uri, abs_src_path=str(path)))
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    here = posixpath.dirname(page.file.src_uri)

    def asset(name: str) -> str:
        return posixpath.relpath(f"{ASSETS}/{name}", here or ".")

    def expand(match: re.Match[str]) -> str:
        """The part a marker asks for, indented as the marker is (inside an admonition, say)."""
        text = generate(match["kind"], match["arg"])
        return "\n".join(match["indent"] + line if line.strip() else "" for line in text.splitlines())

    def generate(kind: str, arg: str | None) -> str:
        if kind == "config-reference":
            return reference.markdown()
        if kind == "bench" and arg in tables.TABLES:
            return tables.table(arg, BENCHMARKS, link=asset)
        if kind == "docstring" and arg:
            return docstring_markdown(module_docstring(arg))
        if kind == "docstring-text" and arg:
            return f"```text\n{module_docstring(arg)}\n```\n"
        if kind == "experiments":
            return experiments()
        if kind == "groups":
            return groups()
        if kind == "applicability":
            return applicability.markdown_table()
        if kind == "catalogue":
            return catalogue.markdown()
        if kind == "console" and arg:
            return console(arg)
        if kind == "text" and arg and (ROOT / arg).is_file():
            return f"```text\n{(ROOT / arg).read_text().rstrip()}\n```\n"
        raise PluginError(f"{page.file.src_uri}: unknown or incomplete marker raylab:{kind} {arg or ''}")

    expanded = MARKER.sub(expand, markdown)
    findings = process_findings(expanded, f"{page.file.src_uri} (as generated)")
    if findings:  # the generated parts (tables, docstrings, the catalogue) under scripts/check_docs.py's rule 4
        raise PluginError("\n".join(findings))
    return expanded


def module_docstring(path: str) -> str:
    source = ROOT / path
    if not source.is_file():
        raise PluginError(f"docstring of {path}: no such file")
    doc = ast.get_docstring(ast.parse(source.read_text()))
    if not doc:
        raise PluginError(f"{path} has no module docstring")
    return doc


def docstring_markdown(doc: str) -> str:
    """A docstring as Markdown: RST's double backticks made single, indented drawings kept as code blocks
    (a blank line before each), and a ``<`` in prose escaped so it is not read as HTML."""
    out: list[str] = []
    in_code = False
    for line in doc.splitlines():
        code = line.startswith("    ") or (in_code and not line.strip())
        if code and not in_code and out and out[-1].strip():
            out.append("")
        in_code = code
        if code:
            out.append(line)
        else:
            pieces = re.split(r"(``.+?``)", line)
            out.append("".join(p.replace("``", "`") if i % 2 else p.replace("<", "&lt;") for i, p in enumerate(pieces)))
    return "\n".join(out) + "\n"


def groups() -> str:
    """A table of conf/'s config groups: each group's options, and the reference section it fills."""
    rows = ["| group | options | sets |", "|---|---|---|"]
    for group in sorted(p for p in (ROOT / "conf").iterdir() if p.is_dir() and not p.name.startswith(("_", "."))):
        options = " ".join(f"`{group.name}={o.stem}`" for o in sorted(group.glob("*.yaml")))
        fills = (
            f"[`{group.name}.*`](config-reference.md#{group.name})" if group.name in reference.sections() else "any key"
        )
        rows.append(f"| `{group.name}` | {options} | {fills} |")
    return "\n".join(rows) + "\n"


def experiments() -> str:
    """A table of conf/experiment/*.yaml: the job, what its header comment says, and the groups it picks."""
    rows = ["| `+experiment=` | what it is | picks |", "|---|---|---|"]
    for path in sorted((ROOT / "conf" / "experiment").glob("*.yaml")):
        lines = path.read_text().splitlines()
        comment, more = [], False
        for line in lines:
            if line.startswith("# @package"):
                continue
            if not line.startswith("#"):
                break
            if line.startswith(("#   ", "# -")):  # examples and lists: the first paragraph says what it is
                more = True
                break
            comment.append(line[1:].strip())
        if more:
            comment.append(f"(more in `conf/experiment/{path.name}`)")
        picks = [m[1] + "=" + m[2] for m in (re.match(r"\s+- override /(\w+): (\w+)", line) for line in lines) if m]
        what = " ".join(comment).replace("|", r"\|")
        rows.append(f"| `{path.stem}` | {what} | {' '.join(f'`{p}`' for p in picks)} |")
    return "\n".join(rows) + "\n"


def console(path: str) -> str:
    """The summary lines the console logger prints (raylab.metrics.loggers.format_row) for the first rows
    and the last row of a committed run's metrics.jsonl."""
    from raylab.metrics.loggers import format_row

    rows = [json.loads(line) for line in (ROOT / path).read_text().splitlines() if line.strip()]
    shown = [*rows[:3], rows[-1]] if len(rows) > 4 else rows
    lines = [format_row(row) for row in shown]
    if len(rows) > 4:
        lines.insert(3, "...")
    return "```text\n" + "\n".join(lines) + "\n```\n"

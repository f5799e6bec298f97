"""Every case of the catalogue of bad inputs (tests/cli/catalogue.py) ends in one line on stderr, exit status
2, no traceback, and leaves no run dir behind; run in this process through each CLI's entry function (a few
also as real ``python -m`` processes, which must say the same)."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from raylab.driver.outputs import hold_run_dir
from tests.cli.catalogue import CASES, SUBPROCESS, Case
from tests.cli.inprocess import run_cli
from tests.conftest import make_config


@pytest.fixture(scope="module")
def paths(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    """The placeholder paths of the catalogue (its docstring); {live} held, as a run training there holds it."""
    root = tmp_path_factory.mktemp("catalogue")
    run, bad, empty, live = root / "run", root / "bad", root / "empty", root / "live"
    cfg = make_config(root / "scratch", "env=fake")
    for held in (run, live):
        (held / "checkpoints").mkdir(parents=True)
        (held / "config.yaml").write_text(yaml.safe_dump(cfg.to_dict()))
        (held / "checkpoints" / "final.pt").write_bytes(b"not a checkpoint")
    (bad / "checkpoints").mkdir(parents=True)
    (bad / "config.yaml").write_text("seed: [1\n")
    empty.mkdir()
    (root / "notes.txt").write_text("a plain file\n")
    with hold_run_dir(live):
        yield {
            "file": root / "notes.txt", "run": run, "empty": empty, "bad": bad, "missing": root / "no" / "such",
            "live": live,
        }  # fmt: skip


def argv(case: Case, paths: dict[str, Path], out: Path) -> list[str]:
    places = {f"{{{name}}}": str(path) for name, path in {**paths, "out": out}.items()}
    args = []
    for arg in shlex.split(case.args):  # the placeholders only: a Hydra dict value keeps its braces
        for placeholder, path in places.items():
            arg = arg.replace(placeholder, path)
        args.append(arg)
    if case.cli == "train" and not any(a.startswith("hydra.run.dir=") for a in args):
        args.append(f"hydra.run.dir={out / 'run'}")
    return args


def check_line(case: Case, code: int, stderr: str) -> None:
    assert code == 2, stderr
    assert "Traceback" not in stderr, stderr
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    assert case.expected in lines[0], lines[0]


@pytest.mark.parametrize("case", CASES, ids=[f"{c.cli}:{c.args}" for c in CASES])
def test_bad_input_is_one_line(case: Case, paths: dict[str, Path], tmp_path: Path) -> None:
    before = sorted(p.name for p in paths["run"].rglob("*"))
    code, stderr = run_cli(case.cli, argv(case, paths, tmp_path / "out"))
    check_line(case, code, stderr)
    out = tmp_path / "out"
    assert not (out / "run").exists() and not [p for p in out.rglob("*") if p.is_file()], "outputs left behind"
    assert sorted(p.name for p in paths["run"].rglob("*")) == before


@pytest.mark.parametrize("index", SUBPROCESS, ids=[f"{CASES[i].cli}:{CASES[i].args}" for i in SUBPROCESS])
def test_real_cli_says_the_same(index: int, paths: dict[str, Path], tmp_path: Path) -> None:
    case = CASES[index]
    module = {"train": "raylab.train", "evaluate": "raylab.evaluate"}.get(case.cli, "raylab.bench")
    sub = case.cli.split()[1:]
    args = argv(case, paths, tmp_path / "out")
    env = {**os.environ, "WANDB_MODE": "disabled", "HYDRA_FULL_ERROR": "0"}
    proc = subprocess.run(
        [sys.executable, "-m", module, *sub, *args], capture_output=True, text=True, env=env, timeout=120
    )
    check_line(case, proc.returncode, proc.stderr)
    assert run_cli(case.cli, args) == (proc.returncode, proc.stderr)


def test_catalogue_is_large_and_mostly_new() -> None:
    assert len(CASES) >= 100
    assert sum(case.new for case in CASES) * 2 >= len(CASES)
    assert len({(c.cli, c.args) for c in CASES}) == len(CASES), "a case is listed twice"

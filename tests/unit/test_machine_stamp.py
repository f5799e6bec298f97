"""The commit a benchmark JSON is stamped with (raylab.bench.machine)."""

from __future__ import annotations

from pathlib import Path

import pytest

from raylab.bench.machine import _git_commit

REPO = Path(__file__).resolve().parents[2]


def test_a_tree_without_git_is_stamped_with_the_commit_raylab_commit_names(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # an archive of a commit, as the offline GPU bundle unpacks
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    monkeypatch.setenv("RAYLAB_COMMIT", "a582f36fb02ff75199dcf39a538656103d7d3e11")
    assert _git_commit() == "a582f36"
    monkeypatch.delenv("RAYLAB_COMMIT")
    assert _git_commit() is None


@pytest.mark.skipif(not (REPO / ".git").exists(), reason="a tree without git (an archive, an sdist)")
def test_a_checkout_is_stamped_with_its_own_commit_whatever_raylab_commit_says(monkeypatch):
    monkeypatch.chdir(REPO)
    monkeypatch.setenv("RAYLAB_COMMIT", "0000000")
    stamp = _git_commit()
    assert stamp is not None and not stamp.startswith("0000000")


def _learner_step_cost():
    import importlib.util

    spec = importlib.util.spec_from_file_location("learner_step_cost", REPO / "benchmarks" / "learner_step_cost.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_an_old_tree_outside_git_is_stamped_with_its_commit_file_not_this_trees(tmp_path, monkeypatch):
    """make bench-gpu-ab unpacks the old commit outside the checkout with a .commit file: learner_step_cost
    stamps its rows so, whatever RAYLAB_COMMIT (this tree's) says."""
    commit_of = _learner_step_cost().commit_of
    old = tmp_path / "old"
    old.mkdir()
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    monkeypatch.setenv("RAYLAB_COMMIT", "a582f36fb02ff75199dcf39a538656103d7d3e11")
    assert commit_of(str(old)) == "?"  # no git, no record: unknown, never this tree's commit
    (old / ".commit").write_text("fefcb6398b7a9a1f0e0d6a0b4c1c2d3e4f506172\n")
    assert commit_of(str(old)) == "fefcb63"
    monkeypatch.chdir(old)  # the tree the benchmark runs in: still its own record
    assert commit_of(str(old)) == "fefcb63"


def test_without_a_git_program_the_commit_file_still_names_the_tree(tmp_path, monkeypatch):
    module = _learner_step_cost()

    def no_git(*_args, **_kwargs):
        raise FileNotFoundError("git")

    monkeypatch.setattr(module.subprocess, "run", no_git)  # a bare GPU machine: no git at all
    (tmp_path / ".commit").write_text("fefcb6398b7a9a1f0e0d6a0b4c1c2d3e4f506172\n")
    assert module.commit_of(str(tmp_path)) == "fefcb63"

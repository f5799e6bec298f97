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

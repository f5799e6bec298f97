"""benchmarks/mario_average_probe.py: newest against average weights, checkpoint by checkpoint, from evaluation
JSONs; a checkpoint scored twice with the same weights is refused."""

import json
import shutil

import pytest

from tests.bench import ROOT, load_benchmark

probe = load_benchmark("mario_average_probe")


def _score(directory, name, x_pos):
    (directory / f"{name}.json").write_text(json.dumps({"extras_mean": {"x_pos": x_pos, "flag_get": 0.0}}))


def test_pairs_in_step_order_with_final_last_and_unpaired_files_left_out(tmp_path, capsys):
    _score(tmp_path, "final_newest", 400.0)
    _score(tmp_path, "final_average", 700.0)
    _score(tmp_path, "step_000000020000_newest", 500.0)
    _score(tmp_path, "step_000000020000_average", 450.0)
    _score(tmp_path, "step_000000003000_newest", 300.0)
    _score(tmp_path, "step_000000003000_average", 600.0)
    _score(tmp_path, "step_000000030000_newest", 999.0)  # no average: not a pair
    probe.main(tmp_path)
    lines = capsys.readouterr().out.splitlines()
    assert lines[2:5] == [
        "| step_000000003000 | 300 | 600 | +300 |",
        "| step_000000020000 | 500 | 450 | -50 |",
        "| final | 400 | 700 | +300 |",
    ]
    assert lines[-1] == "average - newest: median +300, ahead at 2 of 3"


def test_a_checkpoint_scored_twice_is_refused(tmp_path):
    _score(tmp_path, "final_newest", 400.0)
    _score(tmp_path, "final_newest-2", 410.0)  # raylab.evaluate's name for a second score of the same weights
    _score(tmp_path, "final_average", 700.0)
    with pytest.raises(SystemExit, match="final is scored twice with weights=newest"):
        probe.main(tmp_path)


def test_the_committed_probe_gives_the_figures_the_docs_quote(tmp_path, capsys):
    shutil.copytree(ROOT / "benchmarks" / "mario_average_probe", tmp_path / "eval")
    probe.main(tmp_path / "eval")
    out = capsys.readouterr().out
    assert "average - newest: median +245, ahead at 6 of 10" in out
    assert "newest: mean 447" in out and "average: mean 673" in out

"""``python -m raylab.bench plot``: a benchmark's PNG redrawn from its JSON alone, titled by what it compares."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from raylab.bench import learn
from raylab.bench.__main__ import main

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.mark.parametrize("name", ["cartpole_dqn_learning", "learner_cuda_dqn", "learner_cpu", "snake_dqn_loop"])
def test_a_committed_json_is_redrawn_beside_itself(tmp_path, name):
    report = tmp_path / f"{name}.json"
    shutil.copy(BENCHMARKS / f"{name}.json", report)
    assert main(["plot", str(report)]) == 0
    assert report.with_suffix(".png").stat().st_size > 10_000


def test_a_kind_without_a_replot_is_refused_in_one_line(tmp_path, capsys):
    report = tmp_path / "x.json"
    report.write_text(json.dumps({"benchmark": "soak"}))
    assert main(["plot", str(report)]) == 2
    assert "has no re-plot" in capsys.readouterr().err
    assert not report.with_suffix(".png").exists()


def test_the_title_names_the_experiment_and_the_variants():
    report = json.loads((BENCHMARKS / "cartpole_dqn_learning.json").read_text())
    assert learn.title(report) == "cartpole_dqn: apex_dqn vs local"
    report = json.loads((BENCHMARKS / "spread_learning.json").read_text())
    assert learn.title(report) == "mpe2.simple_spread_v3 (ppo)"

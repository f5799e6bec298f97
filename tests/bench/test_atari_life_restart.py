"""benchmarks/atari_life_restart.py, tiny: BeamRider's NOOP after a lost life, with EnvPool's FIRE reset alone
(it waits) and with baselines' FIRE then action 2 (the next life starts)."""

from __future__ import annotations

import json

import pytest

from tests.bench import load_benchmark

pytest.importorskip("envpool")


def test_noop_waits_after_a_lost_life_in_beamrider_unless_action_2_follows_the_reset(tmp_path):
    bench = load_benchmark("atari_life_restart")
    out = tmp_path / "restart.json"
    argv = [str(out), "--games", "BeamRider", "--actions", "0", "--patience", "1500"]
    assert bench.main(argv) == 0
    report = json.loads(out.read_text())
    by_variant = {g["variant"]: g for g in report["games"]}
    assert set(by_variant) == {"envpool", "baselines"} and report["variants"] == bench.VARIANTS
    for game in by_variant.values():
        assert game["env_id"] == "BeamRider-v5" and game["actions"] == 9 and len(game["rows"]) == 1
        assert game["rows"][0]["first_lost_life"] > 0
    assert by_variant["envpool"]["waiting_actions"] == [0]
    assert by_variant["envpool"]["rows"][0] | {"first_lost_life": 0, "rewards_before": 0} == {
        "action": 0, "first_lost_life": 0, "rewards_before": 0, "outcome": "waits", "steps": 1500, "plays_on": False,
    }  # fmt: skip
    assert by_variant["baselines"]["waiting_actions"] == []
    idle = by_variant["envpool"]["noop_from_start"]  # BeamRider starts by itself: a policy that never acts
    assert idle["first_lost_life"] > 0 and idle["rewards_before"] == 0 and idle["outcome"] == "waits"
    went_on = by_variant["baselines"]["rows"][0]
    assert went_on["plays_on"] and went_on["outcome"] in ("reward", "life lost") and 0 < went_on["steps"] < 1500

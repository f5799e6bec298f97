"""A saved config (a checkpoint's, a finished run's) that predates a key takes it at its default
(raylab/config/diff.py): a run from before the key existed is the same run while the new one keeps the default,
and a different one where the new run sets it otherwise; a saved config that no longer builds keeps the older
rule (a key it lacks is taken to match)."""

from __future__ import annotations

import json

import pytest

from raylab.config.diff import fill_missing, with_defaults
from raylab.driver.resume import check_compatible
from raylab.errors import ConfigError
from tests.conftest import make_config

MARIO64 = ("+experiment=mario_dqn", "env.resize=[64,64]")


def before_the_key(config: dict, section: str, key: str) -> dict:
    """``config`` as a run written before ``section.key`` existed saved it (through JSON, as checkpoints and
    benchmark_metrics.json keep it)."""
    saved = json.loads(json.dumps(config))
    del saved[section][key]
    return saved


def test_a_key_missing_from_a_saved_config_comes_back_at_its_default_and_nothing_else_moves(tmp_path):
    full = json.loads(json.dumps(make_config(tmp_path, *MARIO64).to_dict()))
    saved = before_the_key(full, "model", "conv_channels")
    assert with_defaults(saved) == full
    assert with_defaults(saved)["model"]["conv_channels"] == [32, 64, 64]
    # the saved values stay as they were, a key only the full config has is added
    assert fill_missing({"a": {"b": 1}}, {"a": {"b": 2, "c": 3}, "d": 4}) == {"a": {"b": 1, "c": 3}, "d": 4}
    # a config that no longer builds (a key removed since) is left alone
    retired = dict(saved, model={**saved["model"], "retired": 1})
    assert with_defaults(retired) is retired


def test_resume_refuses_a_network_the_checkpoint_predates_and_takes_one_at_the_default(tmp_path):
    old = before_the_key(make_config(tmp_path, *MARIO64).to_dict(), "model", "conv_channels")
    check_compatible(old, make_config(tmp_path, *MARIO64).to_dict(), tmp_path)  # the network it trained
    narrow = make_config(tmp_path, *MARIO64, "model.conv_channels=[16,32,32]").to_dict()
    with pytest.raises(
        ConfigError, match=r"cannot resume from .*: model\.conv_channels was \[32, 64, 64\], now \[16, 32, 32\]: "
    ):
        check_compatible(old, narrow, tmp_path)
    # a checkpoint whose config no longer builds: a key it lacks still matches, a key it holds still differs
    retired = dict(old, model={**old["model"], "retired": 1})
    with pytest.raises(ConfigError, match=r"model\.retired was 1, now None"):
        check_compatible(retired, narrow, tmp_path)

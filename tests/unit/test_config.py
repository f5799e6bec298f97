"""resolve(): the one validation boundary. Every message is one line and names the fix."""

import dataclasses

import pytest

from raylab.config import DQNConfig, RunConfig, resolve
from raylab.errors import ConfigError
from tests.conftest import make_config


def error(tmp_path, *overrides) -> str:
    with pytest.raises(ConfigError) as info:
        make_config(tmp_path, *overrides)
    message = str(info.value)
    assert "\n" not in message
    return message


def test_default_config_resolves_to_frozen_dataclasses(tmp_path):
    cfg = make_config(tmp_path)
    assert isinstance(cfg, RunConfig) and isinstance(cfg.algo, DQNConfig)
    assert cfg.model.hidden_sizes == (256, 256) and cfg.run_dir == str(tmp_path)
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.seed = 3  # type: ignore[misc]


def test_round_trip_through_to_dict(tmp_path):
    cfg = make_config(tmp_path, "+experiment=cartpole_dqn")
    assert resolve(cfg.to_dict(), run_dir=str(tmp_path)) == cfg


def test_unknown_key_suggests_the_right_one():
    with pytest.raises(ConfigError, match=r"unknown config key 'learner.lrr': did you mean 'learner.lr'\?"):
        resolve({"learner": {"lrr": 0.1}})


def test_wrong_types_name_the_key():
    with pytest.raises(ConfigError, match=r"learner\.batch_size must be an integer"):
        resolve({"learner": {"batch_size": "many"}})
    with pytest.raises(ConfigError, match=r"model\.dueling must be true or false"):
        resolve({"model": {"dueling": "yes"}})
    with pytest.raises(ConfigError, match=r"learner\.device must be one of auto, cpu, cuda"):
        resolve({"learner": {"device": "tpu"}})
    assert resolve({"stop": {"env_steps": "1e5"}}).stop.env_steps == 100_000


@pytest.mark.parametrize("workers", ["0", "-2"])
def test_non_positive_workers(tmp_path, workers):
    assert "set topology.num_workers=1 or more" in error(tmp_path, f"topology.num_workers={workers}")


def test_unknown_env_id_suggests_registered_ids(tmp_path):
    assert "did you mean CartPole-v1" in error(tmp_path, "env.id=CartPol-v1")


def test_unknown_env_family(tmp_path):
    assert "choose one of gymnasium, custom, mario, procgen, atari, snake, snake_arena, pettingzoo, fake" in error(
        tmp_path, "env.family=nes"
    )


def test_stop_conditions_that_can_never_trigger(tmp_path):
    msg = error(tmp_path, "stop.env_steps=null", "stop.seconds=null", "stop.mean_return=null")
    assert "no stop condition" in msg
    msg = error(tmp_path, "+experiment=cartpole_dqn", "stop.mean_return=600")
    assert "can never trigger" in msg and "returns at most 500" in msg
    msg = error(tmp_path, "stop.mean_return=100", "eval.every_seconds=null")
    assert "periodic evaluation is off" in msg
    assert "stop.env_steps must be > 0" in error(tmp_path, "stop.env_steps=0")
    assert "stop.seconds must be > 0" in error(tmp_path, "stop.seconds=-5")


def test_cross_field_checks(tmp_path):
    assert "raise replay.min_size" in error(tmp_path, "replay.min_size=10", "learner.batch_size=64")
    assert "exceeds replay.capacity" in error(tmp_path, "replay.min_size=1000", "replay.capacity=100")
    assert "choose one of local, apex_dqn" in error(tmp_path, "topology.name=ring")


def test_stop_on_training_return_needs_a_full_window_of_episodes():
    from raylab.config import StopConfig
    from raylab.driver.stop import StopCondition

    stop = StopCondition(StopConfig(env_steps=None, seconds=None, train_return=475))
    assert stop.reason(0, 1.0, None, [500.0] * 99) is None  # 99 episodes: not a full window yet
    assert stop.reason(0, 1.0, None, [0.0] * 10 + [500.0] * 90) is None  # mean 450
    reason = stop.reason(0, 1.0, None, [450.0] * 50 + [500.0] * 50)
    assert reason is not None and reason.startswith("training return 475.0 (last 100 episodes)")


def test_stop_on_a_greedy_evaluation_episode_value():
    """stop.eval_extras={flag_get: 0.8}: Mario's greedy flag rate; every named value must reach its threshold."""
    import numpy as np

    from raylab.config import StopConfig
    from raylab.driver.stop import StopCondition
    from raylab.types import EvalResult

    def evaluation(flags: list[int], x_pos: float = 3161.0) -> EvalResult:
        n = len(flags)
        extras = {"flag_get": np.array(flags, float), "x_pos": np.full(n, x_pos)}
        return EvalResult(1, np.zeros(n), np.ones(n), extras=extras)

    stop = StopCondition(StopConfig(env_steps=None, seconds=None, eval_extras={"flag_get": 0.8}))
    assert stop.reason(0, 1.0, evaluation([1] * 7 + [0] * 3)) is None
    assert (
        stop.reason(0, 1.0, evaluation([1] * 8 + [0] * 2)) == "eval flag_get mean 0.8 >= stop.eval_extras.flag_get=0.8"
    )
    assert stop.reason(0, 1.0, EvalResult(1, np.zeros(3), np.ones(3))) is None  # no such values reported
    both = StopCondition(StopConfig(env_steps=None, seconds=None, eval_extras={"flag_get": 0.8, "x_pos": 3000}))
    assert both.reason(0, 1.0, evaluation([1] * 10, x_pos=2000.0)) is None
    assert both.reason(0, 1.0, evaluation([1] * 10)) is not None


def test_an_episode_value_the_env_does_not_report_is_refused(tmp_path):
    assert error(tmp_path, "stop.eval_extras={flag_get: 0.8}") == (
        "stop.eval_extras.flag_get can never trigger: env=gymnasium episodes have no value 'flag_get'; they report "
        "none: remove stop.eval_extras"
    )
    assert error(tmp_path, "env=snake", "stop.eval_extras={flag_get: 0.8}") == (
        "stop.eval_extras.flag_get can never trigger: env=snake episodes have no value 'flag_get'; name one of "
        "snake_length, score or remove stop.eval_extras"
    )
    assert "periodic evaluation is off" in error(tmp_path, "env=snake", "stop.eval_extras={score: 2}",
                                                 "eval.every_seconds=null")  # fmt: skip


def test_a_training_return_above_the_env_maximum_is_refused(tmp_path):
    assert "stop.train_return=600 can never trigger" in error(tmp_path, "stop.train_return=600")


def test_raylab_config_exports_every_name_imported_from_it():
    import ast
    from pathlib import Path

    import raylab.config

    root = Path(__file__).resolve().parents[2]
    imported = set()
    for folder in ("raylab", "tests", "benchmarks"):
        for path in (root / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.ImportFrom) and node.module == "raylab.config" and not node.level:
                    imported |= {alias.name for alias in node.names}
    exported = set(raylab.config.__all__)
    assert imported <= exported, f"add to raylab.config.__all__: {sorted(imported - exported)}"
    assert all(hasattr(raylab.config, name) for name in exported)
    assert {"TOPOLOGY_ALGOS", "AlgoConfig", "EnvConfig", "EpsilonConfig", "RunConfig", "resolve"} <= exported

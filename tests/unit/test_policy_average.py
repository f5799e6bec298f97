"""learner.average_rate: the Learner's moving average of its policy's weights (raylab.learner.publish
.PolicyAverage), moved once a call by 1 - (1 - rate)^steps, published as Weights of the current version, kept
through a checkpoint, and the same for the fused NumPy update and autograd."""

import numpy as np
import pytest

from raylab.config import DQNConfig
from tests.factories import discrete_spaces, dqn_learner, replay_batch

SPACES = discrete_spaces(3, 2)
RATE = 0.1


def make_learner(**opts):
    return dqn_learner(SPACES, hidden=(8,), algo=DQNConfig(), lr=1e-2, publish_every=2, **opts)


def batches(calls: int, per_call: int) -> list[list]:
    return [[replay_batch(SPACES, 16, 100 * c + i, discount=0.9) for i in range(per_call)] for c in range(calls)]


@pytest.mark.parametrize("fused", [False, True], ids=["autograd", "fused"])
def test_the_average_follows_the_closed_form_over_calls_of_several_steps(fused):
    learner = make_learner(average_rate=RATE, fused=fused)
    assert (learner._fused is not None) == fused
    expected = {k: v.copy() for k, v in learner.get_weights().params.items()}
    assert all(np.array_equal(expected[k], v) for k, v in learner.get_eval_weights().params.items())  # starts equal
    for steps, call in zip((3, 1, 5), batches(3, 5), strict=False):
        learner.update_many(call[:steps])
        newest = learner.get_weights().params
        move = 1.0 - (1.0 - RATE) ** steps
        expected = {k: expected[k] + move * (newest[k] - expected[k]) for k in expected}
    got = learner.get_eval_weights()
    assert got.version == learner.version == 9
    for k in expected:
        np.testing.assert_allclose(got.params[k], expected[k], rtol=1e-5, atol=1e-6)
    assert any(not np.allclose(got.params[k], newest[k]) for k in expected)  # it lags the newest


def test_without_a_rate_evaluations_get_the_newest_weights():
    learner = make_learner()
    learner.update_many(batches(1, 3)[0])
    newest, evaluated = learner.get_weights(), learner.get_eval_weights()
    assert newest.version == evaluated.version == 3
    assert all(np.array_equal(newest.params[k], evaluated.params[k]) for k in newest.params)


def test_a_checkpoint_keeps_the_average_and_one_without_it_restarts_it_from_the_weights():
    learner = make_learner(average_rate=RATE)
    for call in batches(2, 4):
        learner.update_many(call)
    state = learner.state_dict()
    resumed = make_learner(average_rate=RATE)
    resumed.load_state_dict(state)
    for k, v in learner.get_eval_weights().params.items():
        np.testing.assert_array_equal(resumed.get_eval_weights().params[k], v)
    plain = make_learner()  # a run without an average wrote this checkpoint
    plain.update_many(batches(1, 2)[0])
    started = make_learner(average_rate=RATE)
    started.load_state_dict(plain.state_dict())
    for k, v in plain.get_weights().params.items():
        np.testing.assert_array_equal(started.get_eval_weights().params[k], v)


def test_a_periodic_checkpoint_is_scored_by_its_average_unless_the_newest_is_asked_for(tmp_path):
    from raylab.evaluate import policy_weights

    learner = make_learner(average_rate=RATE)
    for call in batches(2, 4):
        learner.update_many(call)
    state = {"learner": learner.state_dict()}  # what checkpoints/step_*.pt holds
    path = tmp_path / "step_100.pt"
    average, newest = learner.get_eval_weights().params, learner.get_weights().params
    assert any(not np.array_equal(average[k], newest[k]) for k in average)
    for which, want in (("policy", average), ("average", average), ("newest", newest)):
        got = policy_weights(state, path, None, which)
        assert got.version == learner.version
        assert all(np.array_equal(got.params[k], want[k]) for k in want), which


def test_a_network_with_running_statistics_is_refused_naming_the_fix():
    from raylab.config import ModelConfig
    from raylab.errors import ConfigError
    from raylab.types import EnvSpaces

    frames = EnvSpaces((4, 84, 84), np.dtype(np.uint8), 6, "Discrete(6)", frames_per_step=4)
    model = ModelConfig(encoder="nature_cnn", hidden_sizes=(32,), norm="batch")
    with pytest.raises(ConfigError, match=r"keeps running statistics \(.*model.norm=batch\): remove learner.average"):
        dqn_learner(frames, model=model, average_rate=RATE)
    dqn_learner(frames, model=model)  # without the average it builds

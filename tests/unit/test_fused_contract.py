"""What every fused NumPy update promises, whichever algorithm it writes out (DQN: test_dqn_fused.py; PPO and
APPO: test_ppo_fused.py): it trains as autograd does at any MLP depth and after a changed learning rate, it
publishes copies of the parameters it trained, its checkpoints and autograd's are interchangeable both ways,
and a model it does not implement falls back under auto and is refused in one line under true. Each algorithm's
module gives its learners and data as a ``FusedKit``; the tests here run once per kit."""

from __future__ import annotations

import numpy as np
import pytest

from raylab.errors import ConfigError
from tests.unit import test_dqn_fused, test_ppo_fused
from tests.unit.fused_kit import FusedKit

KITS = {"dqn": test_dqn_fused.KIT, "ppo": test_ppo_fused.KIT, "appo": test_ppo_fused.APPO_KIT}


@pytest.fixture(params=list(KITS), ids=list(KITS))
def kit(request) -> FusedKit:
    return KITS[request.param]


@pytest.mark.parametrize("hidden", [(), (16,), (8, 16, 8)], ids=["linear", "one_hidden", "three_hidden"])
def test_any_depth_of_mlp(kit, hidden):
    kit.train_both(kit.make(hidden=hidden, fused=True), kit.make(hidden=hidden, fused=False), kit.calls(3))


def test_a_changed_learning_rate_is_followed(kit):
    fused, ref = kit.make(fused=True), kit.make(fused=False)
    for learner in (fused, ref):
        learner.optimizer.param_groups[0]["lr"] = 1e-4  # what an lr schedule does
    kit.train_both(fused, ref, kit.calls(3))


def test_published_weights_are_copies_of_the_trained_parameters(kit):
    learner = kit.make(fused=True)
    before = learner.get_weights()
    stats = learner.update_many(kit.calls(1)[0])
    after = learner.get_weights()
    assert stats.published and after.version == stats.version > before.version
    live = {name: value.numpy() for name, value in learner.objective.policy_module().state_dict().items()}
    assert after.params.keys() == live.keys()
    for name, value in live.items():
        np.testing.assert_array_equal(after.params[name], value)
        assert not np.shares_memory(after.params[name], value), name  # a copy, not the live buffer
    assert any(not np.array_equal(after.params[k], before.params[k]) for k in after.params)  # it trained


@pytest.mark.parametrize("direction", ["fused_to_autograd", "autograd_to_fused"])
def test_checkpoints_are_interchangeable(kit, direction):
    source = kit.make(fused=direction == "fused_to_autograd")
    data = kit.calls(3)
    source.update_many(data[0])
    checkpoint = source.state_dict()
    fused, ref = kit.make(fused=True), kit.make(fused=False)
    fused.load_state_dict(checkpoint)
    ref.load_state_dict(checkpoint)
    assert fused.version == ref.version == source.version
    kit.assert_same(fused, ref)
    kit.train_both(fused, ref, data[1:])


def test_what_is_not_fused_falls_back_under_auto_and_is_refused_under_true(kit):
    """Models the fused step does not implement; the Learner's own options: test_learner_objectives.py."""
    for opts, reason in kit.unfused.values():
        learner = kit.make(**dict(opts), fused="auto")
        assert not learner.fused and reason in learner.fused_reason
        with pytest.raises(ConfigError, match=r"learner.fused=true, but .*: set learner.fused=auto or false"):
            kit.make(**dict(opts), fused=True)

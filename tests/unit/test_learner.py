"""Learner and DQN objective: updates, versions, publishing, target updates, checkpoints."""

import numpy as np
import pytest
import torch

from raylab.config import DQNConfig
from raylab.errors import RaylabError
from raylab.learner import load_checkpoint, save_checkpoint
from tests.factories import discrete_spaces, dqn_learner, replay_batch

SPACES = discrete_spaces(3, 2)


def make_learner(**algo):
    return dqn_learner(SPACES, hidden=(8,), algo=DQNConfig(**algo), lr=1e-2, publish_every=2)


def batch(n=16, seed=0):
    return replay_batch(SPACES, n, seed, discount=0.9)


def test_update_changes_weights_and_counts_versions():
    learner = make_learner()
    before = learner.get_weights()
    metrics = learner.update(batch())
    after = learner.get_weights()
    assert set(metrics) >= {"loss", "td_error", "q", "grad_norm"}
    assert (before.version, after.version) == (0, 1)
    assert any(not np.allclose(before.params[k], after.params[k]) for k in before.params)


def test_repeated_updates_fit_a_fixed_batch():
    learner = make_learner(target_tau=1.0, target_update_every=1000)
    b = batch()
    first = learner.update(b)["loss"]
    for _ in range(200):
        last = learner.update(b)["loss"]
    assert last < 0.1 * first


def test_update_many_reports_publishes_every_k_updates():
    learner = make_learner()
    stats = learner.update_many([batch(seed=i) for i in range(3)])
    assert (stats.updates, stats.samples, stats.version, stats.published) == (3, 48, 3, True)
    assert learner.update_many([batch()]).published  # version 3 -> 4 reaches a multiple of k=2
    assert not learner.update_many([batch()]).published  # 4 -> 5 does not
    assert not learner.update_many([]).published


def test_polyak_moves_the_target_by_tau():
    learner = make_learner(target_tau=0.25, target_update_every=1)
    dqn = learner.objective
    target_before = [p.clone() for p in dqn.target_net.parameters()]
    learner.update(batch())
    for old, online, new in zip(target_before, dqn.q_net.parameters(), dqn.target_net.parameters(), strict=True):
        torch.testing.assert_close(new, old + 0.25 * (online - old))


def test_hard_target_copy_every_n_updates():
    learner = make_learner(target_tau=1.0, target_update_every=3)
    dqn = learner.objective
    initial = [p.clone() for p in dqn.target_net.parameters()]
    learner.update(batch())
    learner.update(batch())
    for a, b in zip(initial, dqn.target_net.parameters(), strict=True):
        torch.testing.assert_close(a, b)
    learner.update(batch())
    for a, b in zip(dqn.q_net.parameters(), dqn.target_net.parameters(), strict=True):
        torch.testing.assert_close(a, b)


def test_checkpoint_round_trip_restores_training_state(tmp_path):
    learner = make_learner()
    for i in range(3):
        learner.update(batch(seed=i))
    path = save_checkpoint(tmp_path / "ck.pt", {"learner": learner.state_dict()})
    restored = make_learner()
    restored.load_state_dict(load_checkpoint(path)["learner"])
    assert restored.version == 3
    # identical state -> identical next update
    m1, m2 = learner.update(batch(seed=9)), restored.update(batch(seed=9))
    assert m1["loss"] == pytest.approx(m2["loss"])
    for k, v in learner.get_weights().params.items():
        np.testing.assert_array_equal(v, restored.get_weights().params[k])


def test_corrupt_checkpoint_is_a_one_line_error(tmp_path):
    bad = tmp_path / "bad.pt"
    bad.write_bytes(b"not a checkpoint")
    with pytest.raises(RaylabError, match="corrupt") as err:
        load_checkpoint(bad)
    assert "\n" not in str(err.value)
    with pytest.raises(RaylabError, match="does not exist"):
        load_checkpoint(tmp_path / "missing.pt")


def test_checkpoint_write_is_atomic(tmp_path, monkeypatch):
    path = save_checkpoint(tmp_path / "ck.pt", {"a": torch.ones(2)})

    def broken_save(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(torch, "save", broken_save)
    with pytest.raises(OSError):
        save_checkpoint(path, {"a": torch.zeros(2)})
    torch.testing.assert_close(load_checkpoint(path)["a"], torch.ones(2))
    assert [p.name for p in tmp_path.iterdir()] == ["ck.pt"]

"""Ape-X epsilons, their annealing, and the epsilon-greedy policy."""

import numpy as np
import pytest
import torch

from raylab.algos.dqn import EpsilonGreedyPolicy, EpsilonSchedule, apex_epsilons
from raylab.config import ModelConfig
from raylab.models import build_q_network
from raylab.types import EnvSpaces, Weights

SPACES = EnvSpaces((2,), np.dtype(np.float32), 2, "Discrete(2)")


def test_apex_ladder_matches_the_paper():
    eps = apex_epsilons(8, base=0.4, alpha=7.0)
    assert eps[0] == pytest.approx(0.4)
    assert eps[-1] == pytest.approx(0.4**8)
    assert eps[3] == pytest.approx(0.4 ** (1 + 7 * 3 / 7))
    assert np.all(np.diff(eps) < 0)
    np.testing.assert_allclose(apex_epsilons(1, 0.3), [0.3])


def test_schedule_anneals_from_initial_to_each_slot_value():
    final = np.array([0.4, 0.1])
    sched = EpsilonSchedule(final, initial=1.0, anneal_env_steps=1000, steps_scale=2)
    np.testing.assert_allclose(sched(0), [1.0, 1.0])
    np.testing.assert_allclose(sched(250), [0.7, 0.55])  # 250 local steps x 2 workers = halfway
    np.testing.assert_allclose(sched(10_000), final)
    np.testing.assert_allclose(EpsilonSchedule(final)(0), final)


def greedy_net():
    net = build_q_network(ModelConfig(hidden_sizes=(4,)), SPACES)
    with torch.no_grad():
        for p in net.parameters():
            p.zero_()
        net.head.q.bias.copy_(torch.tensor([0.0, 1.0]))  # action 1 is always greedy
    return net


def test_zero_epsilon_is_greedy_and_one_is_uniform():
    obs = np.zeros((4000, 2), np.float32)
    greedy = EpsilonGreedyPolicy(greedy_net(), EpsilonSchedule(np.zeros(4000)), 2, seed=0)
    assert (greedy.act(obs) == 1).all()
    uniform = EpsilonGreedyPolicy(greedy_net(), EpsilonSchedule(np.ones(4000)), 2, seed=0)
    assert 0.45 < (uniform.act(obs) == 0).mean() < 0.55


def test_weights_load_only_when_newer():
    policy = EpsilonGreedyPolicy(greedy_net(), EpsilonSchedule(np.zeros(1)), 2, seed=0)
    params = {k: v.numpy().copy() for k, v in greedy_net().state_dict().items()}
    assert policy.set_weights(Weights(3, params))
    params["head.q.bias"][:] = [5.0, 0.0]
    assert not policy.set_weights(Weights(3, params))  # same version: no copy
    assert policy.act(np.zeros((1, 2), np.float32))[0] == 1
    readonly = {k: v.copy() for k, v in params.items()}
    for v in readonly.values():
        v.flags.writeable = False  # as they arrive from Ray's object store
    assert policy.set_weights(Weights(4, readonly))
    assert policy.version == 4 and policy.act(np.zeros((1, 2), np.float32))[0] == 0

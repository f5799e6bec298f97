"""GAE, V-trace and the PPO loss against hand-computed values and against each other."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from raylab.algos.advantages import gae, vtrace
from raylab.algos.ppo import ppo_loss
from raylab.algos.returns import bootstrapped_returns
from raylab.models.distributions import Categorical


def col(*values, dtype=np.float32):
    return np.array(values, dtype=dtype)[:, None]


NO = col(0, 0, 0, dtype=bool)


def test_gae_matches_a_hand_computed_example():
    adv, ret = gae(col(1, 1, 1), col(0.5, 0.4, 0.3), col(0.4, 0.3, 0.2), NO, NO, gamma=0.9, lam=0.8)
    # deltas 0.86, 0.87, 0.88; A2 = .88, A1 = .87 + .72 * .88, A0 = .86 + .72 * A1
    a1 = 0.87 + 0.72 * 0.88
    np.testing.assert_allclose(adv[:, 0], [0.86 + 0.72 * a1, a1, 0.88], rtol=1e-6)
    np.testing.assert_allclose(ret[:, 0], adv[:, 0].numpy() + np.array([0.5, 0.4, 0.3]), rtol=1e-6)


def test_gae_stops_at_episode_ends():
    terminated, truncated = col(0, 1, 0, dtype=bool), col(1, 0, 0, dtype=bool)
    adv, _ = gae(col(1, 1, 1), col(0, 0, 0), col(5, 7, 2), terminated, truncated, gamma=0.5, lam=1.0)
    # t0 truncated: 1 + .5 * V(final) = 3.5, nothing from t1; t1 terminal: 1; t2: 1 + .5 * 2 = 2
    np.testing.assert_allclose(adv[:, 0], [3.5, 1.0, 2.0])


def random_segment(seed: int, steps: int = 12, envs: int = 3):
    rng = np.random.default_rng(seed)
    rewards = rng.normal(size=(steps, envs)).astype(np.float32)
    values = rng.normal(size=(steps, envs)).astype(np.float32)
    terminated = rng.random((steps, envs)) < 0.15
    truncated = (rng.random((steps, envs)) < 0.1) & ~terminated
    final_values = rng.normal(size=(steps, envs)).astype(np.float32)
    last = rng.normal(size=envs).astype(np.float32)
    next_values = np.concatenate([values[1:], last[None]])
    next_values = np.where(truncated, final_values, next_values).astype(np.float32)
    bootstrap = np.where(truncated, final_values, 0.0).astype(np.float32)
    bootstrap[-1] = np.where(truncated[-1], final_values[-1], last)
    return rewards, values, next_values, terminated, truncated, bootstrap


@pytest.mark.parametrize("seed", range(5))
def test_gae_with_lambda_one_is_the_bootstrapped_return(seed):
    rewards, values, next_values, terminated, truncated, bootstrap = random_segment(seed)
    _, returns = gae(rewards, values, next_values, terminated, truncated, gamma=0.9, lam=1.0)
    expected = bootstrapped_returns(rewards, terminated, truncated, bootstrap, 0.9)
    np.testing.assert_allclose(returns, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("seed", range(5))
def test_on_policy_vtrace_is_gae_with_lambda_one(seed):
    rewards, values, next_values, terminated, truncated, _ = random_segment(seed)
    logp = np.log(np.random.default_rng(seed).uniform(0.1, 1.0, rewards.shape)).astype(np.float32)
    out = vtrace(logp, logp, rewards, values, next_values, terminated, truncated, gamma=0.9)
    adv, returns = gae(rewards, values, next_values, terminated, truncated, gamma=0.9, lam=1.0)
    np.testing.assert_allclose(out.vs, returns, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out.pg_advantages, adv, rtol=1e-5, atol=1e-5)


def test_vtrace_clips_importance_weights_as_in_the_paper():
    behaviour = np.log(col(0.5, 0.5))
    target = np.log(col(1.0, 0.25))  # ratios 2 (clipped to 1) and 0.5
    out = vtrace(behaviour, target, col(1, 2), col(0, 0), col(0, 10), col(0, 0, dtype=bool), col(0, 0, dtype=bool), 0.5)
    # delta1 = .5 * (2 + .5 * 10) = 3.5; delta0 = 1 * 1; v0 - V0 = 1 + .5 * c0(=1) * 3.5
    np.testing.assert_allclose(out.vs[:, 0], [2.75, 3.5], rtol=1e-6)
    # pg: t1 = min(1, .5) * (2 + .5 * 10) = 3.5; t0 = 1 * (1 + .5 * (V1 + 3.5))
    np.testing.assert_allclose(out.pg_advantages[:, 0], [2.75, 3.5], rtol=1e-6)
    np.testing.assert_allclose(out.rhos[:, 0], [2.0, 0.5], rtol=1e-6)


def test_vtrace_corrections_do_not_cross_a_truncation():
    behaviour = target = np.zeros((2, 1), np.float32)
    truncated = col(1, 0, dtype=bool)
    out = vtrace(behaviour, target, col(1, 1), col(0, 0), col(4, 6), col(0, 0, dtype=bool), truncated, 0.5)
    np.testing.assert_allclose(out.vs[:, 0], [1 + 0.5 * 4, 1 + 0.5 * 6])


def test_ppo_loss_matches_hand_computed_terms():
    logits = torch.zeros(2, 2, requires_grad=True)  # new probs 0.5 everywhere
    old_log_probs = torch.log(torch.tensor([0.25, 0.5]))  # ratios 2.0 and 1.0
    advantages = torch.tensor([1.0, -1.0])
    values, old_values, returns = torch.tensor([1.0, 0.0]), torch.tensor([0.0, 0.0]), torch.tensor([3.0, 0.0])
    d = Categorical(2)
    out = ppo_loss(
        d.log_prob(logits, torch.tensor([0, 1])), d.entropy(logits), values, old_log_probs, old_values, advantages,
        returns,
        clip=0.2, value_clip=0.5, value_coef=0.5, entropy_coef=0.01, normalize_advantages=False,
    )  # fmt: skip
    # surrogate: min(2 * 1, 1.2 * 1) = 1.2 and min(1 * -1, 1 * -1) = -1 -> policy loss -(1.2 - 1) / 2
    assert out.policy_loss.item() == pytest.approx(-0.1)
    # value: max((1-3)^2, (0 + clip(1, -.5, .5) - 3)^2 = 6.25) = 6.25 and 0 -> 0.5 * 6.25 / 2
    assert out.value_loss.item() == pytest.approx(1.5625)
    assert out.entropy.item() == pytest.approx(np.log(2))
    assert out.clip_fraction.item() == pytest.approx(0.5)
    assert out.approx_kl.item() == pytest.approx(((2 - 1) - np.log(2)) / 2)
    assert out.loss.item() == pytest.approx(-0.1 + 0.5 * 1.5625 - 0.01 * np.log(2))


def test_ppo_without_value_clipping_is_half_squared_error_and_advantages_are_normalized():
    d, logits = Categorical(2), torch.zeros(3, 2)
    new = (d.log_prob(logits, torch.zeros(3)), d.entropy(logits))
    kwargs = dict(clip=0.2, value_clip=None, value_coef=1.0, entropy_coef=0.0)
    a = ppo_loss(*new, torch.zeros(3), torch.log(torch.full((3,), 0.5)), torch.zeros(3),
                 torch.tensor([1.0, 2.0, 3.0]), torch.tensor([1.0, 2.0, 2.0]), **kwargs)  # fmt: skip
    b = ppo_loss(*new, torch.zeros(3), torch.log(torch.full((3,), 0.5)), torch.zeros(3),
                 torch.tensor([10.0, 20.0, 30.0]), torch.tensor([1.0, 2.0, 2.0]), **kwargs)  # fmt: skip
    assert a.value_loss.item() == pytest.approx(0.5 * (1 + 4 + 4) / 3)
    assert a.policy_loss.item() == pytest.approx(b.policy_loss.item(), abs=1e-6)  # scale-free after normalizing

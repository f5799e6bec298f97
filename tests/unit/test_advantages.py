"""The torch GAE, V-trace and crash fix-up (raylab.algos.advantages) against the NumPy ones they replaced
(tests/unit/numpy_advantages.py), on random segments with episode ends, truncations and crashes."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from raylab.algos import advantages
from tests.unit import numpy_advantages as reference


def segment(seed: int, steps: int = 17, envs: int = 5):
    rng = np.random.default_rng(seed)
    rewards = rng.normal(size=(steps, envs)).astype(np.float32)
    values = rng.normal(size=(steps, envs)).astype(np.float32)
    next_values = rng.normal(size=(steps, envs)).astype(np.float32)
    terminated = rng.random((steps, envs)) < 0.1
    truncated = (rng.random((steps, envs)) < 0.1) & ~terminated
    behaviour = np.log(rng.uniform(0.05, 1.0, (steps, envs))).astype(np.float32)
    target = np.log(rng.uniform(0.05, 1.0, (steps, envs))).astype(np.float32)
    valid = rng.random((steps, envs)) > 0.1
    return rewards, values, next_values, terminated, truncated, behaviour, target, valid


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("lam", [0.0, 0.95, 1.0])
def test_gae_equals_the_numpy_one(seed, lam):
    rewards, values, next_values, terminated, truncated, *_ = segment(seed)
    adv, ret = advantages.gae(
        torch.from_numpy(rewards), torch.from_numpy(values), torch.from_numpy(next_values),
        torch.from_numpy(terminated), torch.from_numpy(truncated), gamma=0.97, lam=lam,
    )  # fmt: skip
    want_adv, want_ret = reference.gae(rewards, values, next_values, terminated, truncated, 0.97, lam)
    assert adv.dtype == torch.float32 and adv.shape == want_adv.shape
    np.testing.assert_allclose(adv.numpy(), want_adv, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(ret.numpy(), want_ret, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("bars", [(1.0, 1.0, 1.0), (2.0, 0.5, 1.5)])
@pytest.mark.parametrize("lam", [1.0, 0.9, 0.0])
def test_vtrace_equals_the_numpy_one(seed, bars, lam):
    rewards, values, next_values, terminated, truncated, behaviour, target, _ = segment(seed)
    rho_bar, c_bar, pg_rho_bar = bars
    out = advantages.vtrace(
        behaviour, target, rewards, values, next_values, terminated, truncated, 0.99, rho_bar=rho_bar, c_bar=c_bar,
        pg_rho_bar=pg_rho_bar, lam=lam,
    )  # fmt: skip
    want = reference.vtrace(
        behaviour, target, rewards, values, next_values, terminated, truncated, 0.99, rho_bar=rho_bar, c_bar=c_bar,
        pg_rho_bar=pg_rho_bar, lam=lam,
    )  # fmt: skip
    for name in ("vs", "pg_advantages", "advantages", "rhos"):
        np.testing.assert_allclose(getattr(out, name).numpy(), getattr(want, name), rtol=1e-5, atol=1e-5, err_msg=name)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("lam", [0.0, 0.5, 0.95, 1.0])
def test_vtrace_on_policy_is_gae_with_its_lambda(seed, lam):
    """pi = mu: V-trace's targets are GAE(lam)'s returns and its advantages GAE(lam)'s (rlax's lambda_), across
    terminations and truncations."""
    rewards, values, next_values, terminated, truncated, behaviour, _, _ = segment(seed)
    assert terminated.any() and truncated.any(), "the segment ends episodes both ways"
    out = advantages.vtrace(behaviour, behaviour, rewards, values, next_values, terminated, truncated, 0.97, lam=lam)
    adv, ret = advantages.gae(rewards, values, next_values, terminated, truncated, gamma=0.97, lam=lam)
    np.testing.assert_allclose(out.vs.numpy(), ret.numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out.advantages.numpy(), adv.numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out.pg_advantages.numpy(), adv.numpy(), rtol=1e-5, atol=1e-5)


def test_vtrace_lambda_shortens_the_trace_off_policy():
    """Off-policy, a smaller lam cuts more of the correction that flows back: at lam = 0 the target is the
    one-step rho-weighted TD target, whatever follows."""
    rewards, values, next_values, terminated, truncated, behaviour, target, _ = segment(3)
    out = advantages.vtrace(behaviour, target, rewards, values, next_values, terminated, truncated, 0.99, lam=0.0)
    rho = np.minimum(1.0, np.exp(target - behaviour))
    discounts = np.where(terminated, 0.0, 0.99)
    want = values + rho * (rewards + discounts * next_values - values)
    np.testing.assert_allclose(out.vs.numpy(), want, rtol=1e-5, atol=1e-5)
    one_step = rewards + discounts * next_values - values  # the policy gradient's too: q_s = V(x_{s+1})
    np.testing.assert_allclose(out.advantages.numpy(), one_step, rtol=1e-5, atol=1e-5)
    full = advantages.vtrace(behaviour, target, rewards, values, next_values, terminated, truncated, 0.99, lam=1.0)
    assert not np.allclose(full.vs.numpy(), want, atol=1e-3), "at lam = 1 the later corrections flow back"


@pytest.mark.parametrize("seed", range(8))
def test_crash_fix_up_equals_the_numpy_one(seed):
    _, values, next_values, terminated, truncated, _, _, valid = segment(seed)
    valid[0, 0] = False  # a crash at the first step: nothing before it to fix
    truncated_out, bootstrap_out = advantages.bootstrap_before_crashes(
        valid, terminated, truncated, next_values, values
    )
    want_truncated, want_bootstrap = truncated.copy(), next_values.copy()
    reference.bootstrap_before_crashes(valid, terminated, want_truncated, want_bootstrap, values)
    assert (want_truncated != truncated).any(), "the segment has a crash to fix"
    np.testing.assert_array_equal(truncated_out.numpy(), want_truncated)
    np.testing.assert_array_equal(bootstrap_out.numpy(), want_bootstrap)
    np.testing.assert_array_equal(truncated, segment(seed)[4], err_msg="the inputs are left alone")

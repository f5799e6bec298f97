"""The DQN loss against hand-computed values."""

import pytest
import torch

from raylab.algos.dqn.loss import dqn_loss, quantile_huber_loss

Q = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
ACTIONS = torch.tensor([1, 0])
REWARDS = torch.tensor([1.0, 0.0])
DISCOUNTS = torch.tensor([0.5, 0.0])  # second transition ended in a terminal
NEXT_TARGET = torch.tensor([[10.0, 20.0], [5.0, 6.0]])
NEXT_ONLINE = torch.tensor([[3.0, 1.0], [0.0, 9.0]])


def test_double_dqn_uses_online_argmax_and_target_value():
    out = dqn_loss(Q, ACTIONS, REWARDS, DISCOUNTS, NEXT_TARGET, NEXT_ONLINE, huber_delta=1.0)
    # a* = argmax online = [0, 1]; target values [10, 6]; targets [1 + 0.5*10, 0 + 0*6] = [6, 0]
    # Q(s,a) = [2, 3]; td = [4, -3]; huber(4) = 4 - 0.5, huber(3) = 3 - 0.5
    torch.testing.assert_close(out.q_taken, torch.tensor([2.0, 3.0]))
    torch.testing.assert_close(out.td_error, torch.tensor([4.0, -3.0]))
    assert out.loss.item() == pytest.approx((3.5 + 2.5) / 2)


def test_vanilla_dqn_uses_target_max():
    out = dqn_loss(Q, ACTIONS, REWARDS, DISCOUNTS, NEXT_TARGET, None, huber_delta=1.0)
    # targets [1 + 0.5*20, 0] = [11, 0]; td = [9, -3]
    torch.testing.assert_close(out.td_error, torch.tensor([9.0, -3.0]))
    assert out.loss.item() == pytest.approx((8.5 + 2.5) / 2)


def test_huber_is_quadratic_inside_delta():
    out = dqn_loss(
        torch.tensor([[2.0]]), torch.tensor([0]), torch.tensor([0.5]), torch.tensor([1.0]),
        torch.tensor([[2.0]]), None, huber_delta=1.0,
    )  # fmt: skip
    assert out.loss.item() == pytest.approx(0.5 * 0.5**2)


def test_importance_weights_scale_each_sample():
    out = dqn_loss(Q, ACTIONS, REWARDS, DISCOUNTS, NEXT_TARGET, NEXT_ONLINE, weights=torch.tensor([1.0, 0.0]))
    assert out.loss.item() == pytest.approx(3.5 / 2)


def test_gradient_reaches_only_the_online_q_values():
    q = Q.clone().requires_grad_(True)
    target = NEXT_TARGET.clone().requires_grad_(True)
    dqn_loss(q, ACTIONS, REWARDS, DISCOUNTS, target, None).loss.backward()
    assert target.grad is None
    # d/dQ of mean huber with |td| > delta is -delta * sign(td) / batch, on the taken actions only
    torch.testing.assert_close(q.grad, torch.tensor([[0.0, -0.5], [0.5, 0.0]]))


# -- QR-DQN ---------------------------------------------------------------------------------------------------


def test_one_quantile_is_half_the_huber_loss():
    """With N = 1 (tau = 0.5) the quantile loss is |0.5 - 1{u<0}| H(u) / kappa = H(u) / 2."""
    torch.manual_seed(0)
    q = torch.randn(8, 3, requires_grad=True)
    actions, rewards = torch.randint(0, 3, (8,)), torch.randn(8)
    discounts, next_q = torch.full((8,), 0.9), torch.randn(8, 3)
    huber = dqn_loss(q, actions, rewards, discounts, next_q, huber_delta=1.0)
    quantile = quantile_huber_loss(q.unsqueeze(2), actions, rewards, discounts, next_q.unsqueeze(2), next_q, kappa=1.0)
    torch.testing.assert_close(quantile.loss, huber.loss / 2)
    torch.testing.assert_close(quantile.td_error, huber.td_error)


def test_quantile_regression_recovers_the_quantiles_of_the_return():
    """Atoms trained against sampled returns (discount 0) converge to the return's quantiles at (2i+1)/2N."""
    torch.manual_seed(0)
    n = 8
    atoms = torch.zeros(1, 1, n, requires_grad=True)
    opt = torch.optim.Adam([atoms], lr=0.05)
    for step in range(1500):
        returns = torch.distributions.Exponential(1.0).sample((256,))
        for group in opt.param_groups:
            group["lr"] = 0.05 if step < 1000 else 0.005
        out = quantile_huber_loss(
            atoms.expand(256, 1, n), torch.zeros(256, dtype=torch.long), returns, torch.zeros(256),
            torch.zeros(256, 1, n), torch.zeros(256, 1), kappa=0.01,
        )  # fmt: skip
        opt.zero_grad()
        out.loss.backward()
        opt.step()
    tau = (torch.arange(n) + 0.5) / n
    expected = -torch.log1p(-tau)  # Exponential(1) quantile function
    torch.testing.assert_close(atoms.detach().view(-1), expected, atol=0.08, rtol=0.05)


def test_quantile_loss_weights_scale_each_sample():
    q = torch.randn(4, 2, 5)
    args = (torch.tensor([0, 1, 0, 1]), torch.randn(4), torch.full((4,), 0.5), torch.randn(4, 2, 5), torch.randn(4, 2))
    plain = quantile_huber_loss(q, *args)
    half = quantile_huber_loss(q, *args, weights=torch.full((4,), 0.5))
    torch.testing.assert_close(half.loss, plain.loss / 2)

"""The DQN loss against hand-computed values."""

import pytest
import torch

from raylab.algos.dqn.loss import dqn_loss

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

"""n-step targets against hand-computed values."""

import numpy as np
import pytest

from raylab.algos.returns import n_step_targets


def col(*values):
    return np.array(values, dtype=np.float32)[:, None]


def flags(*values):
    return np.array(values, dtype=bool)[:, None]


def test_two_step_without_episode_end():
    out = n_step_targets(col(1, 2, 3, 4), flags(0, 0, 0, 0), flags(0, 0, 0, 0), gamma=0.5, n=2, num_targets=3)
    np.testing.assert_allclose(out.returns[:, 0], [1 + 0.5 * 2, 2 + 0.5 * 3, 3 + 0.5 * 4])
    np.testing.assert_allclose(out.discounts[:, 0], [0.25, 0.25, 0.25])
    np.testing.assert_array_equal(out.lengths[:, 0], [2, 2, 2])
    assert not out.truncated.any()


def test_terminal_cuts_the_window_and_zeroes_the_discount():
    out = n_step_targets(col(1, 2, 3, 4), flags(0, 1, 0, 0), flags(0, 0, 0, 0), gamma=0.5, n=3, num_targets=2)
    # t=0: r0 + g r1 then the episode ends -> no bootstrap; t=1: only r1, terminal
    np.testing.assert_allclose(out.returns[:, 0], [1 + 0.5 * 2, 2])
    np.testing.assert_allclose(out.discounts[:, 0], [0.0, 0.0])
    np.testing.assert_array_equal(out.lengths[:, 0], [2, 1])


def test_truncation_bootstraps_from_the_final_observation():
    out = n_step_targets(col(1, 2, 3, 4), flags(0, 0, 0, 0), flags(0, 1, 0, 0), gamma=0.5, n=2, num_targets=3)
    np.testing.assert_allclose(out.returns[:, 0], [1 + 0.5 * 2, 2, 3 + 0.5 * 4])
    np.testing.assert_allclose(out.discounts[:, 0], [0.25, 0.5, 0.25])
    np.testing.assert_array_equal(out.lengths[:, 0], [2, 1, 2])
    np.testing.assert_array_equal(out.truncated[:, 0], [True, True, False])


def test_terminal_wins_over_truncation_on_the_same_step():
    out = n_step_targets(col(1, 2), flags(1, 0), flags(1, 0), gamma=0.9, n=2, num_targets=1)
    assert out.discounts[0, 0] == 0.0 and not out.truncated[0, 0]


def test_one_step_is_plain_td():
    out = n_step_targets(col(5, 6), flags(0, 0), flags(0, 0), gamma=0.99, n=1, num_targets=2)
    np.testing.assert_allclose(out.returns[:, 0], [5, 6])
    np.testing.assert_allclose(out.discounts[:, 0], [0.99, 0.99])


def test_envs_are_independent_columns():
    rewards = np.array([[1, 10], [2, 20], [3, 30]], np.float32)
    term = np.array([[0, 1], [0, 0], [0, 0]], bool)
    out = n_step_targets(rewards, term, np.zeros_like(term), gamma=1.0, n=2, num_targets=2)
    np.testing.assert_allclose(out.returns, [[3, 10], [5, 50]])
    np.testing.assert_allclose(out.discounts, [[1, 0], [1, 1]])


def test_too_short_sequence_is_an_error():
    with pytest.raises(ValueError):
        n_step_targets(col(1, 2), flags(0, 0), flags(0, 0), gamma=0.9, n=3, num_targets=1)

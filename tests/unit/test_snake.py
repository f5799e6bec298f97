"""Snake's rules."""

import numpy as np
import pytest

from raylab.envs.snake import SnakeEnv


def test_start_respects_length_and_border():
    for seed in range(50):
        env = SnakeEnv(dim=10, start_length=3, border=3)
        env.reset(seed=seed)
        head = env._body[0]
        assert len(env._body) == 3 and 3 <= head[0] <= 6 and 3 <= head[1] <= 6
        assert env._food not in env._body


def test_eating_grows_and_rewards_then_walls_kill():
    env = SnakeEnv(dim=10, start_length=3, border=3, food_reward=2.0, death_penalty=-5.0)
    env.reset(seed=0)
    head = env._body[0]
    env._heading = 1  # right
    env._food = (head[0], head[1] + 1)
    _, reward, terminated, _, info = env.step(0)
    assert reward == 2.0 and not terminated and info == {"snake_length": 4, "score": 1}
    for _ in range(20):
        _, reward, terminated, _, _ = env.step(0)
        if terminated:
            break
    assert terminated and reward == -5.0


def test_turning_into_itself_dies_but_following_the_tail_does_not():
    env = SnakeEnv(dim=10, start_length=5, border=4)
    env.reset(seed=1)
    env._body.clear()
    env._occupied[:] = False
    for cell in [(5, 5), (5, 4), (6, 4), (6, 5)]:  # head (5,5) heading up; tail at (6,5) just below it
        env._body.append(cell)
        env._occupied[cell] = True
    env._heading, env._food = 2, (0, 0)  # heading down, into the tail's cell, which moves away this step
    _, reward, terminated, _, _ = env.step(0)
    assert not terminated
    env._heading = 0  # now at (6, 5): up is (5, 5), its own neck
    _, reward, terminated, _, _ = env.step(0)
    assert terminated and reward == -1.0


def test_hunger_limit_truncates():
    env = SnakeEnv(dim=20, start_length=1, border=5, hunger_limit=3, observation="features")
    env.reset(seed=0)
    env._food = (0, 0)
    results = [env.step(1 if i % 2 else 2)[3] for i in range(3)]
    assert results == [False, False, True]


@pytest.mark.parametrize("kind", ["grid", "features"])
def test_observations(kind):
    env = SnakeEnv(observation=kind, render_mode="rgb_array")
    obs, _ = env.reset(seed=0)
    assert env.observation_space.contains(obs)
    if kind == "grid":
        assert obs[1].sum() == 255 and obs[2].sum() == 255 and obs[0].sum() == 255 * 3
    else:
        assert obs[3:7].sum() == 1.0
    assert env.render().shape == (160, 160, 3)


def test_features_flag_danger_next_to_a_wall():
    env = SnakeEnv(dim=10, start_length=1, border=0, observation="features")
    env.reset(seed=0)
    env._body.clear()
    env._occupied[:] = False
    env._body.append((0, 5))
    env._occupied[0, 5] = True
    env._heading = 0  # up, facing the top wall
    obs = env._observation()
    np.testing.assert_array_equal(obs[:3], [1.0, 0.0, 0.0])

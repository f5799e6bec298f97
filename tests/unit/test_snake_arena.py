"""The multi-snake arena's rules (raylab/envs/snake_arena.py), no Ray."""

from __future__ import annotations

import numpy as np
import pytest

from raylab.envs.snake import SnakeEnv
from raylab.envs.snake_arena import PLANES, SnakeArena, check_options

UP, RIGHT, DOWN, LEFT = range(4)
STRAIGHT, TURN_LEFT, TURN_RIGHT = range(3)


def arena(**kwargs) -> SnakeArena:
    a = SnakeArena(**{"boards": 1, "num_snakes": 2, "dim": 10, "num_food": 1, **kwargs})
    a.reset()
    return a


def put_food(a: SnakeArena, b: int, cells: list[tuple[int, int]]) -> None:
    a.food[b] = False
    for row, col in cells:
        a.food[b, row + a._r, col + a._r] = True


def test_one_snake_plays_snakes_own_rules_step_for_step():
    """N = 1 is the Snake task: from the same state, the same actions give the same bodies, rewards and ends."""
    rng = np.random.default_rng(0)
    games = deaths = truncations = foods = 0
    for seed in range(200):
        env = SnakeEnv(dim=10, hunger_limit=30, observation="features")
        env.reset(seed=seed)
        a = arena(num_snakes=1, hunger_limit=30, seed=seed)
        a.set_state(0, [(list(env._body), env._heading)], [env._food])
        games += 1
        for _ in range(200):
            action = int(rng.integers(3))
            _, reward, terminated, truncated, _ = env.step(action)
            step = a.step(np.array([action]))
            assert step.rewards[0] == reward and step.terminated[0] == terminated and step.truncated[0] == truncated
            if terminated or truncated:
                deaths += terminated
                truncations += truncated
                assert step.episodes[0][1]["score"] == env._score
                break
            assert a.cells(0, 0) == list(env._body)
            if reward > 0:
                foods += 1
                put_food(a, 0, [env._food])  # the two games draw new food from different generators
    assert games == 200 and deaths > 50 and truncations > 0 and foods > 5


def test_snakes_die_on_walls_bodies_heads_and_head_on():
    a = arena(num_snakes=3)
    a.set_state(
        0,
        [([(2, 2), (3, 2), (4, 2)], UP), ([(2, 4), (3, 4), (4, 4)], UP), ([(0, 7), (1, 7), (2, 7)], UP)],
        [(9, 9)],
    )
    # snakes 0 and 1 turn towards each other onto (2, 3): both die; snake 2 leaves the board: dies
    step = a.step(np.array([TURN_RIGHT, TURN_LEFT, STRAIGHT]))
    assert step.terminated.tolist() == [True, True, True]
    assert step.rewards.tolist() == [-1.0, -1.0, -1.0]
    assert len(step.episodes) == 3 and not step.truncated.any()
    # all three respawned at once, each start_length cells long, and the board holds exactly their cells
    assert a.length[0].tolist() == [3, 3, 3] and (a.owner[0] > 0).sum() == 9


def test_a_snake_may_enter_a_tail_that_moves_but_not_one_that_stays():
    a = arena(num_snakes=2)
    # snake 1's tail is at (5, 5); snake 0's head moves onto it as snake 1 moves on
    a.set_state(0, [([(5, 4), (6, 4), (7, 4)], RIGHT), ([(3, 5), (4, 5), (5, 5)], UP)], [(9, 9)])
    step = a.step(np.array([STRAIGHT, STRAIGHT]))
    assert not step.terminated.any()
    assert a.cells(0, 0)[0] == (5, 5) and a.cells(0, 1) == [(2, 5), (3, 5), (4, 5)]
    # the same, but snake 1 eats, so its tail stays: snake 0 dies on it
    a.set_state(0, [([(5, 4), (6, 4), (7, 4)], RIGHT), ([(3, 5), (4, 5), (5, 5)], UP)], [(2, 5)])
    step = a.step(np.array([STRAIGHT, STRAIGHT]))
    assert step.terminated.tolist() == [True, False] and step.rewards.tolist() == [-1.0, 1.0]
    assert a.cells(0, 1) == [(2, 5), (3, 5), (4, 5), (5, 5)]


def test_heads_swapping_places_both_die_and_food_is_replaced():
    a = arena(num_snakes=2, num_food=2)
    a.set_state(0, [([(5, 4), (5, 3)], RIGHT), ([(5, 5), (5, 6)], LEFT)], [(0, 0), (9, 9)])
    step = a.step(np.array([STRAIGHT, STRAIGHT]))
    assert step.terminated.tolist() == [True, True]
    a.set_state(0, [([(5, 4), (5, 3)], RIGHT), ([(8, 8), (8, 7)], RIGHT)], [(5, 5), (9, 9)])
    step = a.step(np.array([STRAIGHT, STRAIGHT]))
    assert step.rewards.tolist() == [1.0, 0.0] and a.score[0].tolist() == [1, 0]
    assert a.food[0].sum() == 2 and (5, 5) not in a.food_cells(0)  # eaten, and a new one placed


def test_hunger_truncates_with_the_final_observation_and_the_episode_record():
    a = arena(num_snakes=1, hunger_limit=3)
    a.set_state(0, [([(5, 5), (6, 5)], UP)], [(9, 9)])
    for _ in range(2):
        assert not a.step(np.array([STRAIGHT])).truncated.any()
    step = a.step(np.array([STRAIGHT]))
    assert step.truncated.tolist() == [True] and not step.terminated.any()
    ((index, final),) = step.final_obs
    assert index == 0 and final[-1] == pytest.approx(1.0)  # hunger 3 / 3 in its last observation
    assert step.episodes == [(0, {"return": 0.0, "length": 3.0, "score": 0.0, "snake_length": 2.0})]
    assert step.obs[0, -1] == 0.0  # the respawned snake is not hungry


def test_the_point_of_view_is_rotated_with_the_heading():
    a = arena(num_snakes=2, view=3)
    # snake 0 at (5, 5); food right in front of it whichever way it heads; snake 1 to its east
    w = 3 * 3
    for heading, food, right_cell in ((UP, (4, 5), (5, 6)), (RIGHT, (5, 6), (6, 5)), (DOWN, (6, 5), (5, 4))):
        a.set_state(0, [([(5, 5)], heading), ([right_cell, (0, 0)], UP)], [food])
        obs = a._observe()[0]
        planes = obs[: len(PLANES) * w].reshape(len(PLANES), 3, 3)
        assert planes[PLANES.index("food")][0, 1] == 1.0  # straight ahead
        assert planes[PLANES.index("own_body")][1, 1] == 1.0  # the centre is its head
        assert planes[PLANES.index("other_heads")][1, 2] == 1.0  # to its right
        assert obs[len(PLANES) * w + heading] == 1.0 and obs[len(PLANES) * w : len(PLANES) * w + 4].sum() == 1.0
    a.set_state(0, [([(0, 0)], UP), ([(9, 9)], UP)], [(5, 5)])
    outside = a._observe()[0][:w].reshape(3, 3)
    assert outside.tolist() == [[1, 1, 1], [1, 0, 0], [1, 0, 0]]  # a corner: above and to the left is wall


def test_many_boards_step_as_one_batch_and_keep_their_invariants():
    a = SnakeArena(boards=8, num_snakes=4, dim=12, seed=3)
    obs = a.reset()
    assert obs.shape == (32, a.single_observation_space.shape[0]) and a.num_envs == 32
    rng = np.random.default_rng(1)
    ended = 0
    for _ in range(500):
        step = a.step(rng.integers(0, 3, 32))
        ended += len(step.episodes)
        for b in range(8):
            assert (a.owner[b] > 0).sum() == a.length[b].sum()
            assert a.food[b].sum() == 4 and not (a.food[b] & (a.owner[b] != 0)).any()
    assert ended > 100


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"num_snakes": 16, "dim": 8}, "raise dim to at least"), ({"view": 4}, "odd number"), ({"num_food": 0}, ">= 1")],
)
def test_impossible_arenas_are_refused_naming_the_fix(kwargs, message):
    options = {"num_snakes": 4, "dim": 10, "num_food": 4, "start_length": 3, "view": 9, "hunger_limit": 100}
    with pytest.raises(ValueError, match=message):
        check_options(**{**options, **kwargs})

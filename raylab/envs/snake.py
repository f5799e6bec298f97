"""Snake, the game of seeds 000 and 004, as a small fast gymnasium env.

A ``dim`` x ``dim`` grid (default 10). The snake starts ``start_length`` cells long with its head at least
``border`` cells from every wall, heading a random way. Actions are relative: 0 straight on, 1 turn left,
2 turn right. Eating food earns ``food_reward`` and grows the snake; hitting a wall or itself ends the
episode with ``death_penalty``; ``hunger_limit`` steps without food truncate it (no endless circling).
Observations are either a ``grid`` image (uint8, channels body/head/food, 0 or 255) or 11 ``features``
(danger straight/left/right, heading one-hot, food left/right/up/down), the classic Snake-DQN input.
Everything random (start, food) comes from the env's seeded generator, so a seed fixes an episode.
"""

from __future__ import annotations

from collections import deque
from typing import Any, Literal

import gymnasium as gym
import numpy as np

# headings clockwise: up, right, down, left as (row, col) steps
_STEPS = np.array([[-1, 0], [0, 1], [1, 0], [0, -1]])
_TURN = (0, -1, 1)  # action -> heading change: straight, left, right


class SnakeEnv(gym.Env[np.ndarray, np.int64]):
    metadata = {"render_modes": ["rgb_array"], "render_fps": 10}  # noqa: RUF012 - gymnasium's convention

    def __init__(
        self,
        dim: int = 10,
        start_length: int = 3,
        border: int = 3,
        food_reward: float = 1.0,
        death_penalty: float = -1.0,
        step_reward: float = 0.0,
        hunger_limit: int | None = 100,
        observation: Literal["grid", "features"] = "grid",
        render_mode: str | None = None,
        render_scale: int = 16,
    ):
        if start_length < 1 or start_length - 1 > border or 2 * border >= dim:
            raise ValueError(
                f"snake needs 1 <= start_length <= border + 1 and 2 * border < dim "
                f"(got dim={dim}, start_length={start_length}, border={border})"
            )
        if observation not in ("grid", "features"):
            raise ValueError(f"snake observation must be 'grid' or 'features', got {observation!r}")
        self.dim, self.start_length, self.border = int(dim), int(start_length), int(border)
        self.food_reward, self.death_penalty, self.step_reward = (
            float(food_reward),
            float(death_penalty),
            float(step_reward),
        )
        self.hunger_limit = hunger_limit
        self.observation_kind = observation
        self.render_mode = render_mode
        self.render_scale = int(render_scale)
        self.action_space = gym.spaces.Discrete(3)
        if observation == "grid":
            self.observation_space = gym.spaces.Box(0, 255, (3, self.dim, self.dim), np.uint8)
        else:
            self.observation_space = gym.spaces.Box(0.0, 1.0, (11,), np.float32)
        self._occupied = np.zeros((self.dim, self.dim), bool)
        self._body: deque[tuple[int, int]] = deque()
        self._heading = 0
        self._food = (0, 0)
        self._hungry = 0
        self._score = 0

    # -- gymnasium API -------------------------------------------------------------------------------------
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        rng = self.np_random
        lo, hi = self.border, self.dim - 1 - self.border
        head = (int(rng.integers(lo, hi + 1)), int(rng.integers(lo, hi + 1)))
        self._heading = int(rng.integers(4))
        back = _STEPS[(self._heading + 2) % 4]
        self._body = deque((head[0] + k * back[0], head[1] + k * back[1]) for k in range(self.start_length))
        self._occupied[:] = False
        for r, c in self._body:
            self._occupied[r, c] = True
        self._place_food()
        self._hungry = 0
        self._score = 0
        return self._observation(), self._info()

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        self._heading = (self._heading + _TURN[int(action)]) % 4
        dr, dc = _STEPS[self._heading]
        head = self._body[0]
        new = (head[0] + int(dr), head[1] + int(dc))
        eats = new == self._food
        if not eats:  # the tail moves out of the way first
            tail = self._body.pop()
            self._occupied[tail] = False
        if not (0 <= new[0] < self.dim and 0 <= new[1] < self.dim) or self._occupied[new]:
            if not eats:
                self._body.append(tail)
                self._occupied[tail] = True
            return self._observation(), self.death_penalty, True, False, self._info()
        self._body.appendleft(new)
        self._occupied[new] = True
        reward = self.step_reward
        self._hungry += 1
        terminated = False
        if eats:
            reward += self.food_reward
            self._score += 1
            self._hungry = 0
            terminated = not self._place_food()  # a full board: the game is won
        truncated = self.hunger_limit is not None and self._hungry >= self.hunger_limit
        return self._observation(), reward, terminated, truncated, self._info()

    def render(self) -> np.ndarray | None:
        if self.render_mode != "rgb_array":
            return None
        img = np.full((self.dim, self.dim, 3), 24, np.uint8)
        img[self._occupied] = (40, 170, 60)
        img[self._body[0]] = (140, 255, 120)
        img[self._food] = (230, 50, 50)
        return np.repeat(np.repeat(img, self.render_scale, axis=0), self.render_scale, axis=1)

    # -- internals -----------------------------------------------------------------------------------------
    def _place_food(self) -> bool:
        free = self.dim * self.dim - len(self._body)
        if free == 0:
            return False
        rng = self.np_random
        if free > self.dim * self.dim // 4:  # sparse board: rejection sampling is cheapest
            while True:
                cell = (int(rng.integers(self.dim)), int(rng.integers(self.dim)))
                if not self._occupied[cell]:
                    break
        else:
            flat = np.flatnonzero(~self._occupied)
            idx = int(flat[rng.integers(len(flat))])
            cell = (idx // self.dim, idx % self.dim)
        self._food = cell
        return True

    def _info(self) -> dict[str, Any]:
        return {"snake_length": len(self._body), "score": self._score}

    def _blocked(self, heading: int) -> bool:
        dr, dc = _STEPS[heading % 4]
        r, c = self._body[0][0] + int(dr), self._body[0][1] + int(dc)
        if not (0 <= r < self.dim and 0 <= c < self.dim):
            return True
        return bool(self._occupied[r, c]) and (r, c) != self._body[-1]

    def _observation(self) -> np.ndarray:
        if self.observation_kind == "grid":
            grid = np.zeros((3, self.dim, self.dim), np.uint8)
            grid[0][self._occupied] = 255
            grid[1][self._body[0]] = 255
            grid[2][self._food] = 255
            return grid
        head, food, h = self._body[0], self._food, self._heading
        features = np.zeros(11, np.float32)
        features[0:3] = (self._blocked(h), self._blocked(h - 1), self._blocked(h + 1))
        features[3 + h] = 1.0
        features[7:11] = (food[1] < head[1], food[1] > head[1], food[0] < head[0], food[0] > head[0])
        return features

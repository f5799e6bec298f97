"""The multi-snake arena: Snake (raylab/envs/snake.py) with N snakes on one board, numpy-vectorized over boards.

``SnakeArena`` steps B boards of N snakes each as one batch and is itself a raylab ``VectorEnv`` whose
``num_envs`` is B x N *agent slots* (slot ``b * N + n`` is snake n of board b). One policy acts for every
snake (parameter sharing): the rollout worker, the replay and every learner see an ordinary batch of envs.

Rules, per snake (with N = 1, ``num_food=1`` they are Snake's own; tests/unit/test_snake_arena.py plays
both side by side): actions are relative (0 straight on, 1 turn left, 2 turn right); moving onto food earns
``food_reward`` and grows the snake (its tail stays put that step), a new food appears on a random free cell;
otherwise its tail moves out of the way first, so a snake may follow any tail, its own included. Moving into
a wall, any snake's body or head, or onto the cell another snake's head moves onto in the same step (both
die) ends the snake's episode with ``death_penalty``; ``hunger_limit`` steps without food truncate it.

A snake whose episode ended **respawns at once** (chosen over waiting for a board-wide episode end): its body
leaves the board, and it starts again ``start_length`` cells long, in a straight line on free cells, heading
a random way, in the same step (the same-step autoreset every raylab vector env keeps). A board therefore
never ends; an episode is one snake's life, its return and foods eaten (``score``) are reported per snake.

Observation (float32, one vector per snake): its point of view, as in seed 002's ``agent.pov()`` — a
``view`` x ``view`` window around its head, rotated so that the snake heads up (the actions are relative, so
the window is too), with 5 planes: outside the board, its own body, other snakes' bodies, other snakes'
heads, food; then its absolute heading one-hot (up, right, down, left) and its hunger (steps since food /
hunger_limit). Everything random comes from one seeded generator per arena. ``reward_clip``/``reward_scale``
(env.reward_clip, env.reward_scale) transform the rewards the learner sees; episode returns stay raw.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np

from raylab.envs.vector import VectorStep
from raylab.envs.wrappers import transform_reward

STEPS = np.array([[-1, 0], [0, 1], [1, 0], [0, -1]], np.int64)
"""Headings clockwise: up, right, down, left, as (row, col) steps."""
TURN = np.array([0, -1, 1], np.int64)
"""Action -> heading change: straight on, turn left, turn right."""
PLANES = ("outside", "own_body", "other_bodies", "other_heads", "food")
RESPAWN_TRIES = 64


class SnakeArena:
    """``boards`` boards of ``num_snakes`` snakes, stepped as one batch (raylab's VectorEnv contract)."""

    def __init__(
        self,
        boards: int = 1,
        num_snakes: int = 4,
        dim: int = 14,
        num_food: int | None = None,
        start_length: int = 3,
        view: int = 9,
        food_reward: float = 1.0,
        death_penalty: float = -1.0,
        step_reward: float = 0.0,
        hunger_limit: int | None = 100,
        reward_clip: float | None = None,
        reward_scale: float = 1.0,
        seed: int = 0,
        name: str = "snake arena",
    ):
        num_food = num_snakes if num_food is None else num_food
        check_options(num_snakes, dim, num_food, start_length, view, hunger_limit)
        self.B, self.N, self.D = int(boards), int(num_snakes), int(dim)
        self.num_food, self.start_length, self.view = int(num_food), int(start_length), int(view)
        self.food_reward, self.death_penalty, self.step_reward = (
            float(food_reward),
            float(death_penalty),
            float(step_reward),
        )
        self.hunger_limit = hunger_limit
        self.reward_clip, self.reward_scale = reward_clip, float(reward_scale)
        self.name = name
        self.num_envs = self.B * self.N
        self.agents = [f"snake_{n}" for n in range(self.N)]
        """Agent ids, in slot order within a board (what policy_mapping patterns match)."""
        self.restarts = 0
        self.rng = np.random.default_rng(seed)
        size = len(PLANES) * self.view * self.view + 5
        self.single_observation_space: gym.Space = gym.spaces.Box(0.0, 1.0, (size,), np.float32)
        self.single_action_space: gym.Space = gym.spaces.Discrete(3)
        r = self.view // 2
        self._r = r
        B, N, D = self.B, self.N, self.D
        self.cap = D * D  # ring-buffer length: no body is longer than the board
        self.owner = np.zeros((B, D + 2 * r, D + 2 * r), np.int16)
        """k + 1 on snake k's body cells, -1 outside the board (a padding of r cells), 0 free."""
        self.food = np.zeros((B, D + 2 * r, D + 2 * r), bool)
        self.body = np.zeros((B, N, self.cap, 2), np.int64)
        """Ring buffer of each snake's cells in padded coordinates; the head at ``head_ptr``."""
        self.head_ptr = np.zeros((B, N), np.int64)
        self.length = np.zeros((B, N), np.int64)
        self.heading = np.zeros((B, N), np.int64)
        self.hunger = np.zeros((B, N), np.int64)
        self.score = np.zeros((B, N), np.int64)
        self.ep_return = np.zeros((B, N), np.float64)
        self.ep_length = np.zeros((B, N), np.int64)
        self._b = np.arange(B)[:, None]
        self._ids = np.arange(1, N + 1, dtype=np.int16)[None, :]
        # window offsets per heading: row i of the window is (r - i) cells ahead, column j is (j - r) to the right
        i, j = np.meshgrid(np.arange(self.view), np.arange(self.view), indexing="ij")
        ahead, right = (r - i).reshape(-1), (j - r).reshape(-1)
        self._offsets = np.stack([ahead[:, None] * STEPS[h] + right[:, None] * STEPS[(h + 1) % 4] for h in range(4)])

    # -- VectorEnv ------------------------------------------------------------------------------------------
    def reset(self) -> np.ndarray:
        r, D = self._r, self.D
        self.owner[:] = -1
        self.owner[:, r : r + D, r : r + D] = 0
        self.food[:] = False
        self.length[:] = 0
        self.score[:], self.ep_return[:], self.ep_length[:] = 0, 0.0, 0
        for b in range(self.B):
            for n in range(self.N):
                self._spawn(b, n)
            self._place_food(b, self.num_food)
        return self._observe()

    def step(self, actions: np.ndarray) -> VectorStep:
        B, N = self.B, self.N
        b = self._b
        act = np.asarray(actions, np.int64).reshape(B, N)
        self.heading = (self.heading + TURN[act]) % 4
        head = self.body[b, np.arange(N)[None, :], self.head_ptr]  # [B, N, 2]
        new = head + STEPS[self.heading]
        rows, cols = new[..., 0], new[..., 1]
        eats = self.food[b, rows, cols]
        tail_ptr = (self.head_ptr - self.length + 1) % self.cap
        tails = self.body[b, np.arange(N)[None, :], tail_ptr]
        movers = ~eats
        self.owner[np.broadcast_to(b, (B, N))[movers], tails[movers][:, 0], tails[movers][:, 1]] = 0
        hit = self.owner[b, rows, cols] != 0  # -1 outside, k + 1 a body (tails that moved are free)
        cell = (b * self.owner.shape[1] + rows) * self.owner.shape[2] + cols
        flat = cell.reshape(-1)
        order = np.argsort(flat, kind="stable")
        same = flat[order][1:] == flat[order][:-1]
        clash = np.zeros(flat.size, bool)
        clash[order[1:][same]] = True
        clash[order[:-1][same]] = True
        dead = hit | clash.reshape(B, N)
        eats &= ~dead
        alive = ~dead
        # move the living: the new head, the body grows on food
        self.head_ptr = np.where(alive, (self.head_ptr + 1) % self.cap, self.head_ptr)
        live_b, live_n = np.nonzero(alive)
        self.body[live_b, live_n, self.head_ptr[live_b, live_n]] = new[live_b, live_n]
        self.owner[live_b, rows[live_b, live_n], cols[live_b, live_n]] = (live_n + 1).astype(np.int16)
        self.length += eats
        self.food[b, rows, cols] &= ~eats
        self.score += eats
        self.hunger = np.where(eats, 0, self.hunger + 1)
        rewards = np.where(dead, self.death_penalty, self.step_reward + self.food_reward * eats)
        terminated = dead
        truncated = alive & (self.hunger >= self.hunger_limit) if self.hunger_limit is not None else np.zeros_like(dead)
        self.ep_return += rewards
        self.ep_length += 1
        ended = terminated | truncated
        final_obs: list[tuple[int, np.ndarray]] = []
        episodes: list[tuple[int, dict[str, float]]] = []
        if ended.any():
            if truncated.any():
                obs = self._observe()
                final_obs = [(int(i), obs[i].copy()) for i in np.flatnonzero(truncated.reshape(-1))]
            for eb, en in zip(*np.nonzero(ended), strict=True):
                episodes.append((int(eb * N + en), self._record(eb, en, bool(terminated[eb, en]))))
                self._remove(eb, en)
            for eb, en in zip(*np.nonzero(ended), strict=True):
                self._spawn(int(eb), int(en))
        eaten = eats.sum(axis=1)
        for eb in np.flatnonzero(eaten):
            self._place_food(int(eb), int(eaten[eb]))
        return VectorStep(
            self._observe(),
            transform_reward(rewards.reshape(-1).astype(np.float32), self.reward_clip, self.reward_scale),
            terminated.reshape(-1),
            truncated.reshape(-1),
            final_obs,
            episodes,
            None,
        )

    def close(self) -> None:
        pass

    # -- internals -----------------------------------------------------------------------------------------
    def _record(self, b: int, n: int, died: bool) -> dict[str, float]:
        record = {
            "return": float(self.ep_return[b, n]), "length": float(self.ep_length[b, n]),
            "score": float(self.score[b, n]), "snake_length": float(self.length[b, n] - died),
        }  # fmt: skip
        self.ep_return[b, n], self.ep_length[b, n], self.score[b, n] = 0.0, 0, 0
        return record

    def _cells(self, b: int, n: int) -> np.ndarray:
        ptrs = (self.head_ptr[b, n] - np.arange(self.length[b, n])) % self.cap
        return self.body[b, n, ptrs]

    def _remove(self, b: int, n: int) -> None:
        """Take snake n's body off board b (after a death its head never entered the board)."""
        cells = self._cells(b, n)
        mine = self.owner[b, cells[:, 0], cells[:, 1]] == n + 1
        self.owner[b, cells[mine, 0], cells[mine, 1]] = 0
        self.length[b, n] = 0

    def _spawn(self, b: int, n: int) -> None:
        """A new ``start_length`` snake on free cells (no food under it), heading a random way, with a free or
        food cell in front of its head."""
        r, D, L = self._r, self.D, self.start_length
        for attempt in range(RESPAWN_TRIES + 1):
            if attempt < RESPAWN_TRIES:
                heading = int(self.rng.integers(4))
                head = np.array([self.rng.integers(D), self.rng.integers(D)]) + r
            else:  # a crowded board: every placement, in a random order
                heads = np.argwhere(self.owner[b] == 0)
                options = [(h, tuple(c)) for c in heads[self.rng.permutation(len(heads))] for h in range(4)]
                found = next((o for o in options if self._fits(b, np.array(o[1]), o[0], L)), None)
                if found is None:
                    raise RuntimeError(
                        f"{self.name}: no free place for a {L}-cell snake on a {D}x{D} board: raise "
                        f"env.options.dim or lower num_snakes"
                    )
                heading, head = found[0], np.array(found[1])
            if self._fits(b, head, heading, L):
                break
        cells = head[None, :] - np.arange(L)[:, None] * STEPS[heading][None, :]
        self.owner[b, cells[:, 0], cells[:, 1]] = n + 1
        ptrs = np.arange(L)[::-1] % self.cap  # the tail at slot 0, the head at slot L - 1
        self.body[b, n, ptrs] = cells
        self.head_ptr[b, n] = L - 1
        self.length[b, n] = L
        self.heading[b, n] = heading
        self.hunger[b, n] = 0

    def _fits(self, b: int, head: np.ndarray, heading: int, length: int) -> bool:
        cells = head[None, :] - np.arange(length)[:, None] * STEPS[heading][None, :]
        front = head + STEPS[heading]
        if (cells < self._r).any() or (cells >= self._r + self.D).any():  # the padding may be narrower
            return False
        if (self.owner[b, cells[:, 0], cells[:, 1]] != 0).any() or self.food[b, cells[:, 0], cells[:, 1]].any():
            return False
        return bool(self.owner[b, front[0], front[1]] == 0)

    def _place_food(self, b: int, count: int) -> None:
        r, D = self._r, self.D
        for _ in range(count):
            for _ in range(RESPAWN_TRIES):
                row, col = self.rng.integers(D) + r, self.rng.integers(D) + r
                if self.owner[b, row, col] == 0 and not self.food[b, row, col]:
                    break
            else:
                free = np.argwhere((self.owner[b] == 0) & ~self.food[b])
                if not len(free):
                    return  # a full board: no more food
                row, col = free[self.rng.integers(len(free))]
            self.food[b, row, col] = True

    def _observe(self) -> np.ndarray:
        B, N, W = self.B, self.N, self.view
        b = self._b[:, :, None]
        head = self.body[self._b, np.arange(N)[None, :], self.head_ptr]  # [B, N, 2]
        offsets = self._offsets[self.heading]  # [B, N, W*W, 2]
        rows = head[..., 0, None] + offsets[..., 0]  # heads are on the board and views reach r cells beyond

        cols = head[..., 1, None] + offsets[..., 1]  # it: inside the padding, never past it
        seen = self.owner[b, rows, cols]
        heads = np.zeros_like(self.owner)
        heads[self._b, head[..., 0], head[..., 1]] = self._ids
        seen_heads = heads[b, rows, cols]
        me = self._ids[..., None]
        obs = np.empty((B, N, len(PLANES) * W * W + 5), np.float32)
        planes = obs[..., : len(PLANES) * W * W].reshape(B, N, len(PLANES), W * W)
        planes[:, :, 0] = seen == -1
        planes[:, :, 1] = seen == me
        planes[:, :, 2] = (seen > 0) & (seen != me) & (seen_heads != seen)
        planes[:, :, 3] = (seen_heads > 0) & (seen_heads != me)
        planes[:, :, 4] = self.food[b, rows, cols]
        tail = obs[..., len(PLANES) * W * W :]
        tail[..., :4] = np.eye(4, dtype=np.float32)[self.heading]
        tail[..., 4] = self.hunger / self.hunger_limit if self.hunger_limit else 0.0
        return obs.reshape(B * N, -1)

    # -- for tests: put a board in a known state ----------------------------------------------------------
    def set_state(self, b: int, snakes: list[tuple[list[tuple[int, int]], int]], food: list[tuple[int, int]]) -> None:
        """Board ``b`` holds exactly ``snakes`` ((cells head first, in board coordinates), heading) and
        ``food``; the other counters restart."""
        r = self._r
        self.owner[b][self.owner[b] > 0] = 0
        self.food[b] = False
        for n, (cells, heading) in enumerate(snakes):
            padded = np.array(cells, np.int64) + r
            self.owner[b, padded[:, 0], padded[:, 1]] = n + 1
            L = len(cells)
            self.body[b, n, np.arange(L)[::-1]] = padded
            self.head_ptr[b, n], self.length[b, n], self.heading[b, n] = L - 1, L, heading
            self.hunger[b, n] = 0
        for row, col in food:
            self.food[b, row + r, col + r] = True

    def cells(self, b: int, n: int) -> list[tuple[int, int]]:
        """Snake n's cells on board b, head first, in board coordinates."""
        return [(int(row) - self._r, int(col) - self._r) for row, col in self._cells(b, n)]

    def food_cells(self, b: int) -> list[tuple[int, int]]:
        return [(int(row) - self._r, int(col) - self._r) for row, col in np.argwhere(self.food[b])]


def check_options(
    num_snakes: int, dim: int, num_food: int, start_length: int, view: int, hunger_limit: int | None
) -> None:
    """ValueError naming the fix for arena options that cannot make a board."""
    if num_snakes < 1 or num_food < 1 or start_length < 1:
        raise ValueError("snake arena needs num_snakes, num_food and start_length >= 1")
    if view < 3 or view % 2 == 0:
        raise ValueError(f"snake arena view must be an odd number >= 3 (got {view})")
    if hunger_limit is not None and hunger_limit < 1:
        raise ValueError(f"snake arena hunger_limit must be >= 1 or null (got {hunger_limit})")
    if num_snakes * (start_length + 1) + num_food > dim * dim // 2:
        raise ValueError(
            f"a {dim}x{dim} board is too small for {num_snakes} snakes of {start_length} cells and {num_food} "
            f"food: raise dim to at least {int(np.ceil(np.sqrt(2 * (num_snakes * (start_length + 1) + num_food))))}"
        )

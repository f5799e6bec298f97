"""Atari 2600 games through EnvPool's ALE (EnvPool 1.2.5 ships the ROMs), with the preprocessing done natively.

``env.id`` is an EnvPool Atari id (``Pong-v5``, ``Breakout-v5``, any game ``envpool.list_all_envs()`` lists) or
a game's name (``pong``, ``Pong``, ``MontezumaRevenge``). raylab's shared frame keys map onto EnvPool's own
C++ preprocessing, so frames never pass through Python wrappers:

=================  ==========================  ==================================================================
raylab key         EnvPool option              DeepMind default (conf/env/atari.yaml)
=================  ==========================  ==================================================================
env.frame_skip     frame_skip                  4, the reward summed and the last two frames max-pooled
env.grayscale      gray_scale                  true
env.resize         img_height, img_width       [84, 84] (null keeps the screen's 210 x 160)
env.frame_stack    stack_num                   4
env.noop_max       noop_max                    30 random no-ops after each reset
env.max_episode_   max_episode_steps           null: 27,000 agent steps (108,000 frames, 30 minutes of play)
steps
=================  ==========================  ==================================================================

``env.options`` take the rest: ``episodic_life`` (a lost life ends the training episode, the game goes on;
default true), ``repeat_action_probability`` (Machado et al.'s sticky actions: 0.25), ``full_action_space``
(all 18 actions), ``use_fire_reset`` (press FIRE after a reset in games that need it; EnvPool's default true),
``num_threads`` (EnvPool threads per rollout worker, 1: one worker is one reserved CPU), ``reset_actions`` (a list
of actions played one agent step each after every reset, the game's start and each lost life's under
``episodic_life``; default none).

EnvPool's FIRE reset presses FIRE for one frame. OpenAI baselines' ``FireResetEnv`` (SB3's ``AtariWrapper``, CleanRL's
``ppo_atari.py``) plays FIRE and then action 2 for a whole agent step each; ``reset_actions: [2]`` adds that second
step. It matters where a game waits for a move before its next life: BeamRider does, and a policy that picks NOOP
or FIRE on that screen waits there until the time limit (``benchmarks/atari_life_restart.py``). Their rewards count
in the game's raw score and their steps in its length; the learner sees neither.

Rewards reach raylab raw: ``env.reward_clip`` (1 by default, DeepMind's sign clip for integer scores) and
``env.reward_scale`` apply to what the learner sees only. Episode statistics always count whole games on the
raw score, whatever ``episodic_life`` says, so evaluation (which plays the training settings, as CleanRL and
SB3 do: after a lost life EnvPool's reset presses FIRE where the game needs it) reports true game scores. The
frames of those life-loss resets (their no-ops and FIRE) are not counted, as EnvPool does not report them.
"""

from __future__ import annotations

import contextlib
from functools import cache
from typing import Any

import gymnasium as gym
import numpy as np

from raylab.envs.config import EnvConfig
from raylab.envs.procgen import PoolAdapter, in_env_order
from raylab.envs.vector import VectorStep
from raylab.envs.wrappers import transform_reward
from raylab.errors import ConfigError

OPTIONS = (
    "episodic_life", "repeat_action_probability", "full_action_space", "use_fire_reset", "num_threads", "reset_actions",
)  # fmt: skip
BOOL_OPTIONS = ("episodic_life", "full_action_space", "use_fire_reset")
DEFAULT_MAX_EPISODE_STEPS = 27_000
"""Agent steps per game when env.max_episode_steps is null: 108,000 frames at frame skip 4 (the usual cap)."""
NOOP_ACTION = 0
INSTALL_HINT = (
    "install the atari extra: pip install 'raylab-actor-learner[atari]' (in a checkout: pip install -e '.[atari]')"
)


@cache
def envpool_module() -> Any:
    try:
        import envpool
    except ImportError as err:
        raise ConfigError(f"env=atari needs EnvPool ({err.name} is missing): {INSTALL_HINT}") from err
    return envpool


@cache
def games() -> dict[str, str]:
    """Lower-case game name -> EnvPool task id (``pong`` -> ``Pong-v5``), from EnvPool's registry."""
    from envpool.registration import registry  # envpool_module() imported envpool, which fills it

    envpool_module()
    return {i[: -len("-v5")].lower(): i for i, spec in registry.specs.items() if spec[0] == "envpool.atari"}


def task_id(cfg: EnvConfig) -> str:
    """``Pong-v5``, ``pong`` and ``Pong`` -> ``Pong-v5``; a one-line error naming close games otherwise."""
    name = cfg.id.strip()
    key = name[: -len("-v5")] if name.endswith("-v5") else name
    known = games()
    if key.lower() in known:
        return known[key.lower()]
    import difflib

    close = difflib.get_close_matches(key.lower(), list(known), n=3)
    hint = f"did you mean {' or '.join(known[c] for c in close)}?" if close else f"{len(known)} games: e.g. Pong-v5"
    raise ConfigError(f"unknown Atari game '{cfg.id}' for env=atari ({hint}): set env.id=<Game>-v5")


def check(cfg: EnvConfig) -> None:
    """The option values (AtariFamily.check has checked the names); env.normalize_reward is refused for every
    batched family by raylab.envs.registry.check_env_config."""
    for key in BOOL_OPTIONS:
        if key in cfg.options and not isinstance(cfg.options[key], bool):
            raise ConfigError(f"env.options.{key} must be true or false for env=atari (got {cfg.options[key]!r})")
    sticky = cfg.options.get("repeat_action_probability", 0.0)
    if isinstance(sticky, bool) or not isinstance(sticky, int | float) or not 0.0 <= sticky < 1.0:
        raise ConfigError(
            f"env.options.repeat_action_probability must be in [0, 1) for env=atari (got {sticky!r}; Machado et "
            f"al.'s sticky actions: 0.25)"
        )
    threads = cfg.options.get("num_threads", 1)
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise ConfigError(f"env.options.num_threads must be an integer >= 1 for env=atari (got {threads!r})")
    reset_actions(cfg)
    task_id(cfg)


def reset_actions(cfg: EnvConfig, num_actions: int | None = None) -> tuple[int, ...]:
    """``env.options.reset_actions`` as a tuple of action indices, checked against the game's ``num_actions``
    when it is known (the pool tells it)."""
    value = cfg.options.get("reset_actions")
    value = [] if value is None else value  # 0 or false is a mistake, not "none": it is refused below
    if not isinstance(value, list | tuple) or not all(
        isinstance(a, int) and not isinstance(a, bool) and a >= 0 for a in value
    ):
        raise ConfigError(
            f"env.options.reset_actions must be a list of action indices for env=atari (got {value!r}; OpenAI "
            f"baselines' FIRE reset: [2])"
        )
    if num_actions is not None and any(a >= num_actions for a in value):
        raise ConfigError(
            f"env.options.reset_actions {list(value)} names an action {cfg.id} lacks: it has {num_actions} "
            f"(0-{num_actions - 1}); fix env.options.reset_actions"
        )
    return tuple(int(a) for a in value)


def pool_options(cfg: EnvConfig) -> dict[str, Any]:
    """EnvPool's keyword arguments for ``cfg`` (the table in the module's docstring)."""
    height, width = cfg.resize if cfg.resize is not None else (210, 160)
    return {
        "frame_skip": cfg.frame_skip,
        "gray_scale": cfg.grayscale,
        "img_height": int(height),
        "img_width": int(width),
        "stack_num": cfg.frame_stack,
        "noop_max": max(cfg.noop_max, 1),  # EnvPool plays U[0, noop_max - 1] + 1 no-ops, one fewer with FIRE
        "max_episode_steps": cfg.max_episode_steps or DEFAULT_MAX_EPISODE_STEPS,
        "reward_clip": False,  # raw scores come back; env.reward_clip applies to the learner's rewards only
        "episodic_life": bool(cfg.options.get("episodic_life", True)),
        "repeat_action_probability": float(cfg.options.get("repeat_action_probability", 0.0)),
        "full_action_space": bool(cfg.options.get("full_action_space", False)),
        "use_fire_reset": bool(cfg.options.get("use_fire_reset", True)),
        "num_threads": int(cfg.options.get("num_threads", 1)),
    }


def checked_reset_actions(cfg: EnvConfig, pool: Any) -> tuple[int, ...]:
    """reset_actions(cfg) against the game ``pool`` plays; a mistake closes the pool before it is raised."""
    try:
        return reset_actions(cfg, int(pool.action_space.n))
    except ConfigError:
        pool.close()
        raise


def make_pool(cfg: EnvConfig, num_envs: int, seed: int, render: bool = False) -> Any:
    """An EnvPool of ``num_envs`` games seeded ``seed, seed + 1, ...``."""
    envpool = envpool_module()
    extra = {"render_mode": "rgb_array"} if render else {}
    task = task_id(cfg)
    try:
        return envpool.make(
            task, env_type="gymnasium", num_envs=num_envs, seed=int(seed) % 2**31, **pool_options(cfg), **extra
        )
    except (ValueError, RuntimeError) as err:
        raise ConfigError(f"EnvPool rejected {task}: {' '.join(str(err).split())[:160]}: fix env.options") from err


class AtariVectorEnv(PoolAdapter):
    """EnvPool's batch of Atari games behind raylab's VectorEnv contract.

    EnvPool resets an env on the step after its episode ended; raylab's contract resets in the same step, so the
    finished envs take that reset step at once (their action ignored, reward 0). With ``episodic_life`` a lost
    life ends the training episode (``terminated``) while the game goes on: the reset step then continues the
    same game, and the episode statistics (raw score and agent steps) are reported only when the game is over
    (EnvPool's ``info['terminated']``) or hits its time limit."""

    def __init__(self, cfg: EnvConfig, num_envs: int, seed: int, name: str = "atari"):
        super().__init__(cfg, num_envs, seed, name, make_pool)
        self.single_observation_space: gym.Space = gym.spaces.Box(
            0, 255, tuple(self.pool.observation_space.shape), np.uint8
        )
        self.single_action_space: gym.Space = self.pool.action_space
        self._reset_actions = checked_reset_actions(cfg, self.pool)
        self._obs = np.zeros((self.num_envs, *self.single_observation_space.shape), np.uint8)
        self._noop = np.full(self.num_envs, NOOP_ACTION)

    def reset(self) -> np.ndarray:
        obs, info = self.pool.reset()
        self._obs[:] = obs[np.argsort(info["env_id"])]
        self._return[:] = 0.0
        self._length[:] = 0
        self._play_reset_actions(np.arange(self.num_envs), [])
        return self._obs

    def _play_reset_actions(self, ids: np.ndarray, episodes: list[tuple[int, dict[str, float]]]) -> None:
        """env.options.reset_actions for the envs ``ids``, just reset: one agent step each, their rewards and steps
        counted in the game's score and length. An env whose episode ends in one (a lost life, the time limit)
        takes its reset step at once, a finished game appended to ``episodes``, and plays them again from the first."""
        for action in self._reset_actions:
            if not len(ids):
                return
            out = self.pool.step(np.full(len(ids), action), env_id=ids)
            order = np.argsort(out[-1]["env_id"])  # ids is sorted: this puts the results in its order
            obs, rew, term, trunc = (v[order] for v in out[:4])
            over = out[-1]["terminated"][order] != 0
            self._obs[ids] = obs
            self._return[ids] += rew
            self._length[ids] += 1
            ended = term | trunc
            if ended.any():
                gone = ids[ended]
                for i in ids[ended & (over | trunc)]:
                    episodes.append((int(i), {"return": float(self._return[i]), "length": float(self._length[i])}))
                    self._return[i] = 0.0
                    self._length[i] = 0
                reset_obs, *_, reset_info = self.pool.step(self._noop[: len(gone)], env_id=gone)
                self._obs[gone] = reset_obs[np.argsort(reset_info["env_id"])]
                self._play_reset_actions(gone, episodes)
                ids = ids[~ended]

    def step(self, actions: np.ndarray) -> VectorStep:
        try:
            obs, rew, term, trunc, info = in_env_order(self.pool.step(np.asarray(actions)))
            done = term | trunc
            ids = np.flatnonzero(done)
            if len(ids):  # EnvPool's reset step for them, now (its reward is 0 and its action ignored)
                reset_obs, *_, reset_info = self.pool.step(self._noop[: len(ids)], env_id=ids)
        except Exception as err:
            return self._restart(err)
        self._obs[:] = obs
        self._return += rew
        self._length += 1
        games_over = np.flatnonzero(done & ((info["terminated"] != 0) | trunc))
        final_obs = [(int(i), self._obs[i].copy()) for i in np.flatnonzero(trunc & ~term)]
        episodes = [(int(i), {"return": float(self._return[i]), "length": float(self._length[i])}) for i in games_over]
        self._return[games_over] = 0.0
        self._length[games_over] = 0
        if len(ids):
            self._obs[ids] = reset_obs[np.argsort(reset_info["env_id"])]
            try:
                self._play_reset_actions(ids, episodes)
            except Exception as err:
                return self._restart(err)
        rewards = transform_reward(rew.astype(np.float32), self.cfg.reward_clip, self.cfg.reward_scale)
        return VectorStep(self._obs, rewards, term, trunc, final_obs, episodes, None)


class AtariEnv(gym.Env[np.ndarray, np.int64]):
    """One Atari game as a plain gymnasium.Env (an EnvPool of one), preprocessed natively: what make_env builds
    for the env checker, the spaces and videos (``render()`` gives the 210 x 160 RGB screen). Its episodes are
    whole games: with ``episodic_life``, a lost life takes EnvPool's life-loss reset (no-ops, FIRE) at once, as
    the vector env does, and the game goes on. ``env.options.reset_actions`` follow every reset; after a lost life
    their rewards are added to the step's, after ``reset()`` they are dropped (it returns none)."""

    metadata = {"render_modes": ["rgb_array"], "render_fps": 15}  # noqa: RUF012 - 60 frames/s at frame skip 4

    def __init__(self, cfg: EnvConfig, render_mode: str | None = None):
        self.cfg = cfg
        self.render_mode = render_mode
        self.pool = make_pool(cfg, 1, 0, render=render_mode == "rgb_array")
        self.observation_space = gym.spaces.Box(0, 255, tuple(self.pool.observation_space.shape), np.uint8)
        self.action_space = self.pool.action_space
        self._reset_actions = checked_reset_actions(cfg, self.pool)
        self.metadata = {**self.metadata, "render_fps": max(1, round(60 / cfg.frame_skip))}  # the ALE's 60 Hz
        self._episode_over = False

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        if seed is not None:  # gymnasium's contract: the same seed replays the same episode
            self.pool.close()
            self.pool = make_pool(self.cfg, 1, int(seed), render=self.render_mode == "rgb_array")
            obs, info = self.pool.reset()
        elif self._episode_over:
            obs, _, _, _, info = self.pool.step(np.array([NOOP_ACTION]))  # EnvPool's reset step
        else:
            obs, info = self.pool.reset()
        self._episode_over = False
        played = self._play_reset_actions()
        if played is not None:
            obs, _, self._episode_over, _, _, info = played
        return obs[0].copy(), {"lives": int(info["lives"][0])}

    def _play_reset_actions(self) -> tuple[np.ndarray, float, bool, bool, bool, dict[str, Any]] | None:
        """env.options.reset_actions after a reset: (observation, their reward, game over, terminated, truncated,
        info), or None when there are none. A life lost in one takes its reset step and starts them again; a
        game that ends in one ends there."""
        if not self._reset_actions:
            return None
        total = 0.0
        restarted = True
        while restarted:
            restarted = False
            for action in self._reset_actions:
                obs, rew, term, trunc, info = self.pool.step(np.array([action]))
                total += float(rew[0])
                over = bool(term[0] and info["terminated"][0])
                if over or bool(trunc[0]):
                    return obs, total, True, over, bool(trunc[0]), info
                if term[0]:  # a lost life: its reset step, then the reset actions again
                    obs, *_, info = self.pool.step(np.array([NOOP_ACTION]))
                    restarted = True
                    break
        return obs, total, False, False, False, info

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        obs, rew, term, trunc, info = self.pool.step(np.array([int(action)]))
        game_over = bool(trunc[0]) or bool(term[0] and info["terminated"][0])
        reward, truncated, terminated = float(rew[0]), bool(trunc[0]), bool(term[0]) and game_over
        if term[0] and not game_over:  # a lost life under episodic_life: its reset step, and the game goes on
            obs, *_, info = self.pool.step(np.array([NOOP_ACTION]))
            played = self._play_reset_actions()
            if played is not None:
                obs, extra, game_over, terminated, truncated, info = played
                reward += extra
        self._episode_over = game_over
        return obs[0].copy(), reward, terminated, truncated, {"lives": int(info["lives"][0])}

    def render(self) -> np.ndarray | None:
        if self.render_mode != "rgb_array":
            return None
        return np.asarray(self.pool.render())[0].copy()

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.pool.close()

"""The ``env`` section of the config: which env family and id, and the preprocessing every family shares.

It lives beside the families that take it rather than in raylab/config/schema.py, which re-exports it
(``from raylab.config import EnvConfig`` works): raylab.envs must not import raylab.config, whose ``resolve``
imports raylab.envs to check an env config against its family.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from raylab.errors import check, positive_or_none


@dataclass(frozen=True)
class EnvConfig:
    family: str = "gymnasium"
    """Env family: gymnasium | custom | mario | procgen | atari | snake | fake, or a multi-agent one: snake_arena |
    pettingzoo (raylab/envs/registry.py lists them)."""
    id: str = "CartPole-v1"
    """Env id within the family: a gymnasium id (``pkg.module:MyEnv-v0`` imports ``pkg.module`` first, in every
    process that builds envs, so that it registers the id), SuperMarioBros-1-1-v0, a Procgen game (coinrun),
    Snake-v0, SnakeArena-v0; env=pettingzoo: the module of a PettingZoo Parallel env (mpe2.simple_spread_v3);
    env=custom: a name for the console and the report."""
    factory: str | None = None
    """env=custom: ``pkg.module:make_env``, a callable that returns a ``gymnasium.Env``, called with
    env.options as keyword arguments once per env, in every process that builds envs; a callable with a
    ``num_envs`` parameter returns a ``gymnasium.vector.VectorEnv`` of that many envs, called once per worker."""
    backend: str = "gymnasium"
    """How rollout workers step env=gymnasium's envs: ``gymnasium`` (each env in Python, in raylab's serial
    vector env) or ``envpool``: EnvPool's C++ ports of the classic-control ids (CartPole-v0/v1, Acrobot-v1,
    MountainCar-v0, MountainCarContinuous-v0) as one native batch, the same transitions (tested);
    it pays from a few dozen envs per worker. Evaluation and single envs stay gymnasium's
    (raylab/envs/classic_pool.py)."""
    max_episode_steps: int | None = None
    """Time limit per episode in agent steps (truncation); None keeps the family's default."""
    frame_skip: int = 1
    """Repeat each action this many frames, summing rewards and max-pooling the last two frames."""
    grayscale: bool = False
    """Convert RGB (H, W, 3) frames to one channel."""
    resize: tuple[int, int] | None = None
    """Resize image frames to (height, width), e.g. [84, 84]."""
    frame_stack: int = 1
    """Stack the last k observations along the channel axis (uint8 stays uint8, channel-first)."""
    reward_clip: float | None = None
    """Clip each agent-step reward to [-c, c] before the learner sees it (episode returns stay raw)."""
    reward_scale: float = 1.0
    """Multiply each agent-step reward by this (after clipping)."""
    normalize_reward: bool = False
    """Divide each agent-step reward by a running standard deviation of its env's discounted return (gymnasium's
    NormalizeReward, as CleanRL's and SB3's continuous-control PPO do), before reward_clip and reward_scale.
    Episode returns stay raw. The statistics are each env's own, in its rollout actor; they restart with it."""
    normalize_reward_gamma: float | None = None
    """The discount of that return; null takes algo.gamma."""
    noop_max: int = 0
    """Take a random number (seeded) of up to this many no-op actions after each reset, for start diversity."""
    pad_observations: bool = False
    """Multi-agent envs whose agents' one-dimensional observations differ in size (mpe2.simple_tag_v3): zero-pad
    each to the largest (SuperSuit's pad_observations_v0), so that one policy can act for all of them. Without
    it, each kind of agent keeps its own observation space and needs its own policy."""
    discrete_agents: tuple[str, ...] = ()
    """env=pettingzoo: agent-id patterns (fnmatch) whose Box(0, 1, (d,)) actions are shown as Discrete(d) and
    sent one-hot: with mpe2's continuous_actions=true (global to its env), one team acts discretely beside a
    continuous one (for mpe2's agents without a voice, exactly its discrete actions)."""
    options: dict[str, Any] = field(default_factory=dict)
    """Family-specific options, checked by the family (gymnasium: keyword arguments of gymnasium.make; custom:
    of env.factory; mario: actions, stall_steps, flag_reward, stall_penalty, repress_jump; procgen: distribution_mode,
    num_levels, start_level, num_threads; snake: dim, start_length, border, observation, rewards; snake_arena:
    num_snakes, dim, num_food, view, ...; pettingzoo: keyword arguments of the module's parallel_env)."""

    def __post_init__(self) -> None:
        positive_or_none(self.max_episode_steps, "env.max_episode_steps")
        check(
            self.backend in ("gymnasium", "envpool"),
            f"unknown env.backend '{self.backend}': choose gymnasium or envpool (e.g. env.backend=envpool)",
        )
        check(self.frame_skip >= 1, f"env.frame_skip must be >= 1 (got {self.frame_skip})")
        check(self.frame_stack >= 1, f"env.frame_stack must be >= 1 (got {self.frame_stack})")
        check(self.noop_max >= 0, f"env.noop_max must be >= 0 (got {self.noop_max})")
        positive_or_none(self.reward_clip, "env.reward_clip")
        check(self.reward_scale != 0, "env.reward_scale=0 makes every reward 0: set env.reward_scale=1 (or another)")
        check(
            self.factory is None or self.family == "custom",
            f"env.factory goes with env=custom, not env={self.family}: add env=custom (or remove env.factory)",
        )
        check(
            self.normalize_reward_gamma is None or 0.0 <= self.normalize_reward_gamma < 1.0,
            f"env.normalize_reward_gamma must be in [0, 1) or null (got {self.normalize_reward_gamma})",
        )
        check(
            self.resize is None or (len(self.resize) == 2 and min(self.resize) > 0),
            f"env.resize must be [height, width] or null (got {self.resize})",
        )

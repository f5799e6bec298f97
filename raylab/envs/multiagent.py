"""Multi-agent envs as agent slots: PettingZoo's Parallel API behind raylab's VectorEnv contract.

A rollout worker steps a batch of env *slots*. A multi-agent env with A agents fills A of them (slot
``e * A + a`` is agent ``possible_agents[a]`` of env e), so one policy acts for every agent of every env in
one batched call (parameter sharing), and the replay, the learners and every topology see an ordinary
vector env — nothing downstream knows it is multi-agent. ``EnvSpaces.agents`` says how many slots one env
fills; the builders size batches, epsilon ladders and rate limits by slots.

Agents may leave an episode early (PettingZoo removes them from ``env.agents``): that step is the agent's last
transition (terminated, or truncated with its final observation); until its env's episode ends, the slot is
*absent*: it acts but its actions are not sent, and its steps carry no real outcome (reward 0, truncated set,
and flagged in ``restarted`` — the mask every learner already honours for crashed envs, so they never reach
a loss or a target). When every agent has left (or env.max_episode_steps passes), the env resets in the same
step and every slot starts a new episode. Each agent's episode is reported on its own (return, length).

An env that raises in ``step`` is rebuilt and reset on the spot (a fresh seed), as SerialVectorEnv does for
single-agent envs: its agents' partial episodes are dropped, and that step's slots are flagged in
``restarted`` (reward 0, truncated); ten crashes of one env in a row stop the run.

Rewards are clipped/scaled per agent (env.reward_clip, env.reward_scale) after the raw returns are counted.
Box actions are clipped to the agent's bounds before they are sent (the Gaussian policy samples unbounded ones).

Agents whose spaces differ (predators and prey in mpe2.simple_tag_v3: 16 and 14 floats) form several *space
groups*, each of one observation and one action space (``space_groups``): a worker's batch is then one array per
group, each policy acting for agents of one group in its own spaces, and nothing is padded. A policy shared by
agents of different observation sizes takes env.pad_observations instead: agents of one action space share one
group, each observation zero-padded to the largest, as SuperSuit's pad_observations_v0 does. env.discrete_agents
shows chosen agents' Box(0, 1, (d,)) actions as Discrete(d) (sent one-hot): with mpe2's continuous_actions=true,
one team acts continuously and the other discretely in one env.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fnmatch
import importlib
import importlib.util
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np

from raylab.envs.spaces import Encoding, encode, image_parts, shown
from raylab.envs.vector import GroupStep, VectorStep, count_crash, rebuild_env
from raylab.envs.wrappers import to_channel_first, transform_reward
from raylab.errors import ConfigError
from raylab.types import ObsPart, group_slots

INSTALL_HINT = "pip install 'raylab-actor-learner[multiagent]' (pettingzoo and mpe2)"


def parallel_env_factory(env_id: str) -> Callable[..., Any]:
    """``module.path`` (e.g. mpe2.simple_spread_v3) -> its ``parallel_env`` constructor; ConfigError naming the
    fix when the module is missing or is not a PettingZoo Parallel env."""
    top = env_id.split(".")[0]
    if not env_id or env_id.startswith(".") or importlib.util.find_spec(top) is None:
        hint = INSTALL_HINT if top in ("pettingzoo", "mpe2") else f"pip install the package that provides {top}"
        raise ConfigError(f"env=pettingzoo: no module named {top!r} for env.id={env_id}: {hint}")
    try:
        module = importlib.import_module(env_id)
    except ModuleNotFoundError as err:
        missing = err.name or env_id
        hint = INSTALL_HINT if missing.split(".")[0] in ("pettingzoo", "mpe2", "pygame") else f"pip install {missing}"
        if missing == env_id or env_id.startswith(missing + "."):
            hint = "set env.id=<package.module> of a PettingZoo env, e.g. mpe2.simple_spread_v3"
        raise ConfigError(f"env=pettingzoo: cannot import {env_id} (no module named {missing!r}): {hint}") from None
    except ImportError as err:  # e.g. a PettingZoo family whose optional dependencies are missing
        raise ConfigError(
            f"env=pettingzoo: cannot import {env_id} ({err}): {INSTALL_HINT} or the env's own extra"
        ) from None
    factory = getattr(module, "parallel_env", None)
    if not callable(factory):
        raise ConfigError(
            f"env.id={env_id} has no parallel_env(): raylab takes PettingZoo's Parallel API; set env.id to a module "
            f"with parallel_env (e.g. mpe2.simple_spread_v3), or wrap an AEC env with "
            f"pettingzoo.utils.conversions.aec_to_parallel in env=custom"
        )
    return factory


def make_parallel_env(env_id: str, options: dict[str, Any]) -> Any:
    factory = parallel_env_factory(env_id)
    try:
        env = factory(**options)
    except TypeError as err:
        raise ConfigError(
            f"{env_id}.parallel_env rejected env.options {dict(options)} ({err}): fix env.options"
        ) from None
    for attr in ("possible_agents", "reset", "step", "observation_space", "action_space"):
        if not hasattr(env, attr):
            raise ConfigError(
                f"{env_id}.parallel_env() returned a {type(env).__name__} without {attr}: not a Parallel env"
            )
    return env


@dataclass(frozen=True)
class SpaceGroup:
    """Agents (indices into ``possible_agents``, in order) that share one observation and one action space, as
    their policy sees them: ``padded`` when their observations are zero-padded to ``observation_space``."""

    agents: tuple[int, ...]
    observation_space: gym.Space
    action_space: gym.Space
    padded: bool = False
    obs_parts: tuple[ObsPart, ...] = ()
    """Where each image and vector lies in an encoded row that holds an image (raylab/envs/spaces.py)."""


def space_groups(env: Any, env_id: str, pad: bool = False, discrete_agents: Sequence[str] = ()) -> list[SpaceGroup]:
    """``env``'s agents grouped by their (observation, action) spaces, each group in order of its first agent
    (one group when every agent shares its spaces: today's envs). ``pad`` (env.pad_observations): agents of one
    action space share one group, their one-dimensional Box observations zero-padded to the largest.
    ``discrete_agents`` (env.discrete_agents): the agents these fnmatch patterns match act in Discrete(d) in place
    of their Box(0, 1, (d,)) actions (``discrete_action``). ConfigError naming the fix for what cannot be
    grouped so."""
    agents = [str(a) for a in env.possible_agents]
    seen = {a: agent_observation(env, a, env_id) for a in agents}
    obs = {a: space for a, (space, _) in seen.items()}
    for pattern in discrete_agents:
        if not any(fnmatch.fnmatchcase(a, pattern) for a in agents):
            raise ConfigError(
                f"env.discrete_agents pattern {pattern!r} matches no agent of {env_id} (agents: {', '.join(agents)}): "
                f"fix the pattern or remove it"
            )
    act = {a: discrete_action(env.action_space(a), a, env_id) if _matches(a, discrete_agents) else env.action_space(a)
           for a in agents}  # fmt: skip
    members: list[list[int]] = []
    for i, a in enumerate(agents):
        first = next((m for m in members if act[agents[m[0]]] == act[a] and (pad or obs[agents[m[0]]] == obs[a])), None)
        if first is None:
            members.append([i])
        else:
            first.append(i)
    groups = []
    for m in members:
        spaces = [obs[agents[i]] for i in m]
        action = act[agents[m[0]]]
        found = seen[agents[m[0]]][1]
        if all(space == spaces[0] for space in spaces):
            groups.append(SpaceGroup(tuple(m), spaces[0], action, obs_parts=image_parts(found) if found else ()))
        elif imaged := [agents[i] for i in m if (f := seen[agents[i]][1]) is not None and f.images]:
            raise ConfigError(
                f"env.pad_observations=true pads vectors, and agents {', '.join(imaged)} of {env_id} observe images "
                f"inside a Tuple or Dict: set env.pad_observations=false and give each kind of agent its own policy"
            )
        else:
            groups.append(SpaceGroup(tuple(m), _padded(spaces, [agents[i] for i in m], env_id), action, padded=True))
    return groups


def agent_observation(env: Any, agent: str, env_id: str) -> tuple[gym.Space, Encoding | None]:
    """Agent ``agent``'s observation space as its policy sees it, and the encoding that makes it so (None for a
    Box): any gymnasium space, encoded into a flat row as a single-agent env's (raylab/envs/spaces.py)."""
    return shown(env.observation_space(agent), f"{env_id}'s agent {agent}'s observation")


def _matches(agent: str, patterns: Sequence[str]) -> bool:
    return any(fnmatch.fnmatchcase(agent, p) for p in patterns)


def discrete_action(space: gym.Space, agent: str, env_id: str) -> gym.spaces.Discrete:
    """Discrete(d) in place of ``agent``'s Box(0, 1, (d,)) actions (env.discrete_agents): action k is sent as
    one_hot(k). For mpe2's continuous agents without a voice this is exactly its discrete action k
    (mpe2/_mpe_utils/simple_env.py ``_set_action``: the move is ``(a[2] - a[1], a[4] - a[3])``, and discrete k
    sets the same unit move), so one team can act discretely beside a continuous one in one env."""
    if (
        not isinstance(space, gym.spaces.Box)
        or len(space.shape) != 1
        or not (np.all(space.low <= 0) and np.all(space.high >= 1))
    ):
        raise ConfigError(
            f"env.discrete_agents matches {agent} of {env_id}, whose actions are {space}: it turns one-dimensional "
            f"Box(0, 1, (d,)) actions into Discrete(d) ones; leave {agent} out of env.discrete_agents (mpe2: set "
            f"env.options.continuous_actions=true for Box actions)"
        )
    return gym.spaces.Discrete(int(space.shape[0]))


def _padded(spaces: list[gym.Space], agents: list[str], env_id: str) -> gym.spaces.Box:
    """One Box of the largest of ``spaces`` (one-dimensional, one dtype), bounds covering each (zeros after a
    smaller one's end)."""
    differ = ", ".join(f"{a}: {s}" for a, s in zip(agents, spaces, strict=True))
    boxes = [s for s in spaces if isinstance(s, gym.spaces.Box)]
    if len(boxes) < len(spaces) or not all(len(b.shape) == 1 and b.dtype == boxes[0].dtype for b in boxes):
        raise ConfigError(
            f"env.pad_observations pads one-dimensional Box observations of one dtype, and {env_id}'s are "
            f"{differ}: set env.pad_observations=false and give each kind of agent its own policy"
        )
    size = max(int(b.shape[0]) for b in boxes)
    low = np.zeros(size, boxes[0].dtype)
    high = np.zeros(size, boxes[0].dtype)
    for b in boxes:
        n = int(b.shape[0])
        low[:n], high[:n] = np.minimum(low[:n], b.low), np.maximum(high[:n], b.high)
    return gym.spaces.Box(low, high, (size,), boxes[0].dtype)


def is_image(space: gym.Space) -> bool:
    """(H, W) or (H, W, C <= 4) uint8: what env.grayscale and env.resize take (raylab.envs.wrappers.GrayResize)."""
    shape = space.shape if isinstance(space, gym.spaces.Box) else None
    return shape is not None and space.dtype == np.uint8 and (len(shape) == 2 or (len(shape) == 3 and shape[2] <= 4))


class SlotFrames:
    """env.grayscale, env.resize and env.frame_stack on one space group's observations, slot by slot: what
    GrayResize and FrameStack (raylab/envs/wrappers.py) do to a single agent's. Grayscale and resize apply where
    the group's observations are images; the stack to every group (a vector of D floats becomes k * D, an image
    channel-first k * C planes), filled with an episode's first frame at its start."""

    def __init__(self, space: gym.Space, grayscale: bool, resize: tuple[int, int] | None, stack: int):
        self.observation_space = space
        self.gray, self.size, self.stack = False, None, 1
        if not isinstance(space, gym.spaces.Box):  # raylab.envs.registry.env_spaces refuses it
            return
        shape, dtype = tuple(space.shape), np.dtype(space.dtype)
        image = is_image(space)
        self.gray = grayscale and image and len(shape) == 3
        self.size = tuple(resize) if resize is not None and image else None
        if self.gray or self.size is not None:
            import cv2

            self._cv2 = cv2
            height, width = self.size or shape[:2]
            shape = (height, width) if (self.gray or len(shape) == 2) else (height, width, shape[2])
        self.stack = int(stack)
        self.frame_shape = shape if len(shape) == 1 or self.stack == 1 else to_channel_first(shape)
        self._channel_last = self.stack > 1 and len(shape) == 3 and self.frame_shape != shape
        self.channels = self.frame_shape[0] if self.stack > 1 else 0
        out = (self.stack * self.frame_shape[0], *self.frame_shape[1:]) if self.stack > 1 else shape
        if self.active:
            low = np.min(space.low) if space.low.size else 0
            high = np.max(space.high) if space.high.size else 0
            self.observation_space = gym.spaces.Box(low, high, out, dtype)

    @property
    def active(self) -> bool:
        return self.stack > 1 or self.gray or self.size is not None

    def put(self, row: np.ndarray, obs: np.ndarray, first: bool) -> None:
        """Write the frame of ``obs`` into a slot's ``row``: the whole stack at an episode's start (``first``),
        else the newest frame after the others, shifted by one."""
        frame = obs
        if self.gray:
            frame = self._cv2.cvtColor(frame, self._cv2.COLOR_RGB2GRAY)
        if self.size is not None:
            frame = self._cv2.resize(frame, (self.size[1], self.size[0]), interpolation=self._cv2.INTER_AREA)
        if self.stack == 1:
            row[...] = frame
            return
        if self._channel_last:
            frame = np.moveaxis(frame, -1, 0)
        frame = np.reshape(frame, self.frame_shape)
        c = self.channels
        if first:
            for i in range(self.stack):
                row[i * c : (i + 1) * c] = frame
        else:
            row[:-c] = row[c:]
            row[-c:] = frame


def check_frames(
    groups: Sequence[SpaceGroup], env_id: str, grayscale: bool, resize: tuple[int, int] | None, stack: int = 1
) -> None:
    """ConfigError when env.grayscale or env.resize is set and no agent of ``env_id`` observes an image, or
    env.frame_stack is and an agent observes an image inside a Tuple or Dict."""
    if stack > 1 and any(g.obs_parts for g in groups):
        raise ConfigError(
            f"env.frame_stack stacks whole observations, and agents of {env_id} observe images inside a Tuple or "
            f"Dict: set env.frame_stack=1 (model.recurrent=lstm gives memory)"
        )
    if (grayscale or resize is not None) and not any(is_image(g.observation_space) for g in groups):
        spaces = ", ".join(str(g.observation_space) for g in groups)
        raise ConfigError(
            f"env.grayscale/env.resize need (H, W[, C]) uint8 image observations but {env_id}'s agents observe "
            f"{spaces}: set env.grayscale=false and env.resize=null"
        )


class ParallelSlots:
    """``len(env_fns)`` PettingZoo Parallel envs as ``num_envs = envs x agents`` slots (module docstring).

    Agents whose spaces differ form several space groups (``space_groups``): then ``reset_groups`` and
    ``step_groups`` take and give one array per group (group g's slot ``e * A_g + r`` is agent r of g in env
    e: ``slot_group``, ``slot_local``), and ``reset``/``step`` are for one group only."""

    def __init__(
        self,
        env_fns: Sequence[Callable[[], Any]],
        seeds: Sequence[int],
        env_id: str = "pettingzoo",
        max_episode_steps: int | None = None,
        reward_clip: float | None = None,
        reward_scale: float = 1.0,
        name: str = "pettingzoo env",
        pad_observations: bool = False,
        discrete_agents: Sequence[str] = (),
        grayscale: bool = False,
        resize: tuple[int, int] | None = None,
        frame_stack: int = 1,
    ):
        self.env_fns = list(env_fns)
        self.envs = [fn() for fn in env_fns]
        self._crash_streak = [0] * len(self.envs)
        self.seeds = [int(s) for s in seeds]
        self.agents = list(self.envs[0].possible_agents)
        self.A = len(self.agents)
        self.E = len(self.envs)
        self.num_envs = self.E * self.A
        groups = space_groups(self.envs[0], env_id, pad_observations, discrete_agents)
        check_frames(groups, env_id, grayscale, resize, frame_stack)
        self._frames = [SlotFrames(g.observation_space, grayscale, resize, frame_stack) for g in groups]
        """Each group's frame preprocessing (env.grayscale, env.resize, env.frame_stack), per slot."""
        self.groups = [
            dataclasses.replace(g, observation_space=f.observation_space)
            for g, f in zip(groups, self._frames, strict=True)
        ]
        self.num_groups = len(self.groups)
        agent_group = [0] * self.A
        for g, group in enumerate(self.groups):
            for a in group.agents:
                agent_group[a] = g
        self.slot_group, self.slot_local = group_slots(agent_group, self.E)
        self._place = [(g, int(self.slot_local[a]), len(self.groups[g].agents)) for a, g in enumerate(agent_group)]
        """Agent a's (group, rank in it, the group's agents): its slot in env e is ``e * agents + rank``."""
        self.single_observation_space = self.groups[0].observation_space
        self.single_action_space = self.groups[0].action_space
        env0 = self.envs[0]
        seen = [agent_observation(env0, agent, env_id) for agent in self.agents]
        self._encodings = [found for _, found in seen]
        """Each agent's observation encoding (raylab/envs/spaces.py), None for a Box: applied before anything else."""
        self._dims = [int(np.prod(space.shape or ())) if groups[g].padded else None
                      for (space, _), g in zip(seen, agent_group, strict=True)]  # fmt: skip
        """Each padded agent's own observation size: its slot keeps zeros after it."""
        self._padded = [np.zeros(groups[g].observation_space.shape or (), groups[g].observation_space.dtype)
                        if self._frames[g].active and groups[g].padded else None for g in agent_group]  # fmt: skip
        """A padded agent's observation before its group's frame preprocessing."""
        self._send = [self._sender(env0.action_space(agent), self.groups[g].action_space)
                      for agent, g in zip(self.agents, agent_group, strict=True)]  # fmt: skip
        self.limit, self.clip, self.scale = max_episode_steps, reward_clip, reward_scale
        self.name = name
        self.restarts = 0
        self._obs: list[np.ndarray] = []
        for group in self.groups:
            shape, dtype = group.observation_space.shape, group.observation_space.dtype
            assert shape is not None and dtype is not None
            self._obs.append(np.zeros((self.E * len(group.agents), *shape), dtype))
        self._present = np.zeros((self.E, self.A), bool)
        self._return = np.zeros((self.E, self.A))
        self._length = np.zeros((self.E, self.A), np.int64)
        self._steps = np.zeros(self.E, np.int64)
        self._seeded = False

    @staticmethod
    def _sender(raw: gym.Space, shown: gym.Space) -> Callable[[Any], Any] | None:
        """How an agent's action goes to its env: as is (None), clipped to its Box (the Gaussian policy samples
        unbounded actions, as ClipAction does for single-agent envs), or one_hot (env.discrete_agents)."""
        if isinstance(shown, gym.spaces.Discrete) and isinstance(raw, gym.spaces.Box):
            eye = np.eye(int(shown.n), dtype=raw.dtype)
            return lambda k: eye[int(k)]
        if isinstance(raw, gym.spaces.Box):
            low, high = raw.low, raw.high
            return lambda a: np.clip(a, low, high).astype(raw.dtype, copy=False)
        return None

    def reset(self) -> np.ndarray:
        assert len(self.groups) == 1, "agents of several space groups: call reset_groups"
        return self.reset_groups()[0]

    def reset_groups(self) -> tuple[np.ndarray, ...]:
        for e in range(self.E):
            self._reset(e, self.seeds[e] if not self._seeded else None)
        self._seeded = True
        return tuple(self._obs)

    def _crashed(self, e: int, err: Exception) -> None:
        """Env ``e`` raised in ``step``: rebuild it (a fresh seed, so it does not replay into the same crash) and
        reset it, as raylab.envs.vector.SerialVectorEnv does; a deterministic crash stops the run."""
        count_crash(self._crash_streak, e, self.name, err)
        rebuild_env(self, e, "step", err, lambda seed: self._reset(e, seed))

    def _put(self, e: int, a: int, obs: Any, first: bool = False) -> np.ndarray:
        """Write agent ``a``'s observation in env ``e`` into its group's batch (``first``: of its episode); its
        row there."""
        g, rank, count = self._place[a]
        row = self._obs[g][e * count + rank]
        found = self._encodings[a]
        dim = self._dims[a]
        frames = self._frames[g]
        if found is not None:
            if not frames.active:  # encoded straight into its row: no array per agent step
                found.write(obs, row if dim is None else row[:dim])
                return row
            obs = encode(found, obs)
        if frames.active:
            padded = self._padded[a]
            if padded is not None:
                padded[:dim] = obs
                obs = padded
            frames.put(row, np.asarray(obs), first)
        elif dim is None:
            row[...] = obs
        else:
            row[:dim] = obs
        return row

    def _reset(self, e: int, seed: int | None) -> None:
        obs, _ = self.envs[e].reset(seed=seed)
        self._present[e] = [agent in obs for agent in self.agents]
        for a, agent in enumerate(self.agents):
            if agent in obs:
                self._put(e, a, obs[agent], first=True)
        self._return[e], self._length[e], self._steps[e] = 0.0, 0, 0

    def step(self, actions: np.ndarray) -> VectorStep:
        assert len(self.groups) == 1, "agents of several space groups: call step_groups"
        step = self.step_groups((actions,))
        return VectorStep(step.obs[0], *step[1:])

    def step_groups(self, actions: Sequence[np.ndarray]) -> GroupStep:
        A = self.A
        rewards = np.zeros(self.num_envs, np.float32)
        terminated = np.zeros(self.num_envs, bool)
        truncated = np.zeros(self.num_envs, bool)
        absent = np.zeros(self.num_envs, bool)
        final_obs: list[tuple[int, np.ndarray]] = []
        episodes: list[tuple[int, dict[str, float]]] = []
        for e, env in enumerate(self.envs):
            present = self._present[e]
            acting = {agent: self._action(actions, e, a) for a, agent in enumerate(self.agents) if present[a]}
            try:
                obs, rew, term, trunc, _ = env.step(acting)
            except Exception as err:  # the env crashed: rebuild it, drop its agents' partial episodes
                self._crashed(e, err)
                absent[e * A : (e + 1) * A] = truncated[e * A : (e + 1) * A] = True
                continue
            self._crash_streak[e] = 0
            self._steps[e] += 1
            timeout = self.limit is not None and self._steps[e] >= self.limit
            remaining = set(env.agents)
            for a, agent in enumerate(self.agents):
                slot = e * A + a
                if not present[a]:
                    absent[slot] = truncated[slot] = True
                    continue
                reward = float(rew.get(agent, 0.0))
                rewards[slot] = reward
                self._return[e, a] += reward
                self._length[e, a] += 1
                row = self._put(e, a, obs[agent]) if agent in obs else self._row(e, a)
                ends_term = bool(term.get(agent, False))
                ends_trunc = not ends_term and (bool(trunc.get(agent, False)) or timeout or agent not in remaining)
                if ends_term or ends_trunc:
                    terminated[slot], truncated[slot] = ends_term, ends_trunc
                    if ends_trunc:
                        final_obs.append((slot, row.copy()))
                    episodes.append((slot, {"return": float(self._return[e, a]), "length": float(self._length[e, a])}))
                    present[a] = False
            if timeout or not present.any():
                self._reset(e, None)
        rewards = transform_reward(rewards, self.clip, self.scale)
        return GroupStep(
            tuple(self._obs), rewards, terminated, truncated, final_obs, episodes, absent if absent.any() else None
        )

    def _row(self, e: int, a: int) -> np.ndarray:
        g, rank, count = self._place[a]
        return self._obs[g][e * count + rank]

    def _action(self, actions: Sequence[np.ndarray], e: int, a: int) -> Any:
        g, rank, count = self._place[a]
        action = actions[g][e * count + rank]
        send = self._send[a]
        return action if send is None else send(action)

    def close(self) -> None:
        for env in self.envs:
            with contextlib.suppress(Exception):
                env.close()

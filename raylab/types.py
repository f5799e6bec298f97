"""The data that moves between components, as typed dataclasses of numpy arrays (never string-keyed dicts).

Everything here is plain, picklable and cheap to send through Ray's object store: numpy arrays travel
zero-copy, observations keep the dtype the env gives (uint8 frames stay uint8).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import numpy as np

from raylab.metrics.numbers import fmt_return


@dataclass(frozen=True)
class ObsPart:
    """One key of a Tuple or Dict observation that holds an image, in the flat row it is encoded into
    (raylab/envs/spaces.py): elements ``start:stop`` of the row. An ``image`` part is ``shape`` (C, H, W), its
    values 0-255; a ``vector`` part is ``shape`` (n,) of floats (one-hots, bits, numbers)."""

    key: str
    kind: str
    start: int
    stop: int
    shape: tuple[int, ...]


@dataclass(frozen=True)
class EnvSpaces:
    """What builders need to know about an env, without holding one (raylab.envs.env_spaces describes one)."""

    obs_shape: tuple[int, ...]
    obs_dtype: np.dtype
    num_actions: int | None
    """Number of discrete actions; None for continuous action spaces."""
    action_space: str
    """repr of the action space, for error messages."""
    frames_per_step: int = 1
    """Emulator frames per agent step (frame skip), to report env frames/s beside agent steps/s."""
    action_dim: int | None = None
    """Size of a continuous (one-dimensional Box) action; None for discrete actions."""
    agents: int = 1
    """Agents per env: a multi-agent env fills this many of a worker's slots (raylab/envs/multiagent.py), so a
    worker steps ``topology.envs_per_worker * agents`` slots, one policy acting for all of them."""
    agent_ids: tuple[str, ...] = ()
    """The agents of one env in slot order (a multi-agent env's ``possible_agents``; the arena's ``snake_<n>``);
    empty for a single-agent env. ``policy_mapping`` patterns match these."""
    groups: tuple[EnvSpaces, ...] = ()
    """A multi-agent env whose agents differ in spaces: one EnvSpaces per *space group* (agents of one
    observation and action space, ``agent_ids`` in slot order; raylab/envs/multiagent.py), and the fields
    above are then the first group's; empty when every agent shares one space (the fields above are all
    agents'). Each policy acts for agents of one group and is built with its group's spaces
    (raylab.config.policies.policy_spaces)."""
    action_bounds: tuple[tuple[float, ...], tuple[float, ...]] | None = None
    """(low, high) of a Box action space; None for discrete actions."""
    action_nvec: tuple[int, ...] | None = None
    """The categories of each entry of a MultiDiscrete action (a MultiBinary one: 2 each), acted by a product of
    categoricals (PPO, APPO, A3C); None for Discrete and Box actions."""
    obs_parts: tuple[ObsPart, ...] = ()
    """The parts of an observation whose Tuple or Dict holds an image (``obs_shape`` is then the flat uint8 row
    they are encoded into, raylab/envs/spaces.py): the model encodes each part by its kind
    (raylab.models.keyed.KeyedEncoder). Empty for every other observation."""

    @property
    def continuous(self) -> bool:
        return self.action_dim is not None

    def slots(self, envs: int) -> int:
        """Slots (agent streams) of ``envs`` envs: the batch a worker's policy acts on."""
        return envs * self.agents

    def agent_groups(self) -> tuple[int, ...]:
        """The space group of each agent (slot order); all 0 without groups."""
        if not self.groups:
            return (0,) * self.agents
        return tuple(next(g for g, grp in enumerate(self.groups) if a in grp.agent_ids) for a in self.agent_ids)

    def slot_layout(self, envs: int) -> tuple[np.ndarray, np.ndarray]:
        """Each of ``envs`` envs' slots' space group and its index among that group's slots
        (``group_slots``)."""
        return group_slots(self.agent_groups(), envs)


def group_slots(agent_group: Sequence[int], envs: int) -> tuple[np.ndarray, np.ndarray]:
    """``(slot_group, slot_local)`` of ``envs`` envs whose agent a is in space group ``agent_group[a]``: slot
    ``e * A + a`` is group g's slot ``e * A_g + r``, where A_g counts g's agents and r is a's rank among them.
    One group: slot_local is the slot itself."""
    group = np.asarray(agent_group, np.int64)
    counts = np.bincount(group)
    rank = np.array([int(np.sum(group[:a] == group[a])) for a in range(len(group))], np.int64)
    env = np.repeat(np.arange(envs, dtype=np.int64), len(group))
    slot_group = np.tile(group, envs)
    return slot_group, env * counts[slot_group] + np.tile(rank, envs)


@dataclass
class Chunk:
    """Experience from one rollout call: ``T`` steps of ``E`` envs of one worker.

    ``obs[t]`` is the observation the action ``actions[t]`` was taken in; ``obs[T]`` is the observation after
    the last step (the next chunk starts from it). Envs reset themselves: after a step that ends an episode,
    ``obs[t + 1]`` is the first observation of the next episode, and when the episode was *truncated* its real
    last observation is kept in ``final_obs`` (row k belongs to step ``final_index[k] = (t, e)``) so that
    targets can bootstrap from it.
    """

    obs: np.ndarray
    actions: np.ndarray
    rewards: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray
    final_obs: np.ndarray
    final_index: np.ndarray
    policy_version: int
    worker_id: int
    seq: int
    """Chunk counter of this worker; a gap means the worker restarted and the stream must not be joined."""
    restarted: np.ndarray | None = None
    """[T, E] bool, or None when nothing crashed: the env crashed at step t and was rebuilt, so that step has
    no real outcome (truncated is set, reward 0); targets must not use it or anything before it."""
    log_probs: np.ndarray | None = None
    """[T, E] log-probabilities of the actions under the policy that acted (behaviour policy), when it has
    them: APPO's V-trace corrects for the learner having moved on since."""
    initial_state: np.ndarray | None = None
    """[E, S] float32, a recurrent policy's (model.recurrent): the state each slot acted from at step 0
    (zeros where an episode starts there); None for a feed-forward policy. Inside the chunk the state restarts
    from zeros after every step that ended an episode (terminated, truncated or crashed), so the learner
    replays the chunk from these rows alone."""
    core_states: np.ndarray | None = None
    """[K, S] float32, R2D2's sequence start states (a worker with ``record_state_every``): row k is the state
    slot ``core_index[k, 1]`` acts from at step ``core_index[k, 0]`` (in [1, T]; T is the next chunk's step 0),
    recorded every ``record_state_every`` steps into each episode; None when not recorded."""
    core_index: np.ndarray | None = None
    """[K, 2] int64 (t, e) of ``core_states``."""

    @property
    def num_steps(self) -> int:
        return int(self.actions.shape[0])

    @property
    def num_envs(self) -> int:
        return int(self.actions.shape[1])

    @property
    def size(self) -> int:
        """Agent steps in the chunk."""
        return self.num_steps * self.num_envs


@dataclass
class Transitions:
    """Flat n-step transitions, ready for replay: ``discount`` is ``gamma ** k``, or 0 after a terminal."""

    obs: np.ndarray
    actions: np.ndarray
    rewards: np.ndarray
    discounts: np.ndarray
    next_obs: np.ndarray

    def __len__(self) -> int:
        return int(self.actions.shape[0])


@dataclass
class Batch:
    """A learner batch: transitions plus, for prioritized replay, their indices and importance weights."""

    obs: np.ndarray
    actions: np.ndarray
    rewards: np.ndarray
    discounts: np.ndarray
    next_obs: np.ndarray
    indices: np.ndarray | None = None
    weights: np.ndarray | None = None

    def __len__(self) -> int:
        return int(self.actions.shape[0])


@dataclass
class SequenceBatch:
    """An R2D2 learner batch of ``B`` sequences of ``m = burn_in + trace`` steps (raylab/replay/sequences.py)
    plus, for prioritized replay, their keys and importance weights."""

    obs: np.ndarray
    """[B, m + 1, ...]: the observations, ``obs[length]`` the bootstrap one, padded after it."""
    actions: np.ndarray
    """[B, m]."""
    rewards: np.ndarray
    """[B, m]."""
    state: np.ndarray
    """[B, S]: the recurrent state the policy acted from at each sequence's first step."""
    burn_in: np.ndarray
    """[B]: warm-up steps of each sequence (no loss on them)."""
    length: np.ndarray
    """[B]: real steps of each sequence."""
    terminal: np.ndarray
    """[B]: the episode terminated at step ``length - 1``."""
    indices: np.ndarray | None = None
    weights: np.ndarray | None = None

    def __len__(self) -> int:
        return int(self.actions.shape[0])


@dataclass
class Episodes:
    """Episodes finished during a rollout call."""

    returns: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float64))
    lengths: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    extras: dict[str, np.ndarray] = field(default_factory=dict)
    """Family-specific final values per episode (Mario x_pos and flag_get, Snake snake_length)."""

    def __len__(self) -> int:
        return int(self.returns.shape[0])


@dataclass
class RolloutStats:
    """What the driver needs to know about a chunk without touching the chunk itself."""

    worker_id: int
    num_steps: int
    """Agent steps in the chunk."""
    policy_version: int
    episodes: Episodes
    timings: dict[str, float]
    """Seconds per stage spent producing this chunk: env, inference, weight_sync, and wait (since the
    previous chunk was handed back: parked by the rate limiter, queued behind the driver or the learner)."""
    env_restarts: int = 0
    """Envs rebuilt after a crash while producing this chunk."""
    lags: list[int] | None = None
    """Policy lags measured where the update happened (A3C: server version minus the gradient's version,
    per push); None lets the driver measure learner version minus ``policy_version``."""
    epsilon: float | None = None
    """Epsilon-greedy workers: the mean exploration rate over this worker's env slots at the chunk's end."""
    life: int = 0
    """Ray's restart count when the rollout actor that made this chunk started (raylab.driver.restarts
    counts a restart by it even when the crash happened between calls and no call failed)."""
    policies: list[PolicyRollout] | None = None
    """A run with several policies: each policy's part of the chunk (its steps, version, episodes), in the
    run's policy order; None with one policy."""
    inference_life: int | None = None
    """Central inference (topology.inference=central): the newest life of the inference actor this worker
    heard from (the driver counts that actor's restarts by it); None: the worker acts with its own policy."""
    inference_actor: int | None = None
    """Which inference actor that is (``inference_<k>``): the first on the worker's machine, its own else."""


@dataclass
class PolicyRollout:
    """One policy's part of a rollout call (raylab/rollout/policies.py)."""

    num_steps: int
    policy_version: int
    episodes: Episodes


@dataclass
class Weights:
    """Inference weights of one policy version, as CPU numpy arrays (zero-copy through Ray)."""

    version: int
    params: dict[str, np.ndarray]


@dataclass
class Priorities:
    """New |TD errors| of sampled replay items, by item key (what prioritized replay updates)."""

    keys: np.ndarray
    td_errors: np.ndarray

    def __len__(self) -> int:
        return len(self.keys)


@dataclass
class LearnerStats:
    """Summary of one learner call (``updates`` updates)."""

    updates: int
    samples: int
    version: int
    metrics: dict[str, float]
    seconds: float
    published: bool = False
    """True when this call published new weights (the caller then fetches them once)."""
    priorities: Priorities | None = None
    """DQN with prioritized replay: the sampled items' new |TD errors| (for the replay, not the driver)."""
    timings: dict[str, float] | None = None
    """Seconds per learner stage, each name ending in _s: batch_wait_s (inside the call, waiting for the
    prefetched batch), wait_s (before the call, since the previous one returned: the driver, the replay's
    batch transfer), publish_s (putting the new weights, Ray hosts only)."""
    life: int = 0
    """Ray's restart count when the learner actor that answered started (raylab.driver.restarts)."""


@dataclass(frozen=True)
class EpisodeVideo:
    """One recorded greedy episode, encoded where it was played (eval.video): the file's bytes travel, not the
    frames."""

    data: bytes
    fmt: str
    """The file type: mp4 (H.264) or gif."""
    frames: int
    fps: int
    stats: Mapping[str, float]
    """The episode's statistics (return, length, the family's extras such as Mario's x_pos and flag_get)."""


@dataclass
class EvalResult:
    """A greedy evaluation of one policy version."""

    version: int
    returns: np.ndarray
    lengths: np.ndarray
    policies: dict[str, np.ndarray] | None = None
    """A run with several policies: each policy's episode returns (its agents' episodes among ``returns``)."""
    extras: dict[str, np.ndarray] = field(default_factory=dict)
    """The env family's final values per episode, in the order of ``returns`` (Mario: x_pos, flag_get)."""
    video: EpisodeVideo | None = None
    """eval.video: one more greedy episode of the same weights, recorded (not among ``returns``)."""
    starts: np.ndarray | None = None
    """eval.starts=every: each episode's no-op start, in the order of ``returns`` (None: drawn at random)."""

    @property
    def mean(self) -> float:
        return float(self.returns.mean()) if self.returns.size else float("nan")

    @property
    def std(self) -> float:
        return float(self.returns.std()) if self.returns.size else float("nan")

    def extra_means(self) -> dict[str, float]:
        """Each episode value's mean (Mario's flag_get mean is the flag rate)."""
        return {key: float(values.mean()) for key, values in self.extras.items() if values.size}


@dataclass(frozen=True)
class EvalTarget:
    """What a greedy evaluation must reach to stop a run: stop.mean_return, or every one of stop.eval_extras
    (episode values' means, e.g. Mario's flag rate {flag_get: 0.8}). Either one is met on its own."""

    mean_return: float | None = None
    extras: Mapping[str, float] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return self.mean_return is not None or bool(self.extras)

    def met(self, result: EvalResult) -> bool:
        if self._return_met(result):
            return True
        means = result.extra_means()
        return bool(self.extras) and all(key in means and means[key] >= at for key, at in self.extras.items())

    def _return_met(self, result: EvalResult) -> bool:
        return self.mean_return is not None and bool(result.returns.size) and result.mean >= self.mean_return

    def describe(self, result: EvalResult) -> str:
        """Why ``result`` meets it, for the stop reason."""
        if self._return_met(result):
            assert self.mean_return is not None
            return f"eval return {fmt_return(result.mean)} >= stop.mean_return={self.mean_return:g}"
        means = result.extra_means()
        return ", ".join(
            f"eval {key} mean {means[key]:.3g} >= stop.eval_extras.{key}={at:g}" for key, at in self.extras.items()
        )


class Policy(Protocol):
    """What a rollout worker needs from a policy: batched actions and versioned weights."""

    @property
    def version(self) -> int:
        """The version of the weights it acts with (-1 before any)."""
        ...

    last_log_probs: np.ndarray | None
    """Log-probabilities of the actions the last ``act`` returned, for off-policy corrections (APPO's
    V-trace); None for policies without them (epsilon-greedy)."""

    def act(self, obs: np.ndarray) -> np.ndarray: ...

    def set_weights(self, weights: Weights, exact: bool = False) -> bool:
        """Load newer weights (``exact``: any other version, older ones too); whether it loaded them."""
        ...


@runtime_checkable
class Stateful(Protocol):
    """A policy with memory (raylab/models/recurrent.py): a state per slot that ``act`` reads and advances."""

    @property
    def state_size(self) -> int:
        """Floats of state per slot; 0 for a policy without memory."""
        ...

    def states(self, num: int) -> np.ndarray | list[np.ndarray | None] | None:
        """A copy of the state each of ``num`` slots acts from next (zeros before its first step); a PolicySet
        gives one per policy (None for a policy without memory)."""
        ...

    def reset_states(self, done: np.ndarray) -> None:
        """Zero the state of the slots where ``done [N]`` (an episode ended there): their next step starts one."""
        ...

"""Greedy evaluation of a policy version on its own envs (seeded apart from the training envs)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, cast

import numpy as np

from raylab.envs.vector import GroupedVectorEnv, VectorEnv, space_group_count
from raylab.envs.wrappers import START_KEY
from raylab.rollout.policies import Policy, PolicySet
from raylab.types import EpisodeVideo, EvalResult, EvalTarget, Stateful, Weights


class Evaluator:
    """Runs exactly ``episodes`` fresh episodes, spread evenly over its envs.

    Each env gets a quota of episodes fixed up front, so short episodes are not over-counted (collecting
    the first N episodes to finish would bias the mean towards failures).
    """

    def __init__(
        self,
        env: VectorEnv,
        policy: Policy,
        policy_names: Sequence[str] | None = None,
        recorder: Callable[[Weights], EpisodeVideo | None] | None = None,
        starts: int | None = None,
    ):
        """``policy`` a PolicySet: ``policy_names`` name its policies, and each result holds each policy's returns.
        ``recorder`` (eval.video): records one more episode of the weights each evaluation is handed.
        ``starts`` (eval.starts=every): how many no-op starts the envs share out, each env playing its own in
        turn; an evaluation then counts each start equally often, by the start each episode reports."""
        self.env = env
        self.recorder = recorder
        self.starts = starts
        self.policy = policy
        self.names = list(policy_names) if policy_names is not None else None
        self.slot_policy: np.ndarray | None = None
        self.grouped = cast(GroupedVectorEnv, env) if space_group_count(env) > 1 else None
        """Agents of several space groups: ``_grouped_episodes`` steps them."""
        if isinstance(policy, PolicySet):
            assert self.names is not None and len(self.names) == len(policy.policies)
            self.slot_policy = np.empty(policy.num_slots, np.int64)
            for k, idx in enumerate(policy.slots):
                self.slot_policy[idx] = k

    def evaluate(
        self,
        weights: Weights | Sequence[Weights | None] | None,
        episodes: int,
        target: EvalTarget | None = None,
        confirm_episodes: int = 0,
    ) -> EvalResult:
        """Mean over ``episodes``; if they meet ``target``, ``confirm_episodes`` more of the same weights are
        run and the result holds all of them, so a lucky handful of episodes cannot stop a run. A PolicySet
        takes one Weights per policy."""
        if isinstance(self.policy, PolicySet):
            assert weights is not None and not isinstance(weights, Weights)
            self.policy.load(weights, exact=True)  # the version handed, even an older one (best.pt)
        elif weights is not None:
            assert isinstance(weights, Weights)
            self.policy.set_weights(weights, exact=True)
        done = self._episodes(episodes)
        if target and confirm_episodes > 0 and target.met(self._result(done)):
            done.extend(self._episodes(confirm_episodes))
        result = self._result(done)
        if self.recorder is not None and isinstance(weights, Weights):
            result.video = self.recorder(weights)
        return result

    def _result(self, done: _Done) -> EvalResult:
        returns, slots = np.array(done.returns), np.array(done.slots, np.int64)
        by_policy = None
        if self.slot_policy is not None and self.names is not None:
            owner = self.slot_policy[slots]
            by_policy = {name: returns[owner == k] for k, name in enumerate(self.names)}
        # the values every episode reported (a family's extras: Mario's x_pos and flag_get)
        keys = set.intersection(*(set(stats) for stats in done.stats)) - {"return", "length"} if done.stats else set()
        starts = None
        if START_KEY in keys:  # eval.starts=every: which start each episode played
            keys.discard(START_KEY)
            starts = np.array([int(stats[START_KEY]) for stats in done.stats], np.int64)
        extras = {k: np.array([float(stats[k]) for stats in done.stats]) for k in sorted(keys)}
        return EvalResult(self.policy.version, returns, np.array(done.lengths), by_policy, extras, starts=starts)

    def _episodes(self, episodes: int) -> _Done:
        ledger: _Ledger = (
            _StartLedger(self.starts, episodes) if self.starts else _EnvLedger(self.env.num_envs, episodes)
        )
        if self.grouped is not None:
            return self._grouped_episodes(self.grouped, ledger)
        done = _Done()
        obs = self.env.reset()
        memory = self.policy if isinstance(self.policy, Stateful) and self.policy.state_size > 0 else None
        if memory is not None:  # a recurrent policy: every episode starts from zeros
            memory.reset_states(np.ones(len(obs), bool))
        while ledger.owed():
            step = self.env.step(self.policy.act(obs))
            obs = step.obs
            if memory is not None:
                memory.reset_states(step.terminated | step.truncated)
            for i, stats in step.episodes:  # raw game returns (before reward clipping/scaling)
                if ledger.take(i, stats):
                    done.add(i, stats)
        return done

    def _grouped_episodes(self, env: GroupedVectorEnv, ledger: _Ledger) -> _Done:
        """``_episodes`` for agents of several space groups: one observation and action batch per group."""
        assert isinstance(self.policy, PolicySet)
        done = _Done()
        obs = env.reset_groups()
        memory = self.policy.state_size > 0
        if memory:  # recurrent policies: every episode starts from zeros
            self.policy.reset_states(np.ones(self.policy.num_slots, bool))
        while ledger.owed():
            step = env.step_groups(self.policy.act_groups(obs))
            obs = step.obs
            if memory:
                self.policy.reset_states(step.terminated | step.truncated)
            for i, stats in step.episodes:
                if ledger.take(i, stats):
                    done.add(i, stats)
        return done


class _Ledger(Protocol):
    """Which finished episodes an evaluation counts, and whether it still owes any."""

    def owed(self) -> bool: ...

    def take(self, slot: int, stats: Mapping[str, Any]) -> bool: ...


class _EnvLedger:
    """Drawn starts: each env owes a quota of episodes fixed up front (its first ones to finish)."""

    def __init__(self, num_envs: int, episodes: int):
        self.quota = np.full(num_envs, episodes // num_envs)
        self.quota[: episodes % num_envs] += 1

    def owed(self) -> bool:
        return bool(self.quota.any())

    def take(self, slot: int, stats: Mapping[str, Any]) -> bool:
        if self.quota[slot] <= 0:
            return False
        self.quota[slot] -= 1
        return True


class _StartLedger:
    """eval.starts=every: each no-op start owes ``episodes / starts`` episodes, counted by the start the episode
    reports. One env plays each start, in turn with its others, so a start's counted episodes are its env's
    first ones on it; an env rebuilt after a crash takes its starts from its first again, and the start whose
    episode the crash dropped is counted when the env comes round to it."""

    PATIENCE = 100
    """Episodes played per episode owed before the evaluation gives up on a start that never comes back."""

    def __init__(self, starts: int, episodes: int):
        if episodes % starts:
            raise ValueError(f"eval.starts=every evaluates whole rounds of {starts} starts, not {episodes} episodes")
        self.need = np.full(starts, episodes // starts)
        self.played, self.limit = 0, self.PATIENCE * episodes

    def owed(self) -> bool:
        return bool(self.need.any())

    def take(self, slot: int, stats: Mapping[str, Any]) -> bool:
        start = stats.get(START_KEY)
        if start is None:
            raise RuntimeError("an eval.starts=every episode came back without its no-op start")
        self.played += 1
        if self.played > self.limit:
            missing = np.flatnonzero(self.need).tolist()
            raise RuntimeError(
                f"the evaluation envs played {self.played} episodes and never came round to no-op starts {missing} "
                f"(their env crashes before it reaches them): evaluate with eval.starts=random"
            )
        if self.need[start] <= 0:
            return False
        self.need[start] -= 1
        return True


@dataclass
class _Done:
    """The episodes an evaluation finished: raw game returns, lengths, the env slot of each and its stats."""

    returns: list[float] = field(default_factory=list)
    lengths: list[int] = field(default_factory=list)
    slots: list[int] = field(default_factory=list)
    stats: list[Mapping[str, Any]] = field(default_factory=list)

    def add(self, slot: int, stats: Mapping[str, Any]) -> None:
        self.returns.append(float(stats["return"]))
        self.lengths.append(int(stats["length"]))
        self.slots.append(slot)
        self.stats.append(stats)

    def extend(self, more: _Done) -> None:
        self.returns += more.returns
        self.lengths += more.lengths
        self.slots += more.slots
        self.stats += more.stats

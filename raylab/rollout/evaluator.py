"""Greedy evaluation of a policy version on its own envs (seeded apart from the training envs)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

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
        start_rounds: Sequence[int] | None = None,
    ):
        """``policy`` a PolicySet: ``policy_names`` name its policies, and each result holds each policy's returns.
        ``recorder`` (eval.video): records one more episode of the weights each evaluation is handed.
        ``start_rounds`` (eval.starts=every): how many no-op starts each env takes in turn; an evaluation then
        asks each env for whole rounds of them, so that its episodes play every start equally often."""
        self.env = env
        self.recorder = recorder
        self.start_rounds = np.asarray(start_rounds, np.int64) if start_rounds is not None else None
        if self.start_rounds is not None and (len(self.start_rounds) != env.num_envs or (self.start_rounds < 1).any()):
            raise ValueError(f"start_rounds {list(self.start_rounds)} must give each of {env.num_envs} envs >= 1 start")
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
        num_envs = self.env.num_envs
        if self.start_rounds is not None:  # whole rounds of each env's starts: every start equally often
            total = int(self.start_rounds.sum())
            if episodes % total:
                raise ValueError(f"eval.starts=every evaluates whole rounds of {total} starts, not {episodes} episodes")
            quota = self.start_rounds * (episodes // total)
        else:
            quota = np.full(num_envs, episodes // num_envs)
            quota[: episodes % num_envs] += 1
        if self.grouped is not None:
            return self._grouped_episodes(self.grouped, quota)
        done = _Done()
        obs = self.env.reset()
        memory = self.policy if isinstance(self.policy, Stateful) and self.policy.state_size > 0 else None
        if memory is not None:  # a recurrent policy: every episode starts from zeros
            memory.reset_states(np.ones(len(obs), bool))
        while quota.any():
            step = self.env.step(self.policy.act(obs))
            obs = step.obs
            if memory is not None:
                memory.reset_states(step.terminated | step.truncated)
            for i, stats in step.episodes:  # raw game returns (before reward clipping/scaling)
                if quota[i] > 0:
                    quota[i] -= 1
                    done.add(i, stats)
        return done

    def _grouped_episodes(self, env: GroupedVectorEnv, quota: np.ndarray) -> _Done:
        """``_episodes`` for agents of several space groups: one observation and action batch per group."""
        assert isinstance(self.policy, PolicySet)
        done = _Done()
        obs = env.reset_groups()
        memory = self.policy.state_size > 0
        if memory:  # recurrent policies: every episode starts from zeros
            self.policy.reset_states(np.ones(self.policy.num_slots, bool))
        while quota.any():
            step = env.step_groups(self.policy.act_groups(obs))
            obs = step.obs
            if memory:
                self.policy.reset_states(step.terminated | step.truncated)
            for i, stats in step.episodes:
                if quota[i] > 0:
                    quota[i] -= 1
                    done.add(i, stats)
        return done


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

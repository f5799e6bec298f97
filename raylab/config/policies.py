"""Several policies in one run: which agent slots each policy acts for, and each policy's own RunConfig.

A multi-agent env fills ``spaces.agents`` slots per env (slot ``e * A + a`` is agent ``agent_ids[a]`` of env
e, raylab/envs/multiagent.py). ``policy_mapping`` sends each agent id to a policy, so a policy is a fixed set
of slots: a rollout worker acts for each policy's slots in one batched call and cuts each chunk into one
chunk per policy (raylab.rollout.policies), and each policy's chunks go to its own learner. With no
``policies`` there is one policy for every agent (parameter sharing) and nothing here changes a run.

A policy's config is the run's with its ``policies.<name>`` overrides of ``algo``, ``model``, ``learner`` and
``replay`` merged in (``policy_config``); its learner, replay, rollout networks and evaluation network are built
from it.
Torch-free: the config checks read it.
"""

from __future__ import annotations

import dataclasses
import fnmatch
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from raylab.config.algorithms import ALGORITHMS
from raylab.config.applicability import check_applicable
from raylab.config.coerce import build, plain
from raylab.config.schema import RunConfig
from raylab.errors import ConfigError
from raylab.types import EnvSpaces

SEED_STRIDE = 7919
"""Policy k's networks and sampling are seeded ``seed + k * SEED_STRIDE``: independent policies start apart."""
SHARED = "shared"
"""The name of a run's one policy when it has no ``policies`` (it reports no ``policy/<name>/`` keys)."""
MULTI_POLICY_ALGOS = ("dqn", "ppo", "appo")


@dataclass(frozen=True)
class PolicyMap:
    """Policy names and, for each agent of one env (slot order), the index of the policy acting for it."""

    names: tuple[str, ...]
    agent_policy: tuple[int, ...]

    @property
    def several(self) -> bool:
        return len(self.names) > 1

    @property
    def agents(self) -> int:
        return len(self.agent_policy)

    def slot_policy(self, envs: int) -> np.ndarray:
        """The policy index of each of ``envs * agents`` slots."""
        return np.tile(np.asarray(self.agent_policy, np.int64), envs)

    def slots(self, policy: int, envs: int) -> np.ndarray:
        """The slots (ascending) policy ``policy`` acts for among ``envs`` envs' slots."""
        return np.flatnonzero(self.slot_policy(envs) == policy)

    def slot_count(self, policy: int, envs: int) -> int:
        return envs * sum(1 for p in self.agent_policy if p == policy)


def check_policies(cfg: RunConfig) -> None:
    """What can be checked before any env is built (raylab/config/checks.py): the mapping names known
    policies, the algorithm runs several, and each policy's overrides make a valid config."""
    if not cfg.policies:
        if cfg.policy_mapping:
            raise ConfigError(
                "policy_mapping is set but policies is empty: add '+policies.<name>={}' for each policy it names"
            )
        return
    if cfg.algo.name not in MULTI_POLICY_ALGOS:
        raise ConfigError(
            f"algo={cfg.algo.name} runs one policy for every agent (parameter sharing): remove policies and "
            f"policy_mapping, or use algo={' or algo='.join(MULTI_POLICY_ALGOS)} for several policies"
        )
    if not cfg.policy_mapping:
        raise ConfigError(
            f"policies {', '.join(cfg.policies)} need policy_mapping: set policy_mapping.<agent-id pattern>=<policy>"
        )
    for pattern, name in cfg.policy_mapping.items():
        if name not in cfg.policies:
            raise ConfigError(
                f"policy_mapping.{pattern}={name} names no policy: use one of {', '.join(cfg.policies)} or add "
                f"'+policies.{name}={{}}'"
            )
    for name in cfg.policies:
        if not name.isidentifier():
            raise ConfigError(f"policy name {name!r} must be an identifier (letters, digits, _): rename it")
        check_applicable(policy_config(cfg, name), f"policies.{name}.")


def policy_map(cfg: RunConfig, spaces: EnvSpaces) -> PolicyMap:
    """The run's policies and which agent each acts for; ConfigError naming the fix for an agent no pattern
    covers, a policy that acts for no agent, several policies on a single-agent env, or a policy whose agents
    differ in spaces (each policy's agents must share one space group, EnvSpaces.groups)."""
    if not cfg.policies:
        if spaces.groups:
            raise ConfigError(
                f"{cfg.env.id}'s agents differ in spaces ({_describe(spaces.groups)}) and one policy acts for all of "
                f"them: give each kind its own policy (+policies.<name>={{}} and +policy_mapping.<agent pattern>="
                f"<name>){_pad_hint(cfg, spaces.groups)}"
            )
        return PolicyMap((SHARED,), (0,) * spaces.agents)
    if not spaces.agent_ids:
        raise ConfigError(
            f"policies need a multi-agent env (env={cfg.env.family} has one agent): remove policies and "
            f"policy_mapping, or choose env=snake_arena or env=pettingzoo"
        )
    names = tuple(cfg.policies)
    agent_policy = []
    for agent in spaces.agent_ids:
        match = next(
            (name for pattern, name in cfg.policy_mapping.items() if fnmatch.fnmatchcase(agent, pattern)), None
        )
        if match is None:
            raise ConfigError(
                f"agent {agent} matches no policy_mapping pattern ({', '.join(cfg.policy_mapping)}): add "
                f"policy_mapping.{agent}=<policy> or a pattern that covers it (agents: {', '.join(spaces.agent_ids)})"
            )
        agent_policy.append(names.index(match))
    for k, name in enumerate(names):
        if k not in agent_policy:
            raise ConfigError(
                f"policy {name} acts for no agent (agents: {', '.join(spaces.agent_ids)}): map an agent to it in "
                f"policy_mapping, or remove policies.{name}"
            )
    agent_group = spaces.agent_groups()
    for k, name in enumerate(names):
        spanned = sorted({g for g, p in zip(agent_group, agent_policy, strict=True) if p == k})
        if len(spanned) > 1:
            groups = tuple(spaces.groups[g] for g in spanned)
            raise ConfigError(
                f"agents of one policy must share spaces, and policy {name}'s differ ({_describe(groups)}): map "
                f"them to different policies in policy_mapping{_pad_hint(cfg, groups)}"
            )
    return PolicyMap(names, tuple(agent_policy))


def _describe(groups: tuple[EnvSpaces, ...]) -> str:
    """``adversary_0, adversary_1: obs (16,) float32, actions Box(...); agent_0: ...``"""
    return "; ".join(
        f"{', '.join(g.agent_ids)}: obs {g.obs_shape} {g.obs_dtype}, actions {g.action_space}" for g in groups
    )


def _pad_hint(cfg: RunConfig, groups: tuple[EnvSpaces, ...]) -> str:
    """The padding alternative, where it applies: agents of one action space and one-dimensional observations."""
    one_action = all(g.action_space == groups[0].action_space for g in groups)
    vectors = all(len(g.obs_shape) == 1 and g.obs_dtype == groups[0].obs_dtype for g in groups)
    if cfg.env.pad_observations or not (one_action and vectors):
        return ""
    return ", or set env.pad_observations=true to zero-pad their observations to the largest"


def policy_spaces(cfg: RunConfig, spaces: EnvSpaces, name: str) -> EnvSpaces:
    """``spaces`` as policy ``name`` sees them: one env holds only its agents (its batches, epsilon ladder and
    replay rate limits are sized by its own slots), and, when the env's agents differ in spaces, the spaces are
    its agents' own (their space group's: its network, replay and learner are built with them)."""
    if not cfg.policies:
        return spaces
    pmap = policy_map(cfg, spaces)
    k = pmap.names.index(name)
    mine = [a for a, p in enumerate(pmap.agent_policy) if p == k]
    ids = tuple(spaces.agent_ids[a] for a in mine)
    own = spaces.groups[spaces.agent_groups()[mine[0]]] if spaces.groups else spaces
    return dataclasses.replace(own, agents=len(ids), agent_ids=ids, groups=())


def check_policy_spaces(cfg: RunConfig, spaces: EnvSpaces) -> None:
    """Each policy's algorithm acts in its own agents' action space: DQN's Q head in Discrete ones only (one line
    naming the fix; a bad mapping fails here too)."""
    info = ALGORITHMS[cfg.algo.name]
    for name in policy_map(cfg, spaces).names:
        own = policy_spaces(cfg, spaces, name)
        if own.action_nvec is not None and not info.continuous_actions:
            raise ConfigError(
                f"algo={cfg.algo.name} acts in one Discrete action space but {cfg.env.id} has {own.action_space} "
                f"actions: use algo=ppo / appo / a3c (a categorical per entry)"
            )
        if own.continuous and not info.continuous_actions:
            if not cfg.policies:
                raise ConfigError(
                    f"algo={cfg.algo.name} needs discrete actions but {cfg.env.id} has {own.action_space}: "
                    f"choose an env with a Discrete action space, or algo=ppo / appo / a3c (Gaussian policy)"
                )
            raise ConfigError(
                f"algo={cfg.algo.name} needs discrete actions but policy {name}'s agents ({', '.join(own.agent_ids)}) "
                f"have {own.action_space}: show them as Discrete with env.discrete_agents (Box(0, 1, (d,)) actions), "
                f"or use algo=ppo / appo (Gaussian policy)"
            )


def policy_config(cfg: RunConfig, name: str) -> RunConfig:
    """The run's config as policy ``name`` sees it: its overrides merged into algo, model, learner and replay, its own
    seed, and no ``policies`` (its learner and networks are one policy's)."""
    if not cfg.policies:
        return cfg
    overrides = cfg.policies[name]
    sections: dict[str, Any] = {}
    for section in ("algo", "model", "learner", "replay"):
        current = getattr(cfg, section)
        changes = getattr(overrides, section)
        if section == "replay" and changes.get("num_shards", cfg.replay.num_shards) != cfg.replay.num_shards:
            raise ConfigError(
                f"policies.{name}.replay.num_shards: every policy has the run's replay.num_shards="
                f"{cfg.replay.num_shards}; remove policies.{name}.replay.num_shards"
            )
        if section == "algo" and changes.get("name", cfg.algo.name) != cfg.algo.name:
            raise ConfigError(
                f"policies.{name}.algo.name={changes['name']}: every policy runs the run's algo={cfg.algo.name}; "
                f"remove policies.{name}.algo.name"
            )
        data = _merge(plain(dataclasses.asdict(current)), changes)
        sections[section] = build(type(current), data, f"policies.{name}.{section}")
    index = list(cfg.policies).index(name)
    return dataclasses.replace(cfg, **sections, seed=cfg.seed + index * SEED_STRIDE, policies={}, policy_mapping={})


def _merge(base: dict[str, Any], changes: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in changes.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out

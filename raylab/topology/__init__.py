"""Topologies: one file each, its dataflow drawn in its docstring. The Ray ones are ``Flow``s that the one
driver loop (raylab.driver.loop) runs: they declare their actors, what to submit when, and their job types
(shared ones in topology/jobs.py; Ape-X's in apex_jobs.py; A3C's parameter server in a3c_server.py).

local     serial: every component in one process, no Ray          (topology/local.py)
apex_dqn  Ape-X DQN: rollout actors, replay actor, learner actor   (topology/apex_dqn.py)
a3c       A3C: self-driven workers push gradients to server shards (topology/a3c.py)
ppo       synchronous PPO: rollout actors -> learner actor, rounds   (topology/ppo.py)
appo      asynchronous PPO + V-trace: the learner takes what arrived  (topology/appo.py)
"""

from __future__ import annotations

from typing import Protocol

from raylab.config import RunConfig
from raylab.driver.monitor import RunSummary
from raylab.driver.resume import ResumeState
from raylab.envs.registry import EnvSpaces


class Topology(Protocol):
    def run(self) -> RunSummary: ...


def make_topology(cfg: RunConfig, spaces: EnvSpaces, resume: ResumeState | None = None) -> Topology:
    """The topology ``cfg.topology.name`` names (imported lazily: the local one never imports Ray)."""
    if cfg.topology.name == "local":
        from raylab.topology.local import LocalA3CTopology, LocalPPOTopology, LocalTopology

        if cfg.algo.name == "a3c":
            return LocalA3CTopology(cfg, spaces, resume)
        if cfg.algo.name in ("ppo", "appo"):
            return LocalPPOTopology(cfg, spaces, resume)
        return LocalTopology(cfg, spaces, resume)
    if cfg.topology.name == "apex_dqn":
        from raylab.topology.apex_dqn import ApexDQNTopology

        return ApexDQNTopology(cfg, spaces, resume)
    if cfg.topology.name == "appo":
        from raylab.topology.appo import APPOTopology

        return APPOTopology(cfg, spaces, resume)
    if cfg.topology.name == "ppo":
        from raylab.topology.ppo import PPOTopology

        return PPOTopology(cfg, spaces, resume)
    if cfg.topology.name == "a3c":
        from raylab.topology.a3c import A3CTopology

        return A3CTopology(cfg, spaces, resume)
    raise AssertionError(f"config validation let through topology {cfg.topology.name!r}")

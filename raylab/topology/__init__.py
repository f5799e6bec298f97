"""Topologies: one file each, its dataflow drawn in its docstring. Each is a ``Flow`` that the one driver loop
(raylab.driver.loop) runs: it declares its actors, what to submit when, and its job types (shared ones in
topology/jobs.py; Ape-X's in apex_jobs.py; A3C's parameter server in a3c_server.py). Where the actors run is
the backend's business: Ray actors (raylab.remote.backend), or plain objects in this process
(driver/inprocess.py), the same flow either way.

apex_dqn  Ape-X DQN: rollout actors, replay actor, learner actor   (topology/apex_dqn.py)
a3c       A3C: self-driven workers push gradients to server shards (topology/a3c.py)
ppo       synchronous PPO: rollout actors -> learner actor, rounds   (topology/ppo.py)
appo      asynchronous PPO + V-trace: the learner takes what arrived  (topology/appo.py)
local     the algorithm's flow above (dqn: apex_dqn's) in one process, no Ray: the workers take turns
"""

from __future__ import annotations

from typing import Protocol

from raylab.algos.names import ALGORITHMS
from raylab.config import RunConfig
from raylab.driver.loop import Backend, Driver, Flow
from raylab.driver.monitor import RunSummary
from raylab.driver.resume import ResumeState
from raylab.envs.registry import EnvSpaces


class Topology(Protocol):
    def run(self) -> RunSummary: ...


def make_topology(cfg: RunConfig, spaces: EnvSpaces, resume: ResumeState | None = None) -> Topology:
    """The driver loop running the flow ``cfg.topology.name`` names (for ``local``: the algorithm's), on Ray or,
    for ``local``, in this process (imported lazily: the local topology never imports Ray)."""
    flow = make_flow(cfg, spaces, resume)
    backend: Backend
    if cfg.topology.name == "local":
        from raylab.driver.inprocess import InProcessBackend

        backend = InProcessBackend(cfg, spaces)
    else:
        from raylab.remote.backend import RayBackend

        backend = RayBackend(cfg, spaces)
    return Driver(cfg, spaces, flow, backend, resume)


def make_flow(cfg: RunConfig, spaces: EnvSpaces, resume: ResumeState | None = None) -> Flow:
    """The flow of ``cfg.topology.name``; for ``local``, the flow of the Ray topology that runs the algorithm
    (raylab.algos.names)."""
    name = ALGORITHMS[cfg.algo.name].topology if cfg.topology.name == "local" else cfg.topology.name
    if name == "apex_dqn":
        from raylab.topology.apex_dqn import ApexDQNTopology

        return ApexDQNTopology(cfg, spaces, resume)
    if name == "appo":
        from raylab.topology.appo import APPOTopology

        return APPOTopology(cfg, spaces, resume)
    if name == "ppo":
        from raylab.topology.ppo import PPOTopology

        return PPOTopology(cfg, spaces, resume)
    if name == "a3c":
        from raylab.topology.a3c import A3CTopology

        return A3CTopology(cfg, spaces, resume)
    raise AssertionError(f"config validation let through topology {cfg.topology.name!r}")

"""Topologies: one file each, its dataflow drawn in its docstring. Each is a ``Flow`` that the one driver loop
(raylab.driver.loop) runs, fed its part of the run's plan (raylab.plan): it declares its actors, what to submit
when, and its job types (shared ones in topology/jobs.py; Ape-X's in apex_jobs.py; A3C's parameter server in
a3c_server.py). Where the actors run is the backend's business: Ray actors (raylab.remote.ray_backend), or
plain objects in this process (raylab.remote.inprocess), the same flow either way.

apex_dqn  Ape-X DQN: rollout actors, replay actor, learner actor   (topology/apex_dqn.py)
a3c       A3C: self-driven workers push gradients to server shards (topology/a3c.py)
ppo       synchronous PPO: rollout actors -> learner actor, rounds   (topology/ppo.py)
appo      asynchronous PPO + V-trace: the learner takes what arrived  (topology/appo.py)
local     the algorithm's flow above (dqn: apex_dqn's) in one process, no Ray: the workers take turns
"""

from __future__ import annotations

from raylab.driver.loop import Flow
from raylab.plan import A3CPlan, RunPlan


def make_flow(plan: RunPlan) -> Flow:
    """The flow ``plan.topology`` names, fed its plan."""
    flow = plan.flow
    if isinstance(flow, A3CPlan):
        from raylab.topology.a3c import A3CTopology

        return A3CTopology(flow)
    assert flow is not None, "the builders made no flow plan"
    if plan.topology == "apex_dqn":
        from raylab.topology.apex_dqn import ApexDQNTopology

        return ApexDQNTopology(flow)
    if plan.topology == "appo":
        from raylab.topology.appo import APPOTopology

        return APPOTopology(flow)
    from raylab.topology.ppo import PPOTopology

    return PPOTopology(flow)

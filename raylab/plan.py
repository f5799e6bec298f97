"""A run's plan: what the builders (raylab.builders.plans) make of a RunConfig for its topology, and all that the
topology and the driver loop get from it. Counts, sizes, the actors to start (``ActorSpec``: a host class and
the builder its component is made from) and what a resumed run restores; no config section crosses this line.

Several policies are a dimension of the plan, not a branch: a run has one ``PolicyPlan`` per policy (with no
``policies`` configured, one policy acting for every agent), and a flow loops over them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from raylab.remote.host import ActorSpec, Resources
from raylab.replay.rate_limiter import SamplesPerInsertLimiter
from raylab.types import EvalTarget


@dataclass(frozen=True)
class ReplayPlan:
    """One policy's replay (Ape-X): its shards (run-wide indices ``first ..``), its rate limiter, the snapshots a
    resumed run reloads, its capacity (items: transitions or R2D2's sequences) and the agent steps of one worker's
    chunk (the limiter's insert unit)."""

    first: int
    shards: tuple[ActorSpec, ...]
    limiter: SamplesPerInsertLimiter
    snapshots: tuple[Path | None, ...]
    capacity: int
    chunk_size: int
    steps_per_item: int = 1
    """Env steps one sampled item trains (the limiter's sample unit): 1 for a transition, R2D2's
    algo.sequence.trace for a sequence."""


@dataclass(frozen=True)
class PolicyPlan:
    """One policy's learner side: its name, its learner actor's name and spec, the learner state a resumed run
    loads into it, and (Ape-X) its replay."""

    name: str
    actor: str
    """``learner`` with one policy, ``learner_<name>`` with several."""
    learner: ActorSpec
    resumed: dict[str, Any] | None = None
    replay: ReplayPlan | None = None
    reports_as: str | None = None
    """The name its metrics go under (``policy/<name>/...``), None with one policy."""


@dataclass(frozen=True)
class Policies:
    """The run's policies, in order, and how their learner states make one checkpoint (one policy: its state as
    it is; several: ``{"policies": {name: state}}``)."""

    plans: tuple[PolicyPlan, ...]

    @property
    def several(self) -> bool:
        return len(self.plans) > 1

    def pack(self, states: Sequence[dict[str, Any] | None]) -> dict[str, Any] | None:
        """One learner state from each policy's (None if any is None: a learner is restarting)."""
        if any(state is None for state in states):
            return None
        if not self.several:
            return states[0]
        return {"policies": {p.name: state for p, state in zip(self.plans, states, strict=True)}}

    def part(self, state: dict[str, Any] | None, k: int) -> dict[str, Any] | None:
        """Policy ``k``'s part of a learner state written by ``pack`` (None: none)."""
        if state is None or not self.several:
            return state
        return state["policies"].get(self.plans[k].name)


@dataclass(frozen=True)
class RolloutPlan:
    """ppo, appo and apex_dqn: rollout actors and one learner per policy."""

    workers: tuple[ActorSpec, ...]
    policies: Policies
    inference: tuple[ActorSpec, ...] = ()
    """topology.inference=central: the inference actors (``inference_<k>``), which the workers' specs name
    (``Late``); none: each worker acts with its own policy."""
    chunks_in_flight: int = 1
    chunks_per_update: int = 1
    """APPO: chunks per learner call (its queue holds twice that before it parks a worker)."""
    batch_size: int = 0
    """Ape-X: samples per learner step, ``updates_per_call`` steps per learner call."""
    updates_per_call: int = 0
    prioritized: bool = False
    replay_snapshots: Path | None = None
    """Ape-X with checkpoint.replay: the run's checkpoints directory, beside which every checkpoint's replay
    snapshots are written; None: no snapshots."""


@dataclass(frozen=True)
class A3CPlan:
    """a3c: parameter-server shards and self-driven workers."""

    shards: tuple[ActorSpec, ...]
    layout: Any
    """The flat parameter layout (raylab.params.flat.ParamLayout)."""
    bounds: list[int]
    initial: list[np.ndarray]
    num_workers: int
    worker: Callable[[int, Any, int], ActorSpec]
    """``(worker id, link to the shards, incarnation) -> ActorSpec`` of an A3C worker."""
    window: tuple[int | None, float | None]
    """What one driver call asks of a worker: (segments, seconds); in one process one segment each turn."""
    max_restarts: int = -1
    """topology.max_actor_restarts (0: a shard's crash ends the run, its state being gone)."""
    incarnation: int = 0
    resumed_shards: list[dict[str, Any]] | None = None
    token: str = ""
    """Names the run's actors apart from another run's on the same cluster (raylab-a3c-<token>-...)."""


@dataclass(frozen=True)
class RunPlan:
    """What the driver loop needs besides the flow: the evaluation actor and schedule's numbers, the restart
    policy, the CPUs the run reserves, and who shares the stage timings (the report's denominators)."""

    topology: str
    """The flow that runs (raylab.topology): apex_dqn, ppo, appo or a3c (topology=local runs its algorithm's)."""
    evaluator: ActorSpec
    eval_episodes: int
    confirm_episodes: int
    final_episodes: int
    target: EvalTarget
    """stop.mean_return and stop.eval_extras: a greedy evaluation that meets it (confirmed) stops the run."""
    max_restarts: int
    placement_wait_s: float = 0.0
    """ray.placement_wait_s: how long actors the cluster cannot hold yet are waited for (0: fail at once)."""
    actor_counts: dict[str, int] = field(default_factory=dict)
    flow: RolloutPlan | A3CPlan | None = None

    def demands(self) -> list[tuple[str, Resources]]:
        """Every actor the run starts, by name, and what it reserves: checked against the cluster before any
        of them starts (raylab.remote.runtime.check_placeable)."""
        out = [("the evaluator", self.evaluator.resources)]
        flow = self.flow
        if isinstance(flow, RolloutPlan):
            out += [(f"rollout actor {i}", spec.resources) for i, spec in enumerate(flow.workers)]
            out += [(f"inference actor {k}", spec.resources) for k, spec in enumerate(flow.inference)]
            for policy in flow.policies.plans:
                out.append((f"the {policy.actor.replace('_', ' ')}", policy.learner.resources))
                if policy.replay is not None:
                    shards = policy.replay.shards
                    out += [(f"replay shard {policy.replay.first + j}", s.resources) for j, s in enumerate(shards)]
        elif isinstance(flow, A3CPlan):
            out += [(f"parameter-server shard {k}", spec.resources) for k, spec in enumerate(flow.shards)]
            out += [(f"a3c worker {i}", flow.worker(i, None, 0).resources) for i in range(flow.num_workers)]
        return out

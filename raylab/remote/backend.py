"""The Ray backend of raylab.driver.loop: what the one driver loop needs from Ray, and nothing more.

The loop itself imports no Ray: it waits on refs, fetches them, tells an actor's death from other errors,
and asks where actors run and how much memory they peaked at, all through this object; the topologies
create their actors through it too (``rollout``, ``replay``, ``learner``, ...), so the same flow runs on
Ray or in one process (raylab.driver.inprocess).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import numpy as np
import ray

from raylab.config import LearnerConfig, RunConfig
from raylab.config.policies import policy_config, policy_spaces
from raylab.envs.registry import EnvSpaces
from raylab.remote.a3c import A3CWorkerClient, ShardClient
from raylab.remote.clients import EvalClient, LearnerClient, ReplayClient, RolloutClient
from raylab.remote.ppo import PPOLearnerClient
from raylab.remote.runtime import cluster_fits, learner_gpus, placement, run_on_ray, wait_ready

T = TypeVar("T")


class RayBackend:
    ActorDied: type[BaseException] = ray.exceptions.RayActorError
    """What fetching a call's result raises when its actor died (Ray restarts it, or it is gone)."""

    def __init__(self, cfg: RunConfig, spaces: EnvSpaces):
        self.cfg = cfg
        self.spaces = spaces
        self.required_cpus = float("inf")
        """What the topology reserves (set by ``run``): start-ups wait past the timeout only if the cluster
        holds it."""
        self._gpus: dict[LearnerConfig, float] = {}

    def run(self, required_cpus: float, body: Callable[[], T]) -> T:
        self.required_cpus = required_cpus
        return run_on_ray(self.cfg.ray, required_cpus, body)

    # -- the actors -----------------------------------------------------------------------------------------
    def evaluator(self) -> EvalClient:
        return EvalClient.create(self.cfg, self.spaces)

    def rollout(self, worker_id: int, incarnation: int = 0, env_steps: int = 0) -> RolloutClient:
        return RolloutClient.create(self.cfg, self.spaces, worker_id, incarnation, env_steps)

    def replay(self, shard: int, policy: str | None = None) -> ReplayClient:
        """Replay shard ``shard`` (run-wide index); ``policy``: one of several policies' shards."""
        if policy is None:
            return ReplayClient.create(self.cfg, self.spaces, shard)
        return ReplayClient.create(policy_config(self.cfg, policy), policy_spaces(self.cfg, self.spaces, policy), shard)

    def learner(self, policy: str | None = None) -> LearnerClient:
        """``policy``: one of several policies' learner, built from its config; the learners share the GPU."""
        cfg = policy_config(self.cfg, policy) if policy is not None else self.cfg
        return LearnerClient.create(cfg, self.spaces, self._learner_gpus(cfg))

    def ppo_learner(self, policy: str | None = None) -> PPOLearnerClient:
        cfg = policy_config(self.cfg, policy) if policy is not None else self.cfg
        return PPOLearnerClient.create(cfg, self.spaces, self._learner_gpus(cfg))

    def _learner_gpus(self, cfg: RunConfig) -> float:
        """GPUs for one learner: learner_gpus, asked once per learner config (it may log a warning), shared
        evenly by several policies' learners."""
        if cfg.learner not in self._gpus:
            self._gpus[cfg.learner] = learner_gpus(cfg.learner)
        return self._gpus[cfg.learner] / max(len(self.cfg.policies), 1)

    def shard(self, params: np.ndarray, shard: int, name: str) -> ShardClient:
        return ShardClient.create(self.cfg, params, shard, name=name)

    def a3c_worker(
        self, worker_id: int, shards: list[ShardClient], bounds: list[int], incarnation: int, name: str
    ) -> A3CWorkerClient:
        return A3CWorkerClient.create(self.cfg, self.spaces, worker_id, shards, bounds, incarnation, name=name)

    # -- the calls ------------------------------------------------------------------------------------------

    def wait(self, refs: Sequence[Any], timeout: float, every: bool = False) -> list[Any]:
        """The first ref done (``every``: all of them) within ``timeout`` seconds, or those done by then."""
        ready, _ = ray.wait(list(refs), num_returns=len(refs) if every else 1, timeout=timeout)
        return ready

    def called_died(self, err: BaseException) -> bool:
        """``err`` (ActorDied) came from inside a call whose actor lives on: an actor *it* called died."""
        return isinstance(err, ray.exceptions.RayTaskError)

    def get(self, ref: Any) -> Any:
        return ray.get(ref)

    def put(self, value: Any) -> Any:
        return ray.put(value)

    def death_of(self, err: BaseException, client: Any) -> bool:
        """Whether ``err`` reports the death of ``client``'s actor (not of an actor its call called)."""
        return getattr(err, "actor_id", None) == client.handle._actor_id.hex()

    def wait_ready(self, clients: Sequence[Any], what: str) -> None:
        wait_ready([c.ready() for c in clients], what, fits=lambda: cluster_fits(self.required_cpus))

    def placement(self, clients: dict[str, Any]) -> dict[str, str]:
        return placement({name: c.handle for name, c in clients.items()})

    def peak_memory_bytes(self, clients: Sequence[Any]) -> int:
        """Summed over the actors still alive (one lost while stopping has no answer)."""
        total = 0
        for ref in [c.peak_memory_bytes() for c in clients]:
            with contextlib.suppress(ray.exceptions.RayActorError):
                total += int(ray.get(ref))
        return total

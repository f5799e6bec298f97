"""The PPO learner as a Ray actor, with its typed client (rollout and eval actors are the shared ones)."""

from __future__ import annotations

from typing import Any

import ray
from ray import ObjectRef

from raylab.config import RunConfig
from raylab.envs.registry import EnvSpaces
from raylab.remote.clients import RestorableLearner
from raylab.remote.hosts import PPOLearnerHost
from raylab.remote.runtime import actor_class
from raylab.types import Chunk, LearnerStats, Weights

PPOLearnerActor = actor_class(PPOLearnerHost)


class PPOLearnerClient(RestorableLearner):
    @classmethod
    def create(cls, cfg: RunConfig, spaces: EnvSpaces, num_gpus: float) -> PPOLearnerClient:
        options = {
            "num_cpus": cfg.learner.num_cpus, "num_gpus": num_gpus, "max_restarts": cfg.topology.max_actor_restarts,
        }  # fmt: skip
        return cls(PPOLearnerActor.options(**options).remote(cfg, spaces))

    def __init__(self, handle: Any):
        self.handle = handle

    def ready(self) -> ObjectRef[bool]:
        return self.handle.ready.remote()

    def update(self, chunks: list[ObjectRef[Chunk]]) -> tuple[ObjectRef[LearnerStats], ObjectRef[Weights]]:
        """Chunk refs go straight from the rollout actors' object stores to the learner."""
        stats, weights = self.handle.update.options(num_returns=2).remote(*chunks)
        return stats, weights

    def weights(self) -> ObjectRef[Weights]:
        return self.handle.get_weights.remote()

    def life(self) -> ObjectRef[int]:
        return self.handle.get_life.remote()

    def state_dict_blocking(self) -> dict[str, Any]:
        return ray.get(self.handle.state_dict.remote())

    def load_state_dict(self, state: dict[str, Any] | None, min_version: int = 0) -> ObjectRef[int]:
        return self.handle.load_state_dict.remote(state, min_version)

    def peak_memory_bytes(self) -> ObjectRef[int]:
        return self.handle.peak_memory_bytes.remote()

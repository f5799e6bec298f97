"""Rollout: vectors of envs stepped by a local policy or an inference actor (central inference), returning
chunks; greedy evaluation."""

from raylab.rollout.evaluator import Evaluator
from raylab.rollout.worker import Policy, RolloutWorker

__all__ = ["Evaluator", "Policy", "RolloutWorker"]

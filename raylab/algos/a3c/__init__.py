"""A3C: n-step advantage actor-critic, gradients computed on the workers, applied by a parameter server."""

from raylab.algos.a3c.loss import ActorCriticLoss, actor_critic_loss
from raylab.algos.a3c.policy import ActorCriticPolicy
from raylab.algos.a3c.worker import A3CWorker, WorkerReport

__all__ = ["A3CWorker", "ActorCriticLoss", "ActorCriticPolicy", "WorkerReport", "actor_critic_loss"]

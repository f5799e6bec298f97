"""A3C: n-step advantage actor-critic, gradients computed on the workers, applied by a parameter server.

The categorical policy the workers act with is shared with PPO and APPO: raylab.algos.actor_critic."""

from raylab.algos.a3c.loss import ActorCriticLoss, actor_critic_loss
from raylab.algos.a3c.worker import A3CWorker, WorkerReport

__all__ = ["A3CWorker", "ActorCriticLoss", "WorkerReport", "actor_critic_loss"]

"""A3C: n-step advantage actor-critic, gradients computed on the workers (raylab.rollout.a3c), applied by a
parameter server (raylab.params).

The categorical policy the workers act with is shared with PPO and APPO: raylab.algos.actor_critic."""

from raylab.algos.a3c.loss import ActorCriticLoss, actor_critic_loss, chunk_loss

__all__ = ["ActorCriticLoss", "actor_critic_loss", "chunk_loss"]

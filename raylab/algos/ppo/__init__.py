"""PPO: clipped surrogate, clipped value loss, entropy bonus; GAE and V-trace live in raylab.algos.returns."""

from raylab.algos.ppo.loss import PPOLoss, ppo_loss

__all__ = ["PPOLoss", "ppo_loss"]

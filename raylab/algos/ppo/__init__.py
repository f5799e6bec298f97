"""PPO and APPO objectives: clipped surrogate, clipped value loss, entropy bonus; GAE and V-trace live in
raylab.algos.returns. The Learner (raylab.learner) runs their optimizer steps."""

from raylab.algos.ppo.loss import PPOLoss, ppo_loss

__all__ = ["PPOLoss", "ppo_loss"]

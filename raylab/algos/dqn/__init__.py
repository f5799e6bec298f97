"""Double/dueling DQN with n-step returns and Ape-X exploration."""

from raylab.algos.dqn.loss import DQNLoss, dqn_loss, quantile_huber_loss
from raylab.algos.dqn.objective import DQN
from raylab.algos.dqn.policy import EpsilonGreedyPolicy, EpsilonSchedule, apex_epsilons
from raylab.algos.dqn.r2d2 import R2D2, r2d2_loss, value_rescale, value_rescale_inverse

__all__ = [
    "DQN", "R2D2", "DQNLoss", "EpsilonGreedyPolicy", "EpsilonSchedule", "apex_epsilons", "dqn_loss",
    "quantile_huber_loss", "r2d2_loss", "value_rescale", "value_rescale_inverse",
]  # fmt: skip

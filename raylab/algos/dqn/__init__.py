"""Double/dueling DQN with n-step returns and Ape-X exploration."""

from raylab.algos.dqn.loss import DQNLoss, dqn_loss, quantile_huber_loss
from raylab.algos.dqn.objective import DQN
from raylab.algos.dqn.policy import EpsilonGreedyPolicy, EpsilonSchedule, apex_epsilons

__all__ = [
    "DQN", "DQNLoss", "EpsilonGreedyPolicy", "EpsilonSchedule", "apex_epsilons", "dqn_loss", "quantile_huber_loss",
]  # fmt: skip

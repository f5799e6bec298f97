"""The ``algo`` section: one frozen dataclass per algorithm, told apart by ``name`` (``algo=dqn`` picks DQNConfig).

These would read best beside their algorithms (raylab/algos/<name>/config.py), but importing anything there
runs raylab/algos/<name>/__init__.py, which imports torch (the losses) and, for DQN, raylab.algos.dqn.objective,
which imports this package back: a circle, and torch behind every ``import raylab.config``. So they stay in
the config package, in their own module beside the schema (raylab/config/schema.py) that unites them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from raylab.errors import check, positive_or_none


@dataclass(frozen=True)
class EpsilonConfig:
    base: float = 0.4
    """Ape-X exploration: env slot i of N uses base ** (1 + alpha * i / (N - 1))."""
    alpha: float = 7.0
    """Ape-X exponent spread."""
    initial: float = 1.0
    """Epsilon at the start, annealed linearly to each slot's Ape-X value."""
    anneal_env_steps: int = 10_000
    """Total env steps over which epsilon anneals (0 = start at the Ape-X values)."""
    eval: float = 0.0
    """Epsilon of greedy evaluation."""

    def __post_init__(self) -> None:
        for name in ("base", "initial", "eval"):
            value = getattr(self, name)
            check(0.0 <= value <= 1.0, f"algo.epsilon.{name} must be in [0, 1] (got {value})")
        check(self.alpha >= 0, f"algo.epsilon.alpha must be >= 0 (got {self.alpha})")
        check(self.anneal_env_steps >= 0, "algo.epsilon.anneal_env_steps must be >= 0")


@dataclass(frozen=True)
class SequenceConfig:
    """R2D2's replay sequences (algo=dqn with model.recurrent; Kapturowski et al. 2019, Acme's R2D2Config)."""

    burn_in: int = 40
    """Steps at the start of a sequence that only warm the stored state up (no loss on them); a sequence that
    starts an episode has none (its stored state, zeros, is exact)."""
    trace: int = 80
    """Steps after the burn-in that the loss trains on; a sequence holds burn_in + trace steps (fewer where its
    episode ends first: sequences never cross an episode)."""
    period: int = 40
    """A new sequence starts every this many steps of an episode (consecutive ones overlap by
    burn_in + trace - period steps), at most ``trace`` so that every step is trained by some sequence."""
    priority_max_weight: float = 0.9
    """A sequence's priority is this x max |TD error| + (1 - this) x mean |TD error| over its trained steps."""
    value_rescaling: bool = True
    """Train on h(Q) with h(x) = sign(x)(sqrt(|x| + 1) - 1) + rescale_eps * x (Pohlen et al. 2018) instead of
    clipping rewards."""
    rescale_eps: float = 1e-3
    """The linear term of the value rescaling h."""

    @property
    def length(self) -> int:
        """Steps per sequence (its observations: one more, for the bootstrap)."""
        return self.burn_in + self.trace

    def __post_init__(self) -> None:
        check(self.burn_in >= 0, f"algo.sequence.burn_in must be >= 0 (got {self.burn_in})")
        check(self.trace >= 1, f"algo.sequence.trace must be >= 1 (got {self.trace})")
        check(
            1 <= self.period <= self.trace,
            f"algo.sequence.period={self.period} must be in [1, algo.sequence.trace={self.trace}] (a longer period "
            f"leaves steps no sequence trains on): lower algo.sequence.period",
        )
        check(
            0.0 <= self.priority_max_weight <= 1.0,
            f"algo.sequence.priority_max_weight must be in [0, 1] (got {self.priority_max_weight})",
        )
        check(self.rescale_eps >= 0, f"algo.sequence.rescale_eps must be >= 0 (got {self.rescale_eps})")


@dataclass(frozen=True)
class DQNConfig:
    name: Literal["dqn"] = "dqn"
    """Algorithm name (selects this schema)."""
    gamma: float = 0.99
    """Discount factor."""
    n_step: int = 3
    """Steps in the n-step return."""
    double: bool = True
    """Double DQN: the online net picks the next action, the target net values it."""
    huber_delta: float = 1.0
    """Huber loss threshold on the TD error (the quantile loss's kappa with loss=quantile)."""
    loss: Literal["huber", "quantile"] = "huber"
    """huber: expected-value DQN; quantile: QR-DQN (Dabney et al. 2018), a distribution of num_quantiles atoms."""
    num_quantiles: int = 200
    """QR-DQN atoms per action."""
    target_update_every: int = 1
    """Learner updates between target-network updates."""
    target_tau: float = 0.005
    """1.0 copies the online net; < 1 moves the target by this fraction (Polyak)."""
    epsilon: EpsilonConfig = field(default_factory=EpsilonConfig)
    """Exploration schedule of the rollout workers."""
    sequence: SequenceConfig = field(default_factory=SequenceConfig)
    """With model.recurrent (R2D2): the replay stores sequences, trained with burn-in from their stored start
    states; n_step targets are computed inside each sequence."""

    def __post_init__(self) -> None:
        check(0.0 <= self.gamma <= 1.0, f"algo.gamma must be in [0, 1] (got {self.gamma})")
        check(self.n_step >= 1, f"algo.n_step must be >= 1 (got {self.n_step})")
        check(self.huber_delta > 0, f"algo.huber_delta must be > 0 (got {self.huber_delta})")
        check(self.target_update_every >= 1, "algo.target_update_every must be >= 1")
        check(0.0 < self.target_tau <= 1.0, f"algo.target_tau must be in (0, 1] (got {self.target_tau})")
        check(self.num_quantiles >= 1, f"algo.num_quantiles must be >= 1 (got {self.num_quantiles})")


@dataclass(frozen=True)
class A3CConfig:
    name: Literal["a3c"] = "a3c"
    """Algorithm name (selects this schema)."""
    gamma: float = 0.99
    """Discount factor."""
    value_coef: float = 0.5
    """Weight of the value loss (0.5 * squared error) in the total loss."""
    entropy_coef: float = 0.01
    """Weight of the entropy bonus (subtracted from the loss)."""
    lr: float = 7e-4
    """Learning rate of the shared RMSProp on the parameter server."""
    rmsprop_alpha: float = 0.99
    """Decay of the shared RMSProp's mean squared gradient."""
    rmsprop_eps: float = 1e-5
    """RMSProp epsilon: theta -= lr * g / (sqrt(mean_sq) + eps)."""
    max_grad_norm: float | None = 40.0
    """Each worker clips its gradient to this global norm before pushing it (None = no clipping)."""
    cut_at_episode_end: bool = True
    """End a rollout segment when an episode ends, as the classic A3C setup does (Mnih et al. 2016: t_max steps
    or a terminal state); False: always rollout_length steps."""

    def __post_init__(self) -> None:
        check(0.0 <= self.gamma <= 1.0, f"algo.gamma must be in [0, 1] (got {self.gamma})")
        check(self.value_coef >= 0, f"algo.value_coef must be >= 0 (got {self.value_coef})")
        check(self.entropy_coef >= 0, f"algo.entropy_coef must be >= 0 (got {self.entropy_coef})")
        check(self.lr > 0, f"algo.lr must be > 0 (got {self.lr})")
        check(0.0 < self.rmsprop_alpha < 1.0, f"algo.rmsprop_alpha must be in (0, 1) (got {self.rmsprop_alpha})")
        check(self.rmsprop_eps > 0, f"algo.rmsprop_eps must be > 0 (got {self.rmsprop_eps})")
        positive_or_none(self.max_grad_norm, "algo.max_grad_norm")


@dataclass(frozen=True)
class PPOConfig:
    name: Literal["ppo"] = "ppo"
    """Algorithm name (selects this schema)."""
    gamma: float = 0.99
    """Discount factor."""
    gae_lambda: float = 0.95
    """GAE lambda."""
    clip: float = 0.2
    """Policy ratio clip range: [1 - clip, 1 + clip]."""
    value_clip: float | None = 0.2
    """Clip the value update around the old value by this much (None = plain squared error)."""
    value_coef: float = 0.5
    """Weight of the value loss."""
    entropy_coef: float = 0.01
    """Weight of the entropy bonus."""
    epochs: int = 4
    """Passes over each batch of rollouts."""
    minibatches: int = 4
    """Minibatches per epoch (the rollouts' steps split evenly)."""
    normalize_advantages: bool = True
    """Normalize advantages per minibatch."""
    bptt: int | None = None
    """model.recurrent: the length of the sequences the learner replays (truncated backpropagation through
    time), a divisor of topology.rollout_length; minibatches hold whole sequences. None: the whole rollout."""

    def __post_init__(self) -> None:
        check(0.0 <= self.gamma <= 1.0, f"algo.gamma must be in [0, 1] (got {self.gamma})")
        check(0.0 <= self.gae_lambda <= 1.0, f"algo.gae_lambda must be in [0, 1] (got {self.gae_lambda})")
        check(self.clip > 0, f"algo.clip must be > 0 (got {self.clip})")
        check(self.entropy_coef >= 0, f"algo.entropy_coef must be >= 0 (got {self.entropy_coef})")
        positive_or_none(self.value_clip, "algo.value_clip")
        check(self.epochs >= 1, f"algo.epochs must be >= 1 (got {self.epochs})")
        check(self.minibatches >= 1, f"algo.minibatches must be >= 1 (got {self.minibatches})")
        check(self.bptt is None or self.bptt >= 1, f"algo.bptt must be >= 1 or null (got {self.bptt})")


@dataclass(frozen=True)
class APPOConfig:
    name: Literal["appo"] = "appo"
    """Algorithm name (selects this schema)."""
    gamma: float = 0.99
    """Discount factor."""
    clip: float = 0.2
    """Clip range of the ratio pi / mu (current policy over the behaviour policy that acted)."""
    value_coef: float = 0.5
    """Weight of the value loss (0.5 * (v_s - V)^2 with V-trace targets v_s)."""
    entropy_coef: float = 0.01
    """Weight of the entropy bonus."""
    rho_bar: float = 1.0
    """V-trace: truncation of the importance weights in the value targets."""
    c_bar: float = 1.0
    """V-trace: truncation of the trace-cutting coefficients."""
    vtrace_lambda: float = 1.0
    """V-trace's lambda (IMPALA's remark 2, rlax's ``lambda_``): the traces are lambda * min(c_bar, pi / mu), and
    on-policy (with rho_bar, c_bar >= 1) the targets and advantages are GAE(lambda)'s, as PPO's ``gae_lambda`` gives
    them; 1 = plain V-trace."""
    max_policy_lag: int = 16
    """Chunks acted by a policy more than this many learner updates old are dropped (and counted)."""
    chunks_per_update: int = 4
    """At most this many arrived chunks per learner call; the learner takes whatever has arrived (>= 1)."""
    epochs: int = 1
    """Passes over each learner call's chunks."""
    minibatches: int = 2
    """Minibatches per epoch."""
    bptt: int | None = None
    """model.recurrent: the length of the sequences the learner replays (truncated backpropagation through
    time), a divisor of topology.rollout_length; minibatches hold whole sequences. None: the whole rollout."""

    def __post_init__(self) -> None:
        check(0.0 <= self.gamma <= 1.0, f"algo.gamma must be in [0, 1] (got {self.gamma})")
        check(self.clip > 0, f"algo.clip must be > 0 (got {self.clip})")
        check(self.entropy_coef >= 0, f"algo.entropy_coef must be >= 0 (got {self.entropy_coef})")
        check(self.rho_bar > 0 and self.c_bar > 0, "algo.rho_bar and algo.c_bar must be > 0")
        check(0.0 <= self.vtrace_lambda <= 1.0, f"algo.vtrace_lambda must be in [0, 1] (got {self.vtrace_lambda})")
        check(self.max_policy_lag >= 0, f"algo.max_policy_lag must be >= 0 (got {self.max_policy_lag})")
        check(self.chunks_per_update >= 1, "algo.chunks_per_update must be >= 1")
        check(self.epochs >= 1 and self.minibatches >= 1, "algo.epochs and algo.minibatches must be >= 1")
        check(self.bptt is None or self.bptt >= 1, f"algo.bptt must be >= 1 or null (got {self.bptt})")


AlgoConfig = DQNConfig | A3CConfig | PPOConfig | APPOConfig
"""Union of the algorithm schemas, told apart by ``name``."""

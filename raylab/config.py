"""The one boundary between Hydra and raylab.

``resolve(DictConfig) -> RunConfig`` turns the composed config into frozen dataclasses, checks every value
once and fails with a one-line ``ConfigError`` that names the fix. Nothing downstream, and nothing sent to a
Ray actor, is a DictConfig (lazy interpolations break in child processes, hydra#2772). Each component's
builder receives only its own sub-config.
"""

from __future__ import annotations

import dataclasses
import difflib
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, is_dataclass
from typing import Any, Literal

from raylab.errors import ConfigError

TOPOLOGY_ALGOS: dict[str, tuple[str, ...]] = {
    "local": ("dqn", "a3c", "ppo", "appo"),
    "apex_dqn": ("dqn",),
    "a3c": ("a3c",),
    "ppo": ("ppo",),
    "appo": ("appo",),
}
"""Which algorithms each topology runs."""


@dataclass(frozen=True)
class EnvConfig:
    family: str = "gymnasium"
    """Env family: gymnasium | mario | procgen | snake | fake (raylab/envs/registry.py lists them)."""
    id: str = "CartPole-v1"
    """Env id within the family: a gymnasium id, SuperMarioBros-1-1-v0, a Procgen game (coinrun), Snake-v0."""
    max_episode_steps: int | None = None
    """Time limit per episode in agent steps (truncation); None keeps the family's default."""
    frame_skip: int = 1
    """Repeat each action this many frames, summing rewards and max-pooling the last two frames."""
    grayscale: bool = False
    """Convert RGB (H, W, 3) frames to one channel."""
    resize: tuple[int, int] | None = None
    """Resize image frames to (height, width), e.g. [84, 84]."""
    frame_stack: int = 1
    """Stack the last k observations along the channel axis (uint8 stays uint8, channel-first)."""
    reward_clip: float | None = None
    """Clip each agent-step reward to [-c, c] before the learner sees it (episode returns stay raw)."""
    reward_scale: float = 1.0
    """Multiply each agent-step reward by this (after clipping)."""
    noop_max: int = 0
    """Take a random number (seeded) of up to this many no-op actions after each reset, for start diversity."""
    options: dict[str, Any] = field(default_factory=dict)
    """Family-specific options, checked by the family (mario: actions; procgen: distribution_mode,
    num_levels, start_level, num_threads; snake: dim, start_length, border, observation, rewards)."""

    def __post_init__(self) -> None:
        _positive_or_none(self.max_episode_steps, "env.max_episode_steps")
        _check(self.frame_skip >= 1, f"env.frame_skip must be >= 1 (got {self.frame_skip})")
        _check(self.frame_stack >= 1, f"env.frame_stack must be >= 1 (got {self.frame_stack})")
        _check(self.noop_max >= 0, f"env.noop_max must be >= 0 (got {self.noop_max})")
        _positive_or_none(self.reward_clip, "env.reward_clip")
        _check(
            self.resize is None or (len(self.resize) == 2 and min(self.resize) > 0),
            f"env.resize must be [height, width] or null (got {self.resize})",
        )


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
            _check(0.0 <= value <= 1.0, f"algo.epsilon.{name} must be in [0, 1] (got {value})")
        _check(self.alpha >= 0, f"algo.epsilon.alpha must be >= 0 (got {self.alpha})")
        _check(self.anneal_env_steps >= 0, "algo.epsilon.anneal_env_steps must be >= 0")


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

    def __post_init__(self) -> None:
        _check(0.0 <= self.gamma <= 1.0, f"algo.gamma must be in [0, 1] (got {self.gamma})")
        _check(self.n_step >= 1, f"algo.n_step must be >= 1 (got {self.n_step})")
        _check(self.huber_delta > 0, f"algo.huber_delta must be > 0 (got {self.huber_delta})")
        _check(self.target_update_every >= 1, "algo.target_update_every must be >= 1")
        _check(0.0 < self.target_tau <= 1.0, f"algo.target_tau must be in (0, 1] (got {self.target_tau})")
        _check(self.num_quantiles >= 1, f"algo.num_quantiles must be >= 1 (got {self.num_quantiles})")


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
    """End a rollout segment when an episode ends, as seed 000's A3C does (False: always rollout_length steps)."""

    def __post_init__(self) -> None:
        _check(0.0 <= self.gamma <= 1.0, f"algo.gamma must be in [0, 1] (got {self.gamma})")
        _check(self.value_coef >= 0, f"algo.value_coef must be >= 0 (got {self.value_coef})")
        _check(self.entropy_coef >= 0, f"algo.entropy_coef must be >= 0 (got {self.entropy_coef})")
        _check(self.lr > 0, f"algo.lr must be > 0 (got {self.lr})")
        _check(0.0 < self.rmsprop_alpha < 1.0, f"algo.rmsprop_alpha must be in (0, 1) (got {self.rmsprop_alpha})")
        _check(self.rmsprop_eps > 0, f"algo.rmsprop_eps must be > 0 (got {self.rmsprop_eps})")
        _positive_or_none(self.max_grad_norm, "algo.max_grad_norm")


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

    def __post_init__(self) -> None:
        _check(0.0 <= self.gamma <= 1.0, f"algo.gamma must be in [0, 1] (got {self.gamma})")
        _check(0.0 <= self.gae_lambda <= 1.0, f"algo.gae_lambda must be in [0, 1] (got {self.gae_lambda})")
        _check(self.clip > 0, f"algo.clip must be > 0 (got {self.clip})")
        _positive_or_none(self.value_clip, "algo.value_clip")
        _check(self.epochs >= 1, f"algo.epochs must be >= 1 (got {self.epochs})")
        _check(self.minibatches >= 1, f"algo.minibatches must be >= 1 (got {self.minibatches})")


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
    max_policy_lag: int = 16
    """Chunks acted by a policy more than this many learner updates old are dropped (and counted)."""
    chunks_per_update: int = 4
    """At most this many arrived chunks per learner call; the learner takes whatever has arrived (>= 1)."""
    epochs: int = 1
    """Passes over each learner call's chunks."""
    minibatches: int = 2
    """Minibatches per epoch."""

    def __post_init__(self) -> None:
        _check(0.0 <= self.gamma <= 1.0, f"algo.gamma must be in [0, 1] (got {self.gamma})")
        _check(self.clip > 0, f"algo.clip must be > 0 (got {self.clip})")
        _check(self.rho_bar > 0 and self.c_bar > 0, "algo.rho_bar and algo.c_bar must be > 0")
        _check(self.max_policy_lag >= 0, f"algo.max_policy_lag must be >= 0 (got {self.max_policy_lag})")
        _check(self.chunks_per_update >= 1, "algo.chunks_per_update must be >= 1")
        _check(self.epochs >= 1 and self.minibatches >= 1, "algo.epochs and algo.minibatches must be >= 1")


AlgoConfig = DQNConfig | A3CConfig | PPOConfig | APPOConfig
"""Union of the algorithm schemas, told apart by ``name``."""


@dataclass(frozen=True)
class ModelConfig:
    encoder: Literal["mlp", "nature_cnn", "impala_cnn"] = "mlp"
    """Observation encoder: mlp for vectors; nature_cnn or impala_cnn (Procgen's residual CNN) for images."""
    hidden_sizes: tuple[int, ...] = (256, 256)
    """Fully connected layers after the encoder's input (mlp) or convolutions (nature_cnn)."""
    dueling: bool = False
    """Dueling Q head: V(s) + A(s, a) - mean_a A(s, a)."""
    norm: Literal["none", "batch"] = "none"
    """nature_cnn: BatchNorm after each convolution (seed 001's Mario network); workers act in eval mode."""

    def __post_init__(self) -> None:
        _check(all(h > 0 for h in self.hidden_sizes), "model.hidden_sizes must be positive integers")


@dataclass(frozen=True)
class TopologyConfig:
    name: str = "apex_dqn"
    """Dataflow: local (serial, no Ray) | apex_dqn | a3c | ppo | appo."""
    num_workers: int = 2
    """Rollout workers (Ray actors, or serial workers in the local topology)."""
    envs_per_worker: int = 8
    """Envs stepped as one batch inside each worker."""
    rollout_length: int = 32
    """Steps per env in one chunk; a chunk moves rollout_length x envs_per_worker steps at once."""
    worker_cpus: float = 1.0
    """Logical Ray CPUs reserved per rollout actor."""
    max_actor_restarts: int = -1
    """apex_dqn: how often Ray restarts a crashed rollout, replay or learner actor (-1 = always, 0 = never;
    then a crash ends the run). The learner comes back from the latest periodic checkpoint."""

    def __post_init__(self) -> None:
        _check(self.max_actor_restarts >= -1, "topology.max_actor_restarts must be -1 (always), 0 or more")
        _check(
            self.name in TOPOLOGY_ALGOS,
            f"unknown topology '{self.name}': choose one of {', '.join(TOPOLOGY_ALGOS)} (e.g. topology=apex_dqn)",
        )
        _check(
            self.num_workers >= 1,
            f"topology.num_workers must be >= 1 (got {self.num_workers}): set topology.num_workers=1 or more",
        )
        _check(
            self.envs_per_worker >= 1,
            f"topology.envs_per_worker must be >= 1 (got {self.envs_per_worker})",
        )
        _check(self.rollout_length >= 1, f"topology.rollout_length must be >= 1 (got {self.rollout_length})")
        _check(self.worker_cpus >= 0, "topology.worker_cpus must be >= 0")


@dataclass(frozen=True)
class ParamsConfig:
    """The parameter server of the a3c topology (raylab/params)."""

    num_shards: int = 1
    """Server actors; each owns a contiguous slice of the flat parameter vector and its RMSProp statistics.
    RMSProp is elementwise, so sharding changes where updates run, never what they compute."""
    pushes_in_flight: int = 1
    """Gradients a worker may have sent but not yet seen applied before it blocks (0 = synchronous: wait
    for every push, as seed 000's mutex did). Bounds staleness: a gradient is at most this many of the
    worker's own pushes behind, plus whatever other workers pushed meanwhile."""
    shard_cpus: float = 0.5
    """Logical Ray CPUs reserved per server shard."""
    worker_nice: int = 10
    """Niceness added to A3C worker processes (0-19): with more workers than cores, a positive value keeps
    them from starving the server shards every worker depends on (benchmarks/a3c_worker_nice.json)."""

    def __post_init__(self) -> None:
        _check(0 <= self.worker_nice <= 19, f"params.worker_nice must be in 0..19 (got {self.worker_nice})")
        _check(self.num_shards >= 1, f"params.num_shards must be >= 1 (got {self.num_shards})")
        _check(self.pushes_in_flight >= 0, f"params.pushes_in_flight must be >= 0 (got {self.pushes_in_flight})")
        _check(self.shard_cpus >= 0, "params.shard_cpus must be >= 0")


@dataclass(frozen=True)
class LearnerConfig:
    device: Literal["auto", "cpu", "cuda"] = "auto"
    """auto picks cuda when present."""
    batch_size: int = 64
    """Transitions per update."""
    lr: float = 1e-3
    """Adam learning rate."""
    adam_eps: float = 1e-8
    """Adam epsilon."""
    max_grad_norm: float | None = 10.0
    """Clip gradients to this global norm (None = no clipping)."""
    updates_per_call: int = 32
    """Updates per learner call; amortizes the Ray round trip."""
    publish_every: int = 32
    """Publish new inference weights every N updates."""
    num_threads: int = 1
    """torch intra-op threads in the learner."""
    num_cpus: float = 1.0
    """Logical Ray CPUs for the learner actor."""
    num_gpus: float = 0.0
    """Ray GPUs for the learner actor."""
    precision: Literal["fp32", "bf16", "fp16"] = "fp32"
    """Mixed precision: bf16 autocast (CPU or CUDA), fp16 autocast with a GradScaler (CUDA only)."""
    compile: bool = False
    """torch.compile the update: the loss (forward and backward) and the optimizer step."""
    compile_mode: Literal["default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs"] = "default"
    """torch.compile mode."""
    grad_accumulation: int = 1
    """Split each batch into this many micro-batches and accumulate their gradients (one optimizer step)."""
    prefetch: bool = True
    """A thread readies the next batch (gather, pin, copy to the device) while the current one trains."""
    tf32: bool = True
    """On CUDA: TF32 matmuls/convolutions and cudnn.benchmark (no effect on CPU)."""

    def __post_init__(self) -> None:
        _check(self.batch_size >= 1, f"learner.batch_size must be >= 1 (got {self.batch_size})")
        _check(
            self.grad_accumulation >= 1 and self.batch_size % self.grad_accumulation == 0,
            f"learner.grad_accumulation={self.grad_accumulation} must be >= 1 and divide learner.batch_size="
            f"{self.batch_size}: pick a divisor",
        )
        _check(self.lr > 0, f"learner.lr must be > 0 (got {self.lr})")
        _positive_or_none(self.max_grad_norm, "learner.max_grad_norm")
        _check(self.updates_per_call >= 1, "learner.updates_per_call must be >= 1")
        _check(self.publish_every >= 1, "learner.publish_every must be >= 1")
        _check(self.num_threads >= 1, "learner.num_threads must be >= 1")


@dataclass(frozen=True)
class ReplayConfig:
    kind: Literal["uniform", "prioritized"] = "uniform"
    """Sampler: uniform, or prioritized (proportional, on a sum tree; priorities from the learner's TD errors)."""
    capacity: int = 100_000
    """Transitions kept (ring buffer), across all shards."""
    num_shards: int = 1
    """Replay actors (apex_dqn); each worker writes to one shard, learner calls take turns among them."""
    alpha: float = 0.6
    """Prioritized: P(i) proportional to (|TD error_i| + eps) ** alpha."""
    beta: float = 0.4
    """Prioritized: importance-weight exponent at the start."""
    beta_final: float = 1.0
    """Prioritized: beta reached after beta_anneal_env_steps."""
    beta_anneal_env_steps: int = 0
    """Prioritized: anneal beta linearly over this many inserted transitions (0 = beta stays fixed)."""
    priority_eps: float = 1.0e-6
    """Prioritized: added to |TD error| so no item has zero probability."""
    frame_dedup: Literal["auto", True, False] = "auto"
    """Store each frame of stacked image observations once (auto: on for uint8 images with env.frame_stack > 1)."""
    min_size: int = 1_000
    """Transitions stored before the learner starts (n-step transitions still waiting for their last steps
    do not count)."""
    samples_per_insert: float = 8.0
    """Target learner samples per inserted transition; 0 = no rate limit."""
    error_buffer: float | None = None
    """Limiter slack in samples; None = one chunk per worker plus one learner call."""

    def __post_init__(self) -> None:
        _check(self.capacity >= 1, f"replay.capacity must be >= 1 (got {self.capacity})")
        _check(self.min_size >= 1, f"replay.min_size must be >= 1 (got {self.min_size})")
        _check(
            self.min_size <= self.capacity,
            f"replay.min_size={self.min_size} exceeds replay.capacity={self.capacity}: lower min_size",
        )
        _check(self.samples_per_insert >= 0, "replay.samples_per_insert must be >= 0")
        _check(self.num_shards >= 1, f"replay.num_shards must be >= 1 (got {self.num_shards})")
        _check(0.0 <= self.alpha <= 1.0, f"replay.alpha must be in [0, 1] (got {self.alpha})")
        _check(
            0.0 <= self.beta <= 1.0 and 0.0 <= self.beta_final <= 1.0,
            f"replay.beta and replay.beta_final must be in [0, 1] (got {self.beta}, {self.beta_final})",
        )
        _check(self.priority_eps > 0, f"replay.priority_eps must be > 0 (got {self.priority_eps})")
        _positive_or_none(self.error_buffer, "replay.error_buffer")


@dataclass(frozen=True)
class WandbConfig:
    enabled: bool = False
    """Log to Weights & Biases (offline unless a key is set; WANDB_MODE wins)."""
    project: str = "raylab"
    """W&B project."""
    entity: str | None = None
    """W&B entity (team or user); None = the key's default."""
    group: str | None = None
    """Group runs in the W&B UI (e.g. one per experiment sweep)."""
    tags: tuple[str, ...] = ()
    """Tags on the W&B run."""
    name: str | None = None
    """Run name (None = the run directory's name)."""


@dataclass(frozen=True)
class LoggerConfig:
    console: bool = True
    """Progress bar on a terminal, a summary line per report otherwise."""
    report_every_seconds: float = 5.0
    """Interval between metrics.jsonl rows and console reports."""
    wandb: WandbConfig = field(default_factory=WandbConfig)
    tensorboard: bool = False
    """Also write TensorBoard event files under <run_dir>/tensorboard (needs the ``tensorboard`` extra)."""
    timing: bool = True
    """Per-stage timers in every actor (env, inference, weight sync, waits, replay add/sample, ...);
    false turns them into no-ops (benchmarks/timer_overhead.json measures the difference)."""

    def __post_init__(self) -> None:
        _check(self.report_every_seconds > 0, "logger.report_every_seconds must be > 0")


@dataclass(frozen=True)
class StopConfig:
    env_steps: int | None = 200_000
    """Stop after this many env (agent) steps."""
    seconds: float | None = 600.0
    """Stop after this much training wall time."""
    mean_return: float | None = None
    """Stop once a periodic greedy evaluation reaches this mean return."""
    train_return: float | None = None
    """Stop once the mean return of the last 100 training episodes reaches this (RLlib's and Sample
    Factory's usual criterion; it judges the exploring policy, not the greedy one)."""

    def __post_init__(self) -> None:
        _positive_or_none(self.env_steps, "stop.env_steps")
        _positive_or_none(self.seconds, "stop.seconds")


@dataclass(frozen=True)
class EvalConfig:
    every_seconds: float | None = 10.0
    """Periodic greedy evaluation, wall-clock interval (None = off)."""
    every_env_steps: int | None = None
    """Periodic greedy evaluation, env-step interval (None = off)."""
    episodes: int = 10
    """Episodes per periodic evaluation."""
    confirm_episodes: int = 20
    """When a periodic evaluation reaches stop.mean_return, this many more episodes of the same weights are
    run and the stop is judged on all of them (0 = no confirmation)."""
    final_episodes: int = 20
    """Episodes of the final evaluation (0 = skip)."""
    greedy: bool = True
    """Act with the most likely action (True), or sample from the policy (False: actor-critic algorithms only;
    Procgen's protocol, where an argmax policy can stall against a wall forever). DQN evaluates with
    algo.epsilon.eval."""

    def __post_init__(self) -> None:
        _positive_or_none(self.every_seconds, "eval.every_seconds")
        _positive_or_none(self.every_env_steps, "eval.every_env_steps")
        _check(self.episodes >= 1, "eval.episodes must be >= 1")
        _check(self.final_episodes >= 0, "eval.final_episodes must be >= 0")
        _check(self.confirm_episodes >= 0, "eval.confirm_episodes must be >= 0")

    @property
    def periodic(self) -> bool:
        return self.every_seconds is not None or self.every_env_steps is not None


@dataclass(frozen=True)
class CheckpointConfig:
    every_seconds: float | None = None
    """Write checkpoints/step_<env steps>.pt at this wall-clock interval of training (None = only final.pt)."""
    keep: int = 3
    """Periodic checkpoints kept (older ones are deleted; final.pt is always written)."""
    replay: bool = False
    """Also snapshot every replay shard beside each checkpoint (raylab.replay.snapshot): ``resume=`` and a
    restarted replay shard then continue with the stored transitions instead of refilling. Costs the disk
    and the seconds of writing the whole replay at each checkpoint (timing/replay/snapshot_s)."""

    def __post_init__(self) -> None:
        _positive_or_none(self.every_seconds, "checkpoint.every_seconds")
        _check(self.keep >= 1, "checkpoint.keep must be >= 1")


@dataclass(frozen=True)
class RayConfig:
    address: str = ""
    """"" starts an embedded local Ray (or joins RAY_ADDRESS under `ray job submit`); "auto" or an address
    joins a running cluster."""
    num_cpus: int | None = None
    """Logical CPUs of the embedded Ray (None = what the topology reserves, at least the machine's cores)."""
    include_dashboard: bool = False
    """Start Ray's dashboard with the embedded Ray."""
    dashboard_host: str = "127.0.0.1"
    """Interface the dashboard binds to (loopback unless you mean to expose it)."""
    object_store_memory: int | None = None
    """Bytes for the embedded Ray's object store (None = Ray's default)."""
    connect_timeout_s: float = 30.0
    """How long to keep trying a ``host:port`` / ``ray://`` address before giving up with an error."""

    def __post_init__(self) -> None:
        _check(self.connect_timeout_s > 0, "ray.connect_timeout_s must be > 0")
        _positive_or_none(self.num_cpus, "ray.num_cpus")
        _positive_or_none(self.object_store_memory, "ray.object_store_memory")


@dataclass(frozen=True)
class RunConfig:
    """Everything a run needs, validated; built once by ``resolve``."""

    seed: int = 0
    env: EnvConfig = field(default_factory=EnvConfig)
    algo: AlgoConfig = field(default_factory=DQNConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    topology: TopologyConfig = field(default_factory=TopologyConfig)
    learner: LearnerConfig = field(default_factory=LearnerConfig)
    replay: ReplayConfig = field(default_factory=ReplayConfig)
    params: ParamsConfig = field(default_factory=ParamsConfig)
    logger: LoggerConfig = field(default_factory=LoggerConfig)
    stop: StopConfig = field(default_factory=StopConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)
    checkpoint: CheckpointConfig = field(default_factory=CheckpointConfig)
    ray: RayConfig = field(default_factory=RayConfig)
    run_dir: str = "."
    """Where the run writes its outputs (the Hydra run dir under raylab.train)."""
    resume: str | None = None
    """A run dir to continue from its newest checkpoint, counters intact; the run then writes into that dir
    (raylab/driver/resume.py). Stop conditions count the totals: raise stop.* to train further."""

    def to_dict(self) -> dict[str, Any]:
        """Plain nested dict (tuples as lists), as written to config.yaml, W&B and checkpoints: secrets
        (keys named like tokens, values of secret environment variables, URL passwords) are redacted."""
        from raylab.secrets import redact

        return redact(_plain(dataclasses.asdict(self)))


def resolve(cfg: Mapping[str, Any], run_dir: str = ".") -> RunConfig:
    """Validate a composed config (DictConfig or plain mapping) into a frozen ``RunConfig``.

    Raises ``ConfigError`` (one line, names the fix) on unknown keys, wrong types, bad values, unknown env
    ids and stop conditions that can never trigger.
    """
    data = _to_container(cfg)
    data.pop("hydra", None)
    data["run_dir"] = str(run_dir)
    run = _build(RunConfig, data, "")
    _check_cross_fields(run)
    return run


def _check_cross_fields(run: RunConfig) -> None:
    from raylab.envs.registry import check_env_config, max_return
    from raylab.learner.options import check_learner_options

    algos = TOPOLOGY_ALGOS[run.topology.name]
    runners = [t for t, a in TOPOLOGY_ALGOS.items() if run.algo.name in a and t != "local"]
    _check(
        run.algo.name in algos,
        f"topology={run.topology.name} runs {'/'.join(algos)}, not algo={run.algo.name}: "
        f"add algo={algos[0]}, or topology={'/'.join(runners) or 'local'} for algo={run.algo.name}",
    )
    _check(
        run.algo.name != "dqn" or run.replay.min_size >= run.learner.batch_size,
        f"replay.min_size={run.replay.min_size} is below learner.batch_size={run.learner.batch_size}: "
        f"raise replay.min_size",
    )
    if isinstance(run.algo, PPOConfig | APPOConfig):
        steps = run.topology.num_workers * run.topology.envs_per_worker * run.topology.rollout_length
        _check(
            run.algo.minibatches <= steps,
            f"algo.minibatches={run.algo.minibatches} exceeds the {steps} steps of one round of rollouts: lower "
            f"algo.minibatches or raise topology.rollout_length",
        )
    _check(
        not run.checkpoint.replay or run.algo.name == "dqn",
        f"checkpoint.replay=true snapshots a replay, and algo={run.algo.name} has none: set checkpoint.replay=false",
    )
    _check(
        run.eval.greedy or not isinstance(run.algo, DQNConfig),
        "eval.greedy=false samples from a policy, and algo=dqn has none: set algo.epsilon.eval instead",
    )
    check_learner_options(run.algo.name, run.learner)
    check_env_config(run.env)
    stop = run.stop
    if stop.env_steps is None and stop.seconds is None and stop.mean_return is None and stop.train_return is None:
        raise ConfigError("no stop condition: set stop.env_steps, stop.seconds or stop.mean_return")
    bound = max_return(run.env)
    if stop.train_return is not None and bound is not None and stop.train_return > bound:
        raise ConfigError(
            f"stop.train_return={stop.train_return:g} can never trigger: {run.env.id} returns at most {bound:g} "
            f"per episode; set stop.train_return<={bound:g} or null"
        )
    if stop.mean_return is not None:
        if not run.eval.periodic:
            raise ConfigError(
                f"stop.mean_return={stop.mean_return} can never trigger: periodic evaluation is off; "
                f"set eval.every_seconds=10 or eval.every_env_steps=N"
            )
        bound = max_return(run.env)
        if bound is not None and stop.mean_return > bound:
            raise ConfigError(
                f"stop.mean_return={stop.mean_return:g} can never trigger: {run.env.id} returns at most "
                f"{bound:g} per episode; set stop.mean_return<={bound:g} or null"
            )


# --------------------------------------------------------------------------------------------------------
# DictConfig -> dataclasses


def _to_container(cfg: Mapping[str, Any]) -> dict[str, Any]:
    try:
        from omegaconf import DictConfig, OmegaConf
    except ImportError:  # pragma: no cover - omegaconf ships with hydra-core
        return dict(cfg)
    if isinstance(cfg, DictConfig):
        try:
            container = OmegaConf.to_container(cfg, resolve=True)
        except Exception as err:  # interpolation errors from OmegaConf
            raise ConfigError(f"cannot resolve the config: {' '.join(str(err).split())}") from err
        assert isinstance(container, dict)
        return {str(k): v for k, v in container.items()}
    return dict(cfg)


def _build(cls: Any, data: Any, path: str) -> Any:
    if not isinstance(data, Mapping):
        raise ConfigError(f"{path or 'the config'} must be a mapping (got {data!r})")
    hints = typing.get_type_hints(cls)
    names = [f.name for f in fields(cls)]
    for key in data:
        if key not in names:
            hint = difflib.get_close_matches(str(key), names, n=1)
            fix = f"did you mean '{_join(path, hint[0])}'?" if hint else f"valid keys: {', '.join(names)}"
            raise ConfigError(f"unknown config key '{_join(path, str(key))}': {fix}")
    kwargs = {name: _coerce(hints[name], data[name], _join(path, name)) for name in names if name in data}
    return cls(**kwargs)


def _coerce(tp: Any, value: Any, path: str) -> Any:
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        options = [a for a in args if a is not type(None)]
        if all(is_dataclass(a) for a in options) and len(options) > 1:
            return _build_tagged(options, value, path)
        errors = []
        for option in options:
            try:
                return _coerce(option, value, path)
            except ConfigError as err:
                errors.append(err)
        raise errors[-1]
    if value is None:
        raise ConfigError(f"{path} must not be null: give it a value")
    if is_dataclass(tp):
        return _build(tp, value, path)
    if origin is Literal:
        if value not in args:
            raise ConfigError(f"{path} must be one of {', '.join(map(str, args))} (got {value!r})")
        return value
    if origin is tuple:
        if not isinstance(value, list | tuple):
            raise ConfigError(f"{path} must be a list (got {value!r}), e.g. {path}=[1,2]")
        return tuple(_coerce(args[0], v, f"{path}[{i}]") for i, v in enumerate(value))
    if origin is dict or tp is dict:
        if not isinstance(value, Mapping):
            raise ConfigError(f"{path} must be a mapping (got {value!r})")
        return dict(value)
    if tp is Any:
        return value
    if tp is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{path} must be true or false (got {value!r})")
        return value
    if tp is int:
        number = _number(value, path, "an integer")
        if float(number) != int(number):
            raise ConfigError(f"{path} must be an integer (got {value!r})")
        return int(number)
    if tp is float:
        return float(_number(value, path, "a number"))
    if tp is str:
        if not isinstance(value, str):
            raise ConfigError(f"{path} must be a string (got {value!r}); quote it")
        return value
    raise TypeError(f"unsupported config type {tp!r} at {path}")  # a bug in the schema, not user input


def _build_tagged(options: list[Any], value: Any, path: str) -> Any:
    by_name = {typing.get_args(typing.get_type_hints(o)["name"])[0]: o for o in options}
    name = value.get("name") if isinstance(value, Mapping) else None
    if name not in by_name:
        raise ConfigError(f"unknown {path} '{name}': choose one of {', '.join(by_name)}")
    return _build(by_name[name], value, path)


def _number(value: Any, path: str, what: str) -> float | int:
    if isinstance(value, bool):
        raise ConfigError(f"{path} must be {what} (got {value!r})")
    if isinstance(value, int | float):
        return value
    if isinstance(value, str):
        try:
            return float(value.replace("_", ""))
        except ValueError:
            pass
    raise ConfigError(f"{path} must be {what} (got {value!r})")


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _check(condition: bool, message: str) -> None:
    if not condition:
        raise ConfigError(message)


def _positive_or_none(value: float | None, name: str) -> None:
    if value is not None and value <= 0:
        raise ConfigError(f"{name} must be > 0 or null (got {value})")

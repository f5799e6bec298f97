"""The frozen dataclass schema of a run: ``RunConfig`` and its sections, one docstring under each field.

Field checks live in each dataclass's ``__post_init__``; checks across sections (and against the env
registry) in raylab/config/checks.py. Two kinds of section live elsewhere:

- the ``algo`` sections in raylab/config/algo.py (why not beside their algorithms: see there);
- ``EnvConfig`` beside the env families, in raylab/envs/config.py: the families take it, and ``resolve``
  asks them whether an env config can work (raylab/config/checks.py), so were it here, raylab.envs would
  import raylab.config, whose ``__init__`` imports ``resolve``, which imports raylab.envs: a circle
  (tests/unit/test_imports.py). The price: importing raylab.config imports raylab.envs (gymnasium and
  numpy, not torch).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Literal

from raylab.config.algo import AlgoConfig, DQNConfig
from raylab.config.algorithms import TOPOLOGY_ALGOS
from raylab.config.coerce import plain
from raylab.envs.config import EnvConfig
from raylab.errors import check, positive_or_none


@dataclass(frozen=True)
class ModelConfig:
    encoder: Literal["mlp", "nature_cnn", "impala_cnn", "custom"] = "mlp"
    """Observation encoder: mlp for vectors; nature_cnn or impala_cnn (Procgen's residual CNN) for images;
    custom: model.factory builds the whole network (model=custom)."""
    hidden_sizes: tuple[int, ...] = (256, 256)
    """Fully connected layers after the encoder's input (mlp) or convolutions (nature_cnn)."""
    dueling: bool = False
    """Dueling Q head: V(s) + A(s, a) - mean_a A(s, a)."""
    norm: Literal["none", "batch"] = "none"
    """nature_cnn: BatchNorm after each convolution (seed 001's Mario network); workers act in eval mode."""
    log_std_init: float = 0.0
    """Continuous (Box) actions: the starting log standard deviation of the Gaussian policy (a learned,
    state-independent parameter per action dimension)."""
    normalize_obs: bool = False
    """Standardize observations with running mean and variance that the learner updates and ships inside the
    weights (PPO, APPO; raylab/models/normalize.py). Not with A3C (its parameter servers move parameters only)."""
    numpy_inference: bool = True
    """PPO and APPO rollout actors act through a NumPy copy of a plain MLP actor-critic, DQN's through one of a
    plain MLP Q network (raylab/models/numpy_policy.py: the same distribution, the same greedy actions; 2.2x
    faster than torch at 32 envs of CartPole, where torch's per-operation overhead dominates:
    benchmarks/policy_inference.json); false keeps torch. Other models (CNNs, dueling or quantile heads,
    custom) always act in torch."""
    factory: str | None = None
    """model=custom: ``pkg.module:make_model``, called as ``make_model(spaces, head, **model.options)`` in every
    process that builds the network (learner, rollout actors, evaluator); the contract is in
    raylab/models/custom.py."""
    options: dict[str, Any] = field(default_factory=dict)
    """model=custom: keyword arguments for model.factory."""

    def __post_init__(self) -> None:
        check(all(h > 0 for h in self.hidden_sizes), "model.hidden_sizes must be positive integers")
        check(
            (self.encoder == "custom") == (self.factory is not None),
            "model.factory goes with model=custom (model.encoder=custom) and model=custom needs "
            "model.factory=<package.module:function>",
        )
        check(not self.options or self.encoder == "custom", "model.options are model.factory's: use model=custom")


@dataclass(frozen=True)
class TopologyConfig:
    name: str = "apex_dqn"
    """Dataflow: local (serial, no Ray) | apex_dqn | a3c | ppo | appo; each Ray topology runs its algorithms
    (raylab/config/algorithms.py), local runs every algorithm."""
    num_workers: int = 2
    """Rollout workers, or A3C workers (Ray actors, or serial workers taking turns in the local topology)."""
    envs_per_worker: int = 8
    """Envs stepped as one batch inside each worker."""
    rollout_length: int = 32
    """Steps per env in one chunk; a chunk moves rollout_length x envs_per_worker steps at once (A3C: the
    longest segment)."""
    chunks_in_flight: int = 1
    """Sample calls each rollout actor has queued at once (topology=appo). 2 double-buffers at the level of
    calls: an actor starts its next chunk the moment it finishes one instead of idling while the driver
    takes the chunk and sends the next call; each call beyond the first adds up to a chunk of policy lag,
    which V-trace corrects. Other topologies sample one call at a time (ppo's rounds are synchronous)."""
    worker_cpus: float = 1.0
    """Logical Ray CPUs reserved per rollout actor (A3C: per worker)."""
    max_actor_restarts: int = -1
    """How often a crashed actor is restarted, in every Ray topology: rollout actors, replay shards, the
    learner, parameter-server shards, A3C workers (replaced by the driver) and the evaluation actor. -1 =
    always; 0 = never (a crash ends the run in one line); n = at most n deaths per actor. The learner and
    A3C's server come back from the latest periodic checkpoint, a replay shard empty or from its snapshot
    (checkpoint.replay)."""

    def __post_init__(self) -> None:
        check(self.max_actor_restarts >= -1, "topology.max_actor_restarts must be -1 (always), 0 or more")
        check(
            self.name in TOPOLOGY_ALGOS,
            f"unknown topology '{self.name}': choose one of {', '.join(TOPOLOGY_ALGOS)} (e.g. topology=apex_dqn)",
        )
        check(
            self.num_workers >= 1,
            f"topology.num_workers must be >= 1 (got {self.num_workers}): set topology.num_workers=1 or more",
        )
        check(
            self.envs_per_worker >= 1,
            f"topology.envs_per_worker must be >= 1 (got {self.envs_per_worker})",
        )
        check(self.rollout_length >= 1, f"topology.rollout_length must be >= 1 (got {self.rollout_length})")
        check(self.chunks_in_flight >= 1, f"topology.chunks_in_flight must be >= 1 (got {self.chunks_in_flight})")
        check(
            self.chunks_in_flight == 1 or self.name == "appo",
            f"topology.chunks_in_flight={self.chunks_in_flight} needs topology=appo (topology={self.name} samples "
            "one call at a time): set topology.chunks_in_flight=1",
        )
        check(self.worker_cpus >= 0, "topology.worker_cpus must be >= 0")


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
        check(0 <= self.worker_nice <= 19, f"params.worker_nice must be in 0..19 (got {self.worker_nice})")
        check(self.num_shards >= 1, f"params.num_shards must be >= 1 (got {self.num_shards})")
        check(self.pushes_in_flight >= 0, f"params.pushes_in_flight must be >= 0 (got {self.pushes_in_flight})")
        check(self.shard_cpus >= 0, "params.shard_cpus must be >= 0")


@dataclass(frozen=True)
class LearnerConfig:
    device: Literal["auto", "cpu", "cuda"] = "auto"
    """auto picks cuda when present."""
    batch_size: int = 64
    """DQN: transitions per update (PPO and APPO split their chunks into algo.minibatches instead)."""
    lr: float = 1e-3
    """Adam learning rate (A3C: algo.lr, applied by the parameter server)."""
    adam_eps: float = 1e-8
    """Adam epsilon."""
    max_grad_norm: float | None = 10.0
    """Clip gradients to this global norm (None = no clipping)."""
    updates_per_call: int = 32
    """DQN: updates per learner call, on batches sampled in one replay call; amortizes the Ray round trip."""
    publish_every: int = 32
    """DQN: publish new inference weights every N updates (PPO and APPO publish after every learner call)."""
    num_threads: int = 1
    """torch intra-op threads in the learner, and NumPy's BLAS threads in its process (the fused update)."""
    num_cpus: float = 1.0
    """Logical Ray CPUs for the learner actor."""
    num_gpus: float = 0.0
    """Ray GPUs reserved for the learner actor; 0 (with device auto or cuda) reserves one when the Ray
    cluster has a GPU."""
    precision: Literal["fp32", "bf16", "fp16"] = "fp32"
    """Mixed precision: bf16 autocast (CPU or CUDA), fp16 autocast with a GradScaler (CUDA only). It pays on
    the CPU (bf16: 1.8x fp32 for mario_dqn's CNN); on an H100 these small CNNs are launch-bound and AMP ran at
    0.76-0.92x fp32 (benchmarks/learner_cuda_dqn.json): there, keep fp32 (TF32) and use compile_mode."""
    compile: bool = False
    """torch.compile the update: the loss (forward and backward) and the optimizer step."""
    compile_mode: Literal["default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs"] = "default"
    """torch.compile mode. On CUDA, reduce-overhead (CUDA graphs) is the one that pays for small models:
    1.8-2.2x eager fp32 updates/s on an H100 for the DQN and PPO CNNs, where default compile gave 0.9-1.04x."""
    grad_accumulation: int = 1
    """Split each batch into this many micro-batches and accumulate their gradients (one optimizer step)."""
    prefetch: bool = True
    """A thread readies the next batch (gather, pin, copy to the device) while the current one trains: on
    CUDA for every algorithm; on the CPU where pulling a batch waits (DQN's replay draws), not for PPO's and
    APPO's minibatches, gathered from memory faster than the threads hand them over, nor for DQN's fused
    update (learner.fused), which pulls its steps inline."""
    tf32: bool = True
    """On CUDA: TF32 matmuls/convolutions and cudnn.benchmark (no effect on CPU)."""
    fused: Literal["auto", True, False] = "auto"
    """A plain MLP trained fp32 on the CPU: each optimizer step (forward, loss, backward, clipping, Adam) written
    out in NumPy instead of run through autograd, the same math on the same tensors. DQN's
    (raylab/learner/fused/dqn.py; 3.5x faster on Snake's 128x128 MLP at batch 32, 1.4x at 256x256:
    benchmarks/dqn_fused_update.json) and PPO's/APPO's clipped objective (raylab/learner/fused/ppo.py:
    benchmarks/ppo_fused_update.json). auto: where it applies; true: refuse a run where it does not; false:
    torch's autograd path always."""

    def __post_init__(self) -> None:
        check(self.batch_size >= 1, f"learner.batch_size must be >= 1 (got {self.batch_size})")
        check(
            self.grad_accumulation >= 1 and self.batch_size % self.grad_accumulation == 0,
            f"learner.grad_accumulation={self.grad_accumulation} must be >= 1 and divide learner.batch_size="
            f"{self.batch_size}: pick a divisor",
        )
        check(self.lr > 0, f"learner.lr must be > 0 (got {self.lr})")
        positive_or_none(self.max_grad_norm, "learner.max_grad_norm")
        check(self.updates_per_call >= 1, "learner.updates_per_call must be >= 1")
        check(self.publish_every >= 1, "learner.publish_every must be >= 1")
        check(self.num_threads >= 1, "learner.num_threads must be >= 1")


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
        check(self.capacity >= 1, f"replay.capacity must be >= 1 (got {self.capacity})")
        check(self.min_size >= 1, f"replay.min_size must be >= 1 (got {self.min_size})")
        check(
            self.min_size <= self.capacity,
            f"replay.min_size={self.min_size} exceeds replay.capacity={self.capacity}: lower min_size",
        )
        check(self.samples_per_insert >= 0, "replay.samples_per_insert must be >= 0")
        check(self.num_shards >= 1, f"replay.num_shards must be >= 1 (got {self.num_shards})")
        check(0.0 <= self.alpha <= 1.0, f"replay.alpha must be in [0, 1] (got {self.alpha})")
        check(
            0.0 <= self.beta <= 1.0 and 0.0 <= self.beta_final <= 1.0,
            f"replay.beta and replay.beta_final must be in [0, 1] (got {self.beta}, {self.beta_final})",
        )
        check(self.priority_eps > 0, f"replay.priority_eps must be > 0 (got {self.priority_eps})")
        positive_or_none(self.error_buffer, "replay.error_buffer")


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
    """Weights & Biases (``logger=wandb`` turns it on)."""
    tensorboard: bool = False
    """Also write TensorBoard event files under <run_dir>/tensorboard (needs the ``tensorboard`` extra)."""
    timing: bool = True
    """Per-stage timers in every actor (env, inference, weight sync, waits, replay add/sample, ...);
    false turns them into no-ops (benchmarks/timer_overhead.json measures the difference)."""

    def __post_init__(self) -> None:
        check(self.report_every_seconds > 0, "logger.report_every_seconds must be > 0")


@dataclass(frozen=True)
class StopConfig:
    env_steps: int | None = 200_000
    """Stop after this many env (agent) steps."""
    seconds: float | None = 600.0
    """Stop after this much training wall time."""
    mean_return: float | None = None
    """Stop once a periodic evaluation reaches this mean return and holds it over eval.confirm_episodes
    more episodes of the same weights."""
    train_return: float | None = None
    """Stop once the mean return of the last 100 training episodes reaches this (RLlib's and Sample
    Factory's usual criterion; it judges the exploring policy, not the greedy one)."""

    def __post_init__(self) -> None:
        positive_or_none(self.env_steps, "stop.env_steps")
        positive_or_none(self.seconds, "stop.seconds")


@dataclass(frozen=True)
class EvalConfig:
    every_seconds: float | None = 10.0
    """Periodic evaluation (greedy unless eval.greedy=false), wall-clock interval (None = off)."""
    every_env_steps: int | None = None
    """Periodic evaluation, env-step interval (None = off)."""
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
        positive_or_none(self.every_seconds, "eval.every_seconds")
        positive_or_none(self.every_env_steps, "eval.every_env_steps")
        check(self.episodes >= 1, "eval.episodes must be >= 1")
        check(self.final_episodes >= 0, "eval.final_episodes must be >= 0")
        check(self.confirm_episodes >= 0, "eval.confirm_episodes must be >= 0")

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
        positive_or_none(self.every_seconds, "checkpoint.every_seconds")
        check(self.keep >= 1, "checkpoint.keep must be >= 1")


@dataclass(frozen=True)
class RayConfig:
    address: str = ""
    """Empty starts an embedded local Ray (or joins RAY_ADDRESS under ``ray job submit``); ``auto``,
    ``host:port`` or ``ray://host:port`` joins a running cluster."""
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
    runtime_env: dict[str, Any] = field(default_factory=dict)
    """Ray's runtime_env for this run's actors (``ray.init(runtime_env=...)``), e.g. ``{py_modules: [mypkg]}``
    or ``{pip: [mypkg]}`` to ship your env/model package to every node; empty: none (under ``ray job submit``,
    the job's own --runtime-env-json applies)."""

    def __post_init__(self) -> None:
        check(self.connect_timeout_s > 0, "ray.connect_timeout_s must be > 0")
        positive_or_none(self.num_cpus, "ray.num_cpus")
        positive_or_none(self.object_store_memory, "ray.object_store_memory")


@dataclass(frozen=True)
class SweepConfig:
    objective: Literal["eval_return", "time_to_target"] = "eval_return"
    """What a trial of a sweep (``python -m raylab.train -m ...``) returns to Hydra's sweeper: the final greedy
    evaluation's mean return (maximize), or the training seconds until stop.mean_return was reached
    (minimize; never reached: infinity). raylab/sweep.py; docs: Sweeps."""


@dataclass(frozen=True)
class PolicyConfig:
    """One of a run's several policies (``policies.<name>``): each key overrides the run's section of that name
    for this policy's learner, rollout and evaluation networks (raylab/policies.py). Every policy runs the
    run's algorithm (``algo.name`` may not differ)."""

    algo: dict[str, Any] = field(default_factory=dict)
    """Overrides of the run's ``algo`` section (hyperparameters: gamma, entropy_coef, ...), e.g. ``{gamma: 0.9}``."""
    model: dict[str, Any] = field(default_factory=dict)
    """Overrides of the run's ``model`` section (e.g. ``{hidden_sizes: [64, 64]}``)."""
    learner: dict[str, Any] = field(default_factory=dict)
    """Overrides of the run's ``learner`` section (e.g. ``{lr: 0.001}``)."""
    replay: dict[str, Any] = field(default_factory=dict)
    """Overrides of the run's ``replay`` section for this policy's own replay shards (DQN), e.g.
    ``{capacity: 50000}``; ``num_shards`` is the run's for every policy."""


@dataclass(frozen=True)
class RunConfig:
    """Everything a run needs, validated; built once by ``resolve``."""

    seed: int = 0
    """The run's seed: envs, exploration, network initialization and replay sampling derive theirs from it
    (each worker, shard and restarted actor its own)."""
    env: EnvConfig = field(default_factory=EnvConfig)
    """The environment and its preprocessing (config group ``env``: gymnasium, mario, procgen, snake, fake)."""
    algo: AlgoConfig = field(default_factory=DQNConfig)
    """The algorithm and its hyperparameters (config group ``algo``: dqn, a3c, ppo, appo), one schema per
    algorithm, told apart by ``algo.name``."""
    model: ModelConfig = field(default_factory=ModelConfig)
    """The network (config group ``model``: mlp, nature_cnn, impala_cnn)."""
    topology: TopologyConfig = field(default_factory=TopologyConfig)
    """The dataflow and its workers (config group ``topology``: apex_dqn, a3c, ppo, appo, local)."""
    learner: LearnerConfig = field(default_factory=LearnerConfig)
    """The one Learner of DQN, PPO and APPO: optimizer, batches, device and speed options (A3C has none)."""
    replay: ReplayConfig = field(default_factory=ReplayConfig)
    """DQN's replay: sampler, capacity, shards, rate limit, frame de-duplication (config group ``replay``:
    uniform, prioritized)."""
    params: ParamsConfig = field(default_factory=ParamsConfig)
    """A3C's parameter server."""
    logger: LoggerConfig = field(default_factory=LoggerConfig)
    """Console, W&B and TensorBoard outputs and the stage timers (``metrics.jsonl`` is always written)."""
    stop: StopConfig = field(default_factory=StopConfig)
    """When training stops: whichever condition comes first (at least one must be set)."""
    eval: EvalConfig = field(default_factory=EvalConfig)
    """Periodic and final evaluation of the newest weights, by the evaluator (on Ray, its own actor)."""
    checkpoint: CheckpointConfig = field(default_factory=CheckpointConfig)
    """Periodic checkpoints and replay snapshots (``checkpoints/final.pt`` is always written)."""
    ray: RayConfig = field(default_factory=RayConfig)
    """Which Ray to run on (embedded or a cluster) and the embedded Ray's resources."""
    sweep: SweepConfig = field(default_factory=SweepConfig)
    """What a sweep's trials are scored by (only read under ``-m``)."""
    policies: dict[str, PolicyConfig] = field(default_factory=dict)
    """Several policies in one run of a multi-agent env: name -> its overrides of the run's algo, model and
    learner sections. Empty: one policy acts for every agent (parameter sharing). Each policy has its own
    learner, weights and checkpoint state; docs: Several agents."""
    policy_mapping: dict[str, str] = field(default_factory=dict)
    """Which agents each policy acts for: agent-id pattern (fnmatch: ``snake_[02]``, ``adversary_*``) -> policy
    name; an agent takes the first pattern that matches it. Every agent must match one; needs ``policies``."""
    run_dir: str = "."
    """Where the run writes its outputs: raylab.train sets it to the Hydra run dir (choose it with
    ``hydra.run.dir=...``; it is not a key of the composed config)."""
    resume: str | None = None
    """A run dir to continue from its newest checkpoint, counters intact; the run then writes into that dir
    (raylab/driver/resume.py). Stop conditions count the totals: raise stop.* to train further."""

    def to_dict(self) -> dict[str, Any]:
        """Plain nested dict (tuples as lists), as written to config.yaml, W&B and checkpoints: secrets
        (keys named like tokens, values of secret environment variables, URL passwords) are redacted."""
        from raylab.secrets import redact

        return redact(plain(dataclasses.asdict(self)))

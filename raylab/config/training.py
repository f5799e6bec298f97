"""The sections that say what a run trains and how: the network (``model``), the dataflow (``topology``, and
A3C's parameter server, ``params``), the Learner (``learner``) and DQN's replay (``replay``). RunConfig unites
them with the others in raylab/config/schema.py; each field's docstring is its entry in the configuration
reference (raylab/config/reference.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from raylab.config.algorithms import TOPOLOGY_ALGOS
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
    """nature_cnn: BatchNorm after each convolution of the Nature CNN (Mnih et al. 2015); workers act in eval
    mode."""
    conv_channels: tuple[int, ...] = (32, 64, 64)
    """nature_cnn: the output channels of its three convolutions (Mnih et al. 2015's 32, 64, 64). A CPU learner
    spends most of an update in the convolutions' arithmetic (docs/benchmarks/internals.md), so narrower ones
    buy updates a second: [16,32,32] makes a forward pass 0.38x the FLOPs at 84x84 and 0.39x at 64x64 (torch's
    FlopCounterMode, hidden_sizes [512])."""
    log_std_init: float = 0.0
    """Continuous (Box) actions: the starting log standard deviation of the Gaussian policy (a learned,
    state-independent parameter per action dimension)."""
    normalize_obs: bool = False
    """Standardize observations with running mean and variance that the learner updates and ships inside the
    weights (PPO, APPO; raylab/models/normalize.py). Not with A3C (its parameter servers move parameters only)."""
    image_scale: float = 1.0 / 255.0
    """What each image part of a Tuple or Dict observation is multiplied by before its encoder
    (raylab/models/keyed.py): 1/255 takes pixels to [0, 1]. MiniGrid's native image holds (object, colour, state)
    codes of at most 10, not pixels: 0.1 takes them there. A Box image is always scaled by 1/255."""
    numpy_inference: bool = True
    """PPO and APPO rollout actors act through a NumPy copy of a plain MLP actor-critic, DQN's through one of a
    plain MLP Q network (raylab/models/numpy_policy.py: the same distribution, the same greedy actions; 2.2x
    faster than torch at 32 envs of CartPole, where torch's per-operation overhead dominates:
    benchmarks/policy_inference.json); false keeps torch. An MLP with a recurrent core (model.recurrent) acts
    through a NumPy copy too, the LSTM or GRU step included (benchmarks/recurrent_cost.json). Other models
    (CNNs, dueling or quantile heads, custom) always act in torch."""
    init: Literal["default", "orthogonal"] = "default"
    """The actor-critic's starting weights (PPO, APPO, A3C). ``default``: PyTorch's per-layer defaults, the policy
    head scaled by 0.01. ``orthogonal``: as openai/baselines, CleanRL and Sample Factory start Atari networks:
    every encoder layer orthogonal with gain sqrt(2) and zero biases, the policy head orthogonal with gain 0.01,
    the value head with gain 1. PyTorch's defaults leave a Nature CNN's features on Pong frames 35x smaller (RMS
    0.014 against 0.49), so each Adam step moves the policy that much less (pong_appo sets it)."""
    rollout_precision: Literal["fp32", "bf16", "auto"] = "fp32"
    """The rollout actors' inference with a CNN (PPO, APPO, DQN; not A3C, whose workers train the module they act
    with): ``bf16`` runs the encoder of their copy of the network in bfloat16, cast from each published fp32
    version; the heads stay fp32. On a CPU with native bf16 (AVX512-BF16 or AMX) the Nature CNN's act() takes
    0.54-0.60x the time at 8-32 envs per worker, the IMPALA CNN's 0.25-0.33x (with the channels-last layout it
    always acts in; benchmarks/cnn_inference.json); on CPUs without it bf16 is emulated and far slower than
    fp32. ``auto``: bf16 where each actor's CPU has it natively, else fp32 (raylab/models/precision.py).
    Evaluation and the learner stay fp32; the learner recomputes PPO's old log-probabilities, and V-trace
    corrects APPO's."""
    recurrent: Literal["none", "lstm", "gru"] = "none"
    """A memory after the encoder (PPO, APPO, A3C): an LSTM or GRU layer of ``recurrent_size`` units whose state
    each rollout worker keeps per env slot, zeroes at episode ends, and sends with each chunk; the learner
    replays whole sequences of ``algo.bptt`` steps (truncated backpropagation through time) from those states.
    For tasks whose clue is older than a frame stack (raylab/models/recurrent.py)."""
    recurrent_size: int = 128
    """Units of the model.recurrent layer (an LSTM's state per slot is twice that: h and c)."""
    factory: str | None = None
    """model=custom: ``pkg.module:make_model``, called as ``make_model(spaces, head, **model.options)`` in every
    process that builds the network (learner, rollout actors, evaluator); the contract is in
    raylab/models/custom.py."""
    options: dict[str, Any] = field(default_factory=dict)
    """model=custom: keyword arguments for model.factory."""

    def __post_init__(self) -> None:
        check(
            all(h > 0 for h in self.hidden_sizes),
            f"model.hidden_sizes must be positive layer widths (got {list(self.hidden_sizes)}): e.g. "
            "model.hidden_sizes=[256,256]",
        )
        check(
            len(self.conv_channels) == 3 and all(c > 0 for c in self.conv_channels),
            f"model.conv_channels must be 3 positive widths, one per convolution of the Nature CNN (got "
            f"{list(self.conv_channels)}): e.g. model.conv_channels=[32,64,64]",
        )
        check(self.recurrent_size > 0, f"model.recurrent_size must be positive (got {self.recurrent_size})")
        check(
            self.encoder != "custom" or self.factory is not None,
            "model=custom needs model.factory=<package.module:function>",
        )


@dataclass(frozen=True)
class TopologyConfig:
    name: str = "apex_dqn"
    """Dataflow: local (serial, no Ray) | apex_dqn | a3c | ppo | appo; each Ray topology runs its algorithms
    (raylab/config/algorithms.py), local runs every algorithm."""
    num_workers: int = 2
    """Rollout workers, or A3C workers (Ray actors, or serial workers taking turns in the local topology);
    ``auto``: sized by a short probe on this machine before the run (raylab/builders/autosize.py)."""
    envs_per_worker: int = 8
    """Envs stepped as one batch inside each worker; ``auto``: the fewest within 10 % of the best rate a
    probe of one worker measures here."""
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
    inference: str = "local"
    """Where rollout actions are computed. local: each rollout actor acts with its own copy of the policy, on
    its own core, between env steps. central: rollout actors only step envs and send their observations to
    ``inference_actors`` inference actors, which act for all of them in batches (on the GPU when the cluster
    has one) and take the learner's weights; rollout actors then receive none (Sample Factory's policy
    workers, SEED RL's central inference). Topologies apex_dqn, ppo and appo, with one feed-forward policy."""
    inference_actors: int = 1
    """Inference actors (topology.inference=central); rollout actor i sends to actor i % inference_actors.
    ``auto``: sized with topology.num_workers by the probe (raylab/builders/autosize.py): one on a GPU, on
    CPUs alone the cores inference takes."""
    inference_cpus: float = 1.0
    """Logical Ray CPUs reserved per inference actor (and its torch threads: at least 1)."""
    inference_device: Literal["auto", "cpu", "cuda"] = "auto"
    """Where inference actors act: auto takes a GPU when the cluster has one (a share of it beside the
    learner's), else the CPU."""
    inference_transport: str = "auto"
    """How rollout actors reach their inference actor (topology.inference=central). auto: a shared-memory channel
    per env split when both run on one machine, a Ray actor call per request otherwise; ray: Ray actor calls
    always. Measured (benchmarks/inference_transport.json): a Pong split's request costs the inference actor
    ~0.13 ms of CPU through a channel against ~1.3 ms as a Ray call."""
    env_splits: int = 0
    """Equal parts of each rollout actor's envs, stepped in turn with central inference: while one part
    steps, the other part's observations are at the inference actor (2: Sample Factory's double-buffered
    sampling). 0 (auto): 2 when topology.envs_per_worker is even, else 1; local inference steps one part."""
    max_actor_restarts: int = -1
    """How often a crashed actor is restarted, in every Ray topology: rollout actors, replay shards, the
    learner, parameter-server shards, A3C workers (replaced by the driver), inference actors and the
    evaluation actor. -1 =
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
        check(self.worker_cpus >= 0, "topology.worker_cpus must be >= 0")
        check(
            self.inference in ("local", "central"),
            f"unknown topology.inference '{self.inference}': choose local or central",
        )
        check(
            self.inference_actors >= 1,
            f"topology.inference_actors must be >= 1 (got {self.inference_actors})",
        )
        check(self.inference_cpus >= 0, "topology.inference_cpus must be >= 0")
        check(
            self.inference_transport in ("auto", "ray"),
            f"unknown topology.inference_transport '{self.inference_transport}': choose auto or ray",
        )
        check(self.env_splits >= 0, f"topology.env_splits must be >= 0 (0: auto; got {self.env_splits})")
        if self.env_splits:
            check(
                self.envs_per_worker % self.env_splits == 0,
                f"topology.env_splits={self.env_splits} must divide topology.envs_per_worker={self.envs_per_worker} "
                f"(equal parts): e.g. topology.env_splits=1",
            )

    @property
    def central(self) -> bool:
        """Whether inference actors act for the rollout actors (topology.inference=central)."""
        return self.inference == "central"

    @property
    def splits(self) -> int:
        """The parts each rollout actor's envs step in (topology.env_splits, 0 resolved)."""
        if self.env_splits:
            return self.env_splits
        return 2 if self.central and self.envs_per_worker % 2 == 0 else 1


@dataclass(frozen=True)
class ParamsConfig:
    """The parameter server of the a3c topology (raylab/params)."""

    num_shards: int = 1
    """Server actors; each owns a contiguous slice of the flat parameter vector and its RMSProp statistics.
    RMSProp is elementwise, so sharding changes where updates run, never what they compute."""
    pushes_in_flight: int = 1
    """Gradients a worker may have sent but not yet seen applied before it blocks (0 = synchronous: wait
    for every push, as workers sharing one model behind a lock do). Bounds staleness: a gradient is at most
    this many of the worker's own pushes behind, plus whatever other workers pushed meanwhile."""
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
    lr_schedule: Literal["constant", "linear"] = "constant"
    """constant: learner.lr throughout. linear: from learner.lr at the first env step to learner.lr_final at
    stop.env_steps, then held there, each learner call taking the lr of the env steps collected when it was
    made (CleanRL's --anneal-lr, which reaches lr/N at its N-th and last update; SB3's linear_schedule); it needs
    stop.env_steps, the horizon it is measured against (raylab/learner/schedule.py). The metrics carry the lr
    of each learner call (learner/lr)."""
    lr_final: float = 0.0
    """The lr a linear learner.lr_schedule reaches at stop.env_steps."""
    adam_eps: float = 1e-8
    """Adam epsilon."""
    max_grad_norm: float | None = 10.0
    """Clip gradients to this global norm (None = no clipping)."""
    updates_per_call: int = 32
    """DQN: updates per learner call, on batches sampled in one replay call; amortizes the Ray round trip."""
    publish_every: int = 32
    """DQN: publish new inference weights every N updates (optimizer steps)."""
    publish_every_calls: int = 1
    """APPO: publish new inference weights every N learner calls (a call is one policy version; its rollout
    actors act with the newest weights they were handed, V-trace corrects for the lag). Synchronous PPO's
    actors wait for each round's weights: it publishes after every call."""
    average_rate: float | None = None
    """DQN: an exponential moving average of the policy's weights, moved toward the newest by this much per
    optimizer step (e.g. 0.001: about the last 1,000 steps; Polyak averaging of the evaluated policy): periodic and
    final evaluations score it, the stop rule judges it, and best.pt and final.pt keep it as the run's policy,
    while rollout actors act with the newest weights (a checkpoint's learner state holds both: raylab.evaluate
    scores the average, or weights=newest the newest). Parameters only: a network with running statistics
    (model.norm=batch) is refused. None: the newest weights everywhere."""
    num_threads: int = 1
    """torch intra-op threads in the learner, and NumPy's BLAS threads in its process (the fused update). Above 1,
    under Ray, its process starts with OMP_WAIT_POLICY=PASSIVE unless the user set a policy
    (raylab.remote.ray_backend)."""
    num_cpus: float = 1.0
    """Logical Ray CPUs for the learner actor; it reserves at least learner.num_threads, the cores its torch
    threads keep busy."""
    num_gpus: float = 0.0
    """Ray GPUs reserved for the learner actor; 0 (with device auto or cuda) reserves one when the Ray
    cluster has a GPU."""
    precision: Literal["fp32", "bf16", "fp16", "auto"] = "fp32"
    """Mixed precision: bf16 autocast (CPU or CUDA), fp16 autocast with a GradScaler (CUDA only). bf16 pays on a
    CPU that computes it natively (AVX512-BF16 or AMX: 1.8x fp32 for mario_dqn's CNN); on an AVX2-only CPU it is
    emulated and ran 18x slower than fp32 (benchmarks/learner_cpu_avx2.json). On a GPU these small CNNs are
    launch-bound: eager AMP ran at 0.76-0.92x fp32 on an H100 (benchmarks/learner_cuda_dqn.json, an older
    learner), and with learner.compile bf16 made 1.17x compiled fp32's steps on an H200 for pong_appo's CNN
    (benchmarks/learner_step_cost_h200.json). ``auto``: bf16 on a CPU with native bf16, fp32 elsewhere
    (raylab/models/precision.py)."""
    compile: bool = False
    """torch.compile the update: a minibatch's gather, its finish (advantages normalized) and the loss, forward
    and (through AOTAutograd) backward, at static shapes; then the clip and the Adam step on the flat buffers."""
    compile_mode: Literal["auto", "default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs"] = "auto"
    """torch.compile mode. On CUDA, reduce-overhead (CUDA graphs) is the one that pays for small models:
    1.8-2.2x eager fp32 updates/s on an H100 for the DQN and PPO CNNs, where default compile gave 0.9-1.04x.
    ``auto``: reduce-overhead on CUDA, default on the CPU (which has no graphs to capture)."""
    grad_accumulation: int = 1
    """Split each batch into this many micro-batches and accumulate their gradients (one optimizer step)."""
    prefetch: bool = True
    """A thread readies the next replay batch (draws it, pins it, copies it to the device on a side stream)
    while the current one trains: DQN's, where pulling a batch waits on the replay; not for DQN's fused update
    (learner.fused), which pulls its steps inline. PPO's and APPO's rounds are joined on the learner's device
    and their minibatches gathered there, inline: no thread would hide anything."""
    tf32: bool = True
    """On CUDA: TF32 matmuls/convolutions and cudnn.benchmark (no effect on CPU)."""
    fused: Literal["auto", True, False] = "auto"
    """A plain MLP trained fp32 on the CPU: each optimizer step (forward, loss, backward, clipping, Adam) written
    out in NumPy instead of run through autograd, the same math on the same tensors. DQN's
    (raylab/algos/dqn/fused.py; 3.5x faster on Snake's 128x128 MLP at batch 32, 1.4x at 256x256:
    benchmarks/dqn_fused_update.json) and PPO's/APPO's clipped objective (raylab/algos/ppo/fused.py:
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
        check(self.lr_final >= 0, f"learner.lr_final must be >= 0 (got {self.lr_final:g}): e.g. learner.lr_final=0")
        check(
            self.lr_schedule == "linear" or self.lr_final == 0.0,
            f"learner.lr_final={self.lr_final:g} is the end of a linear schedule: add learner.lr_schedule=linear or "
            "remove learner.lr_final",
        )
        positive_or_none(self.max_grad_norm, "learner.max_grad_norm")
        check(self.updates_per_call >= 1, "learner.updates_per_call must be >= 1")
        check(self.publish_every >= 1, "learner.publish_every must be >= 1")
        check(self.publish_every_calls >= 1, "learner.publish_every_calls must be >= 1")
        check(
            self.average_rate is None or 0.0 < self.average_rate < 1.0,
            f"learner.average_rate must be in (0, 1) (got {self.average_rate}): e.g. learner.average_rate=0.001, "
            "or null for the newest weights",
        )
        check(self.num_threads >= 1, "learner.num_threads must be >= 1")
        check(
            self.compile or self.compile_mode == "auto",
            f"learner.compile_mode={self.compile_mode} applies only to a compiled learner: add learner.compile=true "
            "or remove learner.compile_mode",
        )
        check(self.adam_eps > 0, f"learner.adam_eps must be > 0 (got {self.adam_eps}): e.g. learner.adam_eps=1e-8")
        check(self.num_gpus >= 0, f"learner.num_gpus must be >= 0 (got {self.num_gpus}): 0 trains on CPU")
        check(self.num_cpus >= 0, f"learner.num_cpus must be >= 0 (got {self.num_cpus})")


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

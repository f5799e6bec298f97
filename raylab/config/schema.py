"""The frozen dataclass schema of a run: ``RunConfig``, which unites the sections, one docstring under each field.

Field checks live in each dataclass's ``__post_init__``; checks across sections (and against the env
registry) in raylab/config/checks.py. The sections live in modules by theme, and are importable from here too:

- what trains and how (``model``, ``topology``, ``params``, ``learner``, ``replay``) in raylab/config/training.py;
- what surrounds the training (``logger``, ``stop``, ``eval``, ``checkpoint``, ``ray``, ``sweep``) in
  raylab/config/runtime.py;
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
from typing import Any

from raylab.config.algo import AlgoConfig, DQNConfig
from raylab.config.algorithms import (
    TOPOLOGY_ALGOS as TOPOLOGY_ALGOS,  # re-exported (raylab.config imports it from here)
)
from raylab.config.coerce import plain
from raylab.config.runtime import CheckpointConfig, EvalConfig, LoggerConfig, RayConfig, StopConfig, SweepConfig
from raylab.config.runtime import WandbConfig as WandbConfig  # re-exported (only LoggerConfig holds one)
from raylab.config.training import LearnerConfig, ModelConfig, ParamsConfig, ReplayConfig, TopologyConfig
from raylab.envs.config import EnvConfig
from raylab.errors import check


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


MAX_SEED = 2**32 - 1
"""numpy's and torch's generators take any seed in 0..2**32 - 1, and so do the seeds raylab derives from it."""


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
    overwrite: bool = False
    """A run dir that already holds a run (its config.yaml, metrics.jsonl, checkpoints) is refused, so that no
    finished run is ever trained over; true deletes that run's outputs first and trains a new run there."""

    def __post_init__(self) -> None:
        check(
            0 <= self.seed <= MAX_SEED,
            f"seed must be between 0 and {MAX_SEED} (got {self.seed}): pick a seed in that range, e.g. seed=0",
        )

    @property
    def eval_env(self) -> EnvConfig:
        """The env config of evaluation episodes: env with eval.env_options over env.options."""
        if not self.eval.env_options:
            return self.env
        return dataclasses.replace(self.env, options={**self.env.options, **self.eval.env_options})

    def to_dict(self) -> dict[str, Any]:
        """Plain nested dict (tuples as lists), as written to config.yaml, W&B and checkpoints: secrets
        (keys named like tokens, values of secret environment variables, URL passwords) are redacted."""
        from raylab.secrets import redact

        return redact(plain(dataclasses.asdict(self)))

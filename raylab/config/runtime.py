"""The sections around the training itself: what a run reports (``logger``, W&B), when it stops (``stop``),
how it is evaluated (``eval``) and checkpointed (``checkpoint``), which Ray it runs on (``ray``) and what a
sweep's trials are scored by (``sweep``). RunConfig unites them with the others in raylab/config/schema.py;
each field's docstring is its entry in the configuration reference (raylab/config/reference.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from raylab.errors import check, positive_or_none

MIN_OBJECT_STORE = 75 * 1024 * 1024
"""Ray refuses a smaller object store (ray.init raises ValueError)."""


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
    eval_extras: dict[str, float] | None = None
    """Stop once a periodic evaluation's mean of each named episode value reaches its threshold, held over
    eval.confirm_episodes more episodes as for stop.mean_return: Mario's greedy flag rate,
    ``stop.eval_extras={flag_get: 0.8}`` (null: none). The values are the env family's (Mario: x_pos, flag_get; Snake:
    snake_length, score)."""

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
    video: bool = False
    """Record one more greedy episode of the same weights at each periodic evaluation and at the final one:
    <run_dir>/videos/eval_<env steps>.mp4 (and eval_final_…; a gif where imageio-ffmpeg is not installed),
    also sent to W&B. Costs one episode per evaluation, played beside training."""
    starts: Literal["random", "every"] = "random"
    """The evaluation episodes' no-op starts: ``random``, each drawn from 0..env.noop_max as in training; ``every``,
    each of the noop_max + 1 starts played once per noop_max + 1 episodes, so eval.episodes, eval.confirm_episodes
    and eval.final_episodes must be multiples of it (or 0). On a deterministic env and greedy policy (Mario, with
    algo.epsilon.eval=0) an evaluation so gives the policy's exact rate over the starts, where 10 random draws of
    a 0.73 flag rate land on 8 or more 47 % of the time. Envs that draw their own starts (EnvPool's Atari) refuse it."""
    env_options: dict[str, Any] = field(default_factory=dict)
    """env.options for the evaluation envs only (periodic, final and filmed episodes, and raylab.evaluate's), over
    the training envs' own. E.g. ``{stall_steps: 150}`` on Mario ends a greedy episode that stands against a wall
    after 150 agent steps, where the game clock would take ~2,000 of the training machine's steps; it scores the
    x-position where it stood (an episode that would have moved on after standing that long is cut short)."""

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

    placement_wait_s: float = 0.0
    """How long a run whose actors the Ray cluster cannot hold yet (CPUs, GPUs) waits for nodes an autoscaler
    may add, saying so every 30 s; 0: such a run fails at once, in one line naming what is missing. The same
    holds for an actor Ray restarts later: one not back after 10 s while the cluster can no longer hold the
    run (a node left) ends it after this long."""

    def __post_init__(self) -> None:
        check(self.connect_timeout_s > 0, "ray.connect_timeout_s must be > 0")
        check(self.placement_wait_s >= 0, "ray.placement_wait_s must be >= 0 (0: fail at once)")
        positive_or_none(self.num_cpus, "ray.num_cpus")
        positive_or_none(self.object_store_memory, "ray.object_store_memory")
        check(
            self.object_store_memory is None or self.object_store_memory >= MIN_OBJECT_STORE,
            f"ray.object_store_memory={self.object_store_memory} is below Ray's minimum of {MIN_OBJECT_STORE} bytes "
            "(75 MiB): give bytes, e.g. ray.object_store_memory=2000000000, or null",
        )


@dataclass(frozen=True)
class SweepConfig:
    objective: Literal["eval_return", "time_to_target"] = "eval_return"
    """What a trial of a sweep (``python -m raylab.train -m ...``) returns to Hydra's sweeper: the final greedy
    evaluation's mean return (maximize), or the training seconds until stop.mean_return was reached
    (minimize; never reached: infinity). raylab/sweep.py; docs: Sweeps."""

"""The one boundary between Hydra and raylab.

``resolve(DictConfig) -> RunConfig`` turns the composed config into frozen dataclasses, checks every value
once and fails with a one-line ``ConfigError`` that names the fix. Nothing downstream, and nothing sent to a
Ray actor, is a DictConfig (lazy interpolations break in child processes, hydra#2772). Each component's
builder receives only its own sub-config.

Modules: schema.py (``RunConfig``), training.py and runtime.py (its sections, by theme), algo.py (the ``algo``
sections) and, beside the env families, raylab/envs/config.py (``EnvConfig``), each field with a one-line
docstring; coerce.py (the generic mapping -> dataclass engine); checks.py (``resolve`` and the checks
that span sections). Import from here: ``from raylab.config import RunConfig, resolve``.
"""

from raylab.config.algo import A3CConfig, AlgoConfig, APPOConfig, DQNConfig, EpsilonConfig, PPOConfig
from raylab.config.checks import resolve
from raylab.config.schema import (
    TOPOLOGY_ALGOS,
    CheckpointConfig,
    EvalConfig,
    LearnerConfig,
    LoggerConfig,
    ModelConfig,
    ParamsConfig,
    PolicyConfig,
    RayConfig,
    ReplayConfig,
    RunConfig,
    StopConfig,
    SweepConfig,
    TopologyConfig,
    WandbConfig,
)
from raylab.envs.config import EnvConfig

__all__ = [
    "TOPOLOGY_ALGOS", "A3CConfig", "APPOConfig", "AlgoConfig", "CheckpointConfig", "DQNConfig", "EnvConfig",
    "EpsilonConfig", "EvalConfig", "LearnerConfig", "LoggerConfig", "ModelConfig", "PPOConfig", "ParamsConfig",
    "PolicyConfig", "RayConfig", "ReplayConfig", "RunConfig", "StopConfig", "SweepConfig", "TopologyConfig",
    "WandbConfig", "resolve",
]  # fmt: skip

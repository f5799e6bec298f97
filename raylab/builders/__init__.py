"""Builders: the only code that reads a RunConfig (Acme's builder pattern). ``components`` builds each plain
component with explicit arguments (workers, replay, learners, evaluator, parameter server); ``plans`` makes the
run's plan (raylab.plan) for its topology, whose actor specs carry those builders into the actors."""

from raylab.builders.components import (
    build_a3c_worker,
    build_eval_policy,
    build_evaluator,
    build_learner,
    build_objective,
    build_parameter_server,
    build_parameter_servers,
    build_rate_limiter,
    build_replay,
    build_rollout_worker,
    check_replay_fits,
    limit_blas_threads,
    replay_shard_capacity,
    replay_snapshots_to_load,
)

__all__ = [
    "build_a3c_worker", "build_eval_policy", "build_evaluator", "build_learner", "build_objective",
    "build_parameter_server", "build_parameter_servers", "build_rate_limiter", "build_replay",
    "build_rollout_worker", "check_replay_fits", "limit_blas_threads", "replay_shard_capacity",
    "replay_snapshots_to_load",
]  # fmt: skip

"""Shared fixtures. W&B never reaches the network from tests; one Ray instance serves the whole session."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

os.environ.setdefault("WANDB_MODE", "disabled")
os.environ.setdefault("RAY_DEDUP_LOGS", "0")

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "corridor"
"""The example package of your own env and model (raylab_corridor), put on the path as a user does: on
PYTHONPATH, which the session's Ray (ray_session, started later) and the CLI subprocesses inherit."""
if str(EXAMPLE) not in sys.path:
    sys.path.insert(0, str(EXAMPLE))
os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(EXAMPLE), os.environ.get("PYTHONPATH", "")) if p)

RAY_TEST_CPUS = 4


@pytest.fixture(scope="session")
def ray_session() -> Iterator[None]:
    """One local Ray for every test that needs it (starting Ray costs seconds)."""
    import logging

    import ray

    from raylab.remote.runtime import actors_at_driver_priority, quiet_token_auth_notice

    if not ray.is_initialized():
        actors_at_driver_priority()  # as raylab's embedded Ray: actors are not starved on a busy machine
        quiet_token_auth_notice()
        ray.init(num_cpus=RAY_TEST_CPUS, include_dashboard=False, logging_level=logging.WARNING)
    yield
    ray.shutdown()


def make_config(tmp_path: Path, *overrides: str):
    """Compose conf/ with ``overrides`` and resolve it, writing into ``tmp_path``."""
    from raylab.config import resolve
    from raylab.train import compose

    return resolve(compose(list(overrides)), run_dir=str(tmp_path))


FAKE = ("env=fake", "logger.console=false")
"""Overrides for a run on the fake env without console output."""

FAKE_LOCAL_DQN = (
    "topology=local", "topology.num_workers=2", "topology.envs_per_worker=4", "env.options.num_actions=4",
    "model.hidden_sizes=[32]", "stop.env_steps=6000", "stop.seconds=120", "replay.min_size=256",
    "learner.batch_size=32", "learner.updates_per_call=8", "learner.publish_every=8",
    "algo.epsilon.anneal_env_steps=1000", "algo.gamma=0.5", "eval.every_env_steps=2000", "eval.episodes=4",
    "eval.final_episodes=8",
)  # fmt: skip
"""With FAKE: a serial DQN run of 6,000 env steps that learns the fake task (4 actions, 20 steps an episode) in
seconds, evaluated every 2,000 steps."""


def metrics_rows(run_dir: Path | str) -> list[dict]:
    """A run's ``metrics.jsonl``, one dict per row."""
    return [json.loads(line) for line in (Path(run_dir) / "metrics.jsonl").read_text().splitlines()]

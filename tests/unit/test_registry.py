"""The algorithm registry: every algorithm's package builds its rollout policy, evaluation policy and Learner
objective (or says why it has none) for the fake env, and the config's topology table comes from it."""

from __future__ import annotations

import typing

import numpy as np
import pytest

from raylab.builders import build_eval_policy, build_objective, build_rollout_worker
from raylab.builders.algorithms import algorithm, algorithms
from raylab.config import AlgoConfig
from raylab.config.algorithms import ALGORITHMS, TOPOLOGY_ALGOS
from raylab.envs import env_spaces
from raylab.errors import ConfigError
from tests.conftest import FAKE, make_config


def test_the_registry_holds_every_algorithm_config_and_nothing_else():
    names = {typing.get_args(typing.get_type_hints(cls)["name"])[0] for cls in typing.get_args(AlgoConfig)}
    assert set(ALGORITHMS) == names
    assert [spec.name for spec in algorithms()] == list(ALGORITHMS)
    with pytest.raises(KeyError, match="unknown algorithm 'sac'"):
        algorithm("sac")


def test_each_topology_runs_the_algorithms_that_name_it_and_local_runs_all():
    assert TOPOLOGY_ALGOS == {
        "local": ("dqn", "a3c", "ppo", "appo"), "apex_dqn": ("dqn",), "a3c": ("a3c",), "ppo": ("ppo",),
        "appo": ("appo",),
    }  # fmt: skip
    assert {name: algorithm(name).topology for name in ALGORITHMS} == {
        "dqn": "apex_dqn", "a3c": "a3c", "ppo": "ppo", "appo": "appo",
    }  # fmt: skip


@pytest.mark.parametrize("name", list(ALGORITHMS))
def test_every_algorithm_builds_its_policies_and_objective_for_the_fake_env(tmp_path, name):
    cfg = make_config(
        tmp_path, *FAKE, f"algo={name}", "topology=local", "topology.num_workers=2", "topology.envs_per_worker=3",
        "topology.rollout_length=4", "model.hidden_sizes=[8]",
    )  # fmt: skip
    spaces = env_spaces(cfg.env)
    spec = algorithm(name)
    obs = np.zeros((3, *spaces.obs_shape), spaces.obs_dtype)

    policy = spec.rollout_policy(cfg, spaces, 1, 0)
    actions = policy.act(obs)
    assert actions.shape == (3,) and ((actions >= 0) & (actions < spaces.num_actions)).all()
    assert policy.version == -1

    evaluator = spec.eval_policy(cfg, spaces, 3)
    assert evaluator.act(obs).shape == (3,)
    assert type(build_eval_policy(cfg, spaces, 3)) is type(evaluator)

    chunk, stats = build_rollout_worker(cfg, spaces, 1).sample()  # the builders act through the spec
    assert chunk.actions.shape == (4, 3) and stats.num_steps == 12
    if name == "appo":  # V-trace reads the behaviour policy's log-probabilities; A3C's loss recomputes them
        assert chunk.log_probs is not None and chunk.log_probs.shape == (4, 3)
    if name == "a3c":
        assert chunk.log_probs is None

    if spec.objective is None:
        assert spec.info.no_learner
        with pytest.raises(ConfigError, match=f"algo={name} has no learner"):
            build_objective(cfg, spaces)
    else:
        objective = spec.objective(cfg, spaces)
        assert type(build_objective(cfg, spaces)) is type(objective)
        assert objective.policy_module() in objective.modules().values()
        assert sum(p.numel() for p in objective.policy_module().parameters()) > 0

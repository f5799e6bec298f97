"""Keys that do not apply are refused uniformly: every key of the table (raylab/config/applicability.py) x every
algorithm (x every model, x every topology, where its row names that dimension) goes through ``resolve``. Where
the key applies, a value off its default validates; where it does not, that value is refused in one line naming
the key; at its default the key is fine everywhere. No Ray, no torch, no subprocess: a few seconds."""

from __future__ import annotations

import pytest

from raylab.config import resolve
from raylab.config.algorithms import ALGORITHMS, TOPOLOGY_ALGOS
from raylab.config.applicability import ENTRIES, MODELS, TABLE, Applies, applies, default
from raylab.errors import ConfigError

FACTORY = "raylab_corridor.models:make_model"

NON_DEFAULT = {
    "model.dueling": True, "model.normalize_obs": True, "model.log_std_init": -0.5, "model.init": "orthogonal",
    "model.recurrent": "lstm", "model.recurrent_size": 64,
    "model.norm": "batch", "model.conv_channels": [16, 32, 32], "model.factory": FACTORY,
    "model.options": {"hidden": 3}, "model.rollout_precision": "bf16",
    "topology.chunks_in_flight": 2, "learner.publish_every_calls": 2, "learner.average_rate": 0.001,
    "learner.precision": "bf16", "learner.compile_mode": "reduce-overhead", "learner.compile": True,
    "learner.grad_accumulation": 2, "learner.prefetch": False, "learner.tf32": False, "learner.fused": True,
    "learner.lr": 0.01, "learner.lr_schedule": "linear", "learner.lr_final": 1e-5, "learner.adam_eps": 1e-5,
    "learner.max_grad_norm": 0.5,
    "replay.kind": "prioritized", "replay.num_shards": 2, "replay.alpha": 0.5, "replay.beta": 0.5,
    "replay.beta_final": 0.9, "replay.beta_anneal_env_steps": 100, "replay.priority_eps": 1e-3,
    "replay.frame_dedup": False, "replay.samples_per_insert": 4.0, "replay.error_buffer": 10.0,
    "params.num_shards": 2, "params.pushes_in_flight": 2, "params.shard_cpus": 1.0, "params.worker_nice": 5,
    "checkpoint.replay": True, "eval.greedy": False,
}  # fmt: skip
"""A value off its default for every key the table must hold: written here by hand, so a key dropped from the
table (or added without a value here) fails test_the_table_holds_every_key_that_applies_somewhere_only."""

EXTRA = {"learner.compile_mode": {"learner.compile": True}, "learner.lr_final": {"learner.lr_schedule": "linear"}}
"""What a value needs beside it to be valid where the key applies."""


def options(entry: Applies) -> list[tuple[str, str, str]]:
    """(algo, model, topology) to try: every algorithm on its own topology, every model where the row names models,
    every topology with each algorithm it runs where the row names topologies."""
    models = MODELS if entry.model else ("mlp",)
    if entry.topology:
        pairs = [(a, t) for t, algos in TOPOLOGY_ALGOS.items() for a in algos]
    else:
        pairs = [(a, info.topology) for a, info in ALGORITHMS.items()]
    return [(a, m, t) for a, t in pairs for m in models]


CASES = [(entry.key, *combo) for entry in TABLE for combo in options(entry)]


def config(algo: str, model: str, topology: str, settings: dict[str, object]) -> dict:
    data: dict = {
        "algo": {"name": algo}, "topology": {"name": topology}, "stop": {"env_steps": 1000},
        "model": {"encoder": model, **({"factory": FACTORY} if model == "custom" else {})},
    }  # fmt: skip
    for key, value in settings.items():
        section, name = key.split(".")
        data.setdefault(section, {})[name] = value
    return data


def test_the_table_holds_every_key_that_applies_somewhere_only():
    assert set(ENTRIES) == set(NON_DEFAULT)
    for key, value in NON_DEFAULT.items():
        assert value != default(key), key


@pytest.mark.parametrize(("key", "algo", "model", "topology"), CASES)
def test_a_key_validates_where_it_applies_and_is_refused_in_one_line_where_not(key, algo, model, topology):
    settings = {key: NON_DEFAULT[key], **EXTRA.get(key, {})}
    data = config(algo, model, topology, settings)
    resolve(config(algo, model, topology, {}))  # at its default the key is fine everywhere
    if applies(ENTRIES[key], {"algo": algo, "model": model, "topology": topology}):
        section, name = key.split(".")
        value = getattr(getattr(resolve(data), section), name)
        assert value == NON_DEFAULT[key] or value == pytest.approx(NON_DEFAULT[key]), (key, value)  # taken, as given
        return
    with pytest.raises(ConfigError) as info:
        resolve(data)
    message = str(info.value)
    assert "\n" not in message and message.startswith(f"{key}=") and " applies to " in message
    assert f"not algo={algo}" in message or f"not model={model}" in message or f"not topology={topology}" in message


@pytest.mark.parametrize("algo", list(ALGORITHMS))
def test_dueling_applies_to_dqn_only(algo):
    """The issue's case: PPO trained as if model.dueling=true were not there."""
    data = config(algo, "mlp", ALGORITHMS[algo].topology, {"model.dueling": True})
    if algo == "dqn":
        assert resolve(data).model.dueling
        return
    with pytest.raises(ConfigError, match=rf"^model\.dueling=true applies to algo=dqn \(its Q head\), not algo={algo}"):
        resolve(data)


def test_a_policy_override_that_does_not_apply_names_the_policy():
    data = config("ppo", "mlp", "ppo", {})
    data |= {"policies": {"red": {"model": {"dueling": True}}}, "policy_mapping": {"*": "red"}}
    with pytest.raises(ConfigError, match=r"^policies\.red\.model\.dueling=true applies to algo=dqn"):
        resolve(data)

"""The support matrix of docs/environments.md (Observation spaces), each cell run: every observation space raylab
encodes, on every algorithm, in one process (topology=local), for a few rounds; and on Ray for PPO and DQN. A cell
passes when the run trains (updates > 0), evaluates and writes its checkpoint."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from raylab.train import run
from tests.conftest import make_config
from tests.envs.spaces_envs import SPACES

ALGOS = {
    "ppo": ("+experiment=cartpole_ppo", "stop.env_steps=1024"),
    "appo": ("+experiment=cartpole_appo", "stop.env_steps=6144"),
    "a3c": ("+experiment=cartpole_a3c", "stop.env_steps=512"),
    "dqn": ("+experiment=cartpole_dqn", "replay.min_size=64", "learner.batch_size=32", "stop.env_steps=512"),
}
SHORT = ("logger.console=false", "eval.every_seconds=null", "eval.episodes=1", "eval.final_episodes=2",
         "stop.seconds=120", "stop.mean_return=null", "env.id=tests.envs.spaces_envs:Space-v0")  # fmt: skip


def cell(tmp_path: Path, kind: str, algo: str, *extra: str) -> dict:
    cfg = make_config(tmp_path, *ALGOS[algo], *SHORT, f"+env.options.kind={kind}", *extra)
    summary = run(cfg)
    bm = json.loads((Path(summary.run_dir) / "benchmark_metrics.json").read_text())
    assert bm["total_updates"] > 0 and bm["eval"]["episodes"] == 2, bm
    assert (Path(summary.run_dir) / "checkpoints" / "final.pt").exists()
    return bm


DEFAULT_TIER = {("discrete", "ppo"), ("multidiscrete", "dqn"), ("multibinary", "a3c"), ("tuple", "appo"),
                ("dict", "dqn"), ("dict_image", "ppo"), ("dict_image", "a3c")}  # fmt: skip
"""One cell per space (and A3C's flat-parameter path for the image) in the default tier; the whole matrix, 24
cells of 1-10 s, in the slow tier."""


@pytest.mark.parametrize(
    ("kind", "algo"),
    [pytest.param(k, a, marks=() if (k, a) in DEFAULT_TIER else pytest.mark.slow) for k in SPACES for a in ALGOS],
)
def test_every_space_trains_on_every_algorithm_in_one_process(tmp_path, kind, algo):
    cell(tmp_path, kind, algo, "topology=local")


@pytest.mark.parametrize("algo", ["ppo", "dqn"])
def test_an_image_in_a_dict_feeds_a_recurrent_core(tmp_path, algo):
    """The KeyedEncoder's features into an LSTM: PPO's sequences and R2D2's sequence replay."""
    extra = (
        ("algo.bptt=8",)
        if algo == "ppo"
        else ("algo.sequence.burn_in=2", "algo.sequence.trace=6", "algo.sequence.period=4")
    )
    cell(tmp_path, "dict_image", algo, "model.recurrent=lstm", "model.recurrent_size=32", "topology=local", *extra)


@pytest.mark.distributed
@pytest.mark.usefixtures("ray_session")
@pytest.mark.parametrize("algo", ["ppo", pytest.param("dqn", marks=pytest.mark.slow)])
def test_an_image_in_a_dict_trains_on_ray(tmp_path, algo):
    """The uint8 row with its parts crosses the actors: rollout chunks (PPO) and replay (DQN)."""
    cell(tmp_path, "dict_image", algo, "model=impala_cnn", "model.hidden_sizes=[32]")


@pytest.mark.slow
@pytest.mark.distributed
@pytest.mark.usefixtures("ray_session")
@pytest.mark.parametrize(("kind", "algo"), [(k, a) for k in SPACES for a in ALGOS])
def test_every_space_trains_on_every_algorithm_on_ray(tmp_path, kind, algo):
    """The matrix again on the embedded Ray: rollout, replay and learner actors, and A3C's parameter server."""
    cell(tmp_path, kind, algo)


@pytest.mark.distributed
@pytest.mark.usefixtures("ray_session")
@pytest.mark.parametrize("inference", [pytest.param("local", marks=pytest.mark.slow), "central"])
def test_multidiscrete_actions_train_on_ray(tmp_path, inference):
    """[N, K] int64 actions cross the actors: in rollout chunks, and through an inference actor's reply area."""
    cell(tmp_path, "discrete", "appo", "+env.options.action=multidiscrete", f"topology.inference={inference}")


@pytest.mark.parametrize(
    ("action", "algo"),
    [("multidiscrete", "ppo"), ("multibinary", "appo"),
     *(pytest.param(action, algo, marks=pytest.mark.slow)
       for action, algo in (("multidiscrete", "a3c"), ("multibinary", "ppo"), ("multidiscrete", "appo"),
                            ("multibinary", "a3c")))],
)  # fmt: skip
def test_multidiscrete_and_multibinary_actions_learn_in_one_process(tmp_path, action, algo):
    """A categorical per entry: the policy learns to answer 0 in every entry (a return of 16 a 16-step episode,
    about 6 at random), stopping on a greedy 15."""
    overrides = [o for o in ALGOS[algo] if not o.startswith("stop.")]
    cfg = make_config(tmp_path, *overrides, *(o for o in SHORT if not o.startswith("stop.mean_return")),
                      f"+env.options.action={action}", "stop.mean_return=15", "stop.env_steps=400000",
                      "eval.every_seconds=1", "eval.episodes=5", "topology=local")  # fmt: skip
    summary = run(cfg)
    assert summary.stop_reason.startswith("eval return"), summary.stop_reason
    assert summary.eval_return_mean is not None and summary.eval_return_mean >= 15


def test_dqn_refuses_multidiscrete_actions_in_one_line(tmp_path):
    from raylab.errors import ConfigError

    cfg = make_config(tmp_path, *ALGOS["dqn"], *SHORT, "+env.options.action=multidiscrete", "topology=local")
    with pytest.raises(ConfigError, match=r"algo=dqn acts in one Discrete action space .* use algo=ppo / appo / a3c"):
        run(cfg)

"""learner.average_rate end to end on the fake env (serial topology): the run's policy (what evaluations score,
best.pt and final.pt) is the learner's moving average of its weights, the actors act with the newest, and the
average learns the task as the newest does."""

from pathlib import Path

import numpy as np
import pytest
import torch

from raylab.errors import ConfigError, RaylabError
from raylab.learner import load_checkpoint
from raylab.learner.publish import PolicyAverage, WeightsPublisher
from raylab.rollout.worker import RolloutWorker
from raylab.train import run
from raylab.types import Weights
from tests.conftest import FAKE, FAKE_LOCAL_DQN, make_config


def _fingerprint(weights: Weights) -> tuple[int, bytes]:
    return weights.version, b"".join(np.ascontiguousarray(a).tobytes() for a in weights.params.values())


@pytest.fixture(scope="module")
def handed_out():
    """The weights each side produced during the module's run (version and bytes): the learner's newest, its
    average, and every weights handed to the rollout workers' set_weights (declined ones included)."""
    return {"newest": set(), "average": set(), "acted": []}


@pytest.fixture(scope="module")
def averaged_run(tmp_path_factory, handed_out):
    run_dir = tmp_path_factory.mktemp("average")
    cfg = make_config(run_dir, *FAKE, *FAKE_LOCAL_DQN, "learner.average_rate=0.02")

    def recorder(original, into):
        def record(self, *args, **kwargs):
            weights = original(self, *args, **kwargs)
            if isinstance(weights, Weights):
                into(_fingerprint(weights))
            return weights

        return record

    def record_loaded(self, weights, *args, **kwargs):
        for w in weights if isinstance(weights, list | tuple) else [weights]:
            if w is not None:
                handed_out["acted"].append(_fingerprint(w))
        return set_weights(self, weights, *args, **kwargs)

    set_weights = RolloutWorker.set_weights
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(WeightsPublisher, "weights", recorder(WeightsPublisher.weights, handed_out["newest"].add))
        patch.setattr(PolicyAverage, "weights", recorder(PolicyAverage.weights, handed_out["average"].add))
        patch.setattr(RolloutWorker, "set_weights", record_loaded)
        return cfg, run(cfg)


def test_final_pt_keeps_the_average_as_the_policy_and_the_learner_state_keeps_both(averaged_run):
    _, summary = averaged_run
    state = load_checkpoint(Path(summary.run_dir) / "checkpoints" / "final.pt")
    policy = state["policy"]["params"]
    newest = state["learner"]["modules"]["q_net"]
    average = state["learner"]["policy_average"]
    assert list(policy) == list(newest) == list(average)
    assert all(torch.equal(policy[name], average[name]) for name in policy)  # the policy kept is the average
    assert not all(torch.equal(policy[name], newest[name]) for name in policy)  # and not the newest weights
    assert state["policy"]["version"] == state["learner"]["version"] == summary.updates > 0


def test_the_rollout_workers_act_with_the_newest_weights_never_the_average(averaged_run, handed_out):
    assert averaged_run[1].updates > 0
    acted, newest, average = handed_out["acted"], handed_out["newest"], handed_out["average"]
    assert any(version > 0 for version, _ in average), "no trained average was published"
    assert len({version for version, _ in acted if version > 0}) >= 2  # the workers took several trained versions
    assert all(weights in newest for weights in acted)  # each was the learner's newest of its version
    assert not any(weights in average for weights in acted if weights[0] > 0)  # and none was its average


def test_the_average_learns_the_fake_task(averaged_run):
    _, summary = averaged_run
    # 4 actions, 20 steps: random earns 5 per episode, reading the observation earns 20 (the newest weights of
    # the same run without an average are held to 18 in test_local_topology.py)
    assert summary.benchmark["eval_newest"]["return_mean"] >= 18
    assert np.isfinite(summary.benchmark["average_fps"])


def test_an_average_rate_outside_zero_one_or_off_dqn_is_refused_naming_the_fix(tmp_path):
    with pytest.raises(ConfigError, match=r"learner.average_rate must be in \(0, 1\) \(got 1.5\): e.g."):
        make_config(tmp_path / "a", *FAKE, "learner.average_rate=1.5")
    with pytest.raises(ConfigError, match=r"learner.average_rate=0.01 applies to algo=dqn .*not algo=ppo: remove it"):
        run(make_config(tmp_path / "b", *FAKE, "algo=ppo", "topology=ppo", "learner.average_rate=0.01"))


def test_raylab_evaluate_scores_the_newest_and_the_average_from_the_same_checkpoint(averaged_run):
    from raylab.evaluate import EvaluateArgs, evaluate

    _, summary = averaged_run
    scored = {
        which: evaluate(EvaluateArgs(run_dir=summary.run_dir, episodes=2, weights=which))
        for which in ("policy", "newest", "average")
    }
    assert [scored[w]["weights"] for w in scored] == ["policy", "newest", "average"]
    assert all(s["policy_version"] == summary.updates for s in scored.values())
    assert all(s["return_mean"] >= 15 for s in scored.values())  # each learned the task (random: 5)
    names = sorted(p.name for p in (Path(summary.run_dir) / "eval").glob("final*.json"))
    assert names == ["final.json", "final_average.json", "final_newest.json"]  # none written over another


def test_weights_average_of_a_run_without_one_is_refused_naming_the_fix(tmp_path):
    from raylab.evaluate import EvaluateArgs, evaluate

    cfg = make_config(tmp_path / "plain", *FAKE, *FAKE_LOCAL_DQN, "stop.env_steps=600", "eval.every_env_steps=null")
    summary = run(cfg)
    with pytest.raises(RaylabError, match=r"holds no average of the weights .*: use weights=policy or weights=newest"):
        evaluate(EvaluateArgs(run_dir=summary.run_dir, episodes=1, weights="average"))


def test_weights_newest_of_best_pt_which_holds_the_policy_only_is_refused_naming_the_fix(averaged_run):
    from raylab.evaluate import EvaluateArgs, evaluate, parse_args

    _, summary = averaged_run
    assert "learner" not in load_checkpoint(Path(summary.run_dir) / "checkpoints" / "best.pt")
    with pytest.raises(RaylabError, match=r"best.pt holds the run's policy only, no learner state: weights=newest"):
        evaluate(EvaluateArgs(run_dir=summary.run_dir, checkpoint="best", episodes=1, weights="newest"))
    with pytest.raises(ConfigError, match=r"unknown weights 'best': choose policy, newest, average"):
        parse_args([f"run_dir={summary.run_dir}", "weights=best"])

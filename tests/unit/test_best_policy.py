"""The best policy a run keeps (best.pt), without Ray: which evaluation wins, its round trip through
best.pt, and that an evaluation runs on the version it is handed, older ones included."""

from __future__ import annotations

import numpy as np
import pytest

from raylab.driver.best import BestPolicy, BestRecord, final_choice
from raylab.driver.checkpoints import CheckpointManager
from raylab.driver.outputs import RunOutputs
from raylab.driver.progress import Progress
from raylab.driver.resume import ResumeState
from raylab.models.numpy_policy import VersionedWeights
from raylab.types import EvalResult, EvalTarget, Weights
from tests.conftest import FAKE, make_config


def result(version: int, *returns: float) -> EvalResult:
    return EvalResult(version, np.array(returns), np.full(len(returns), 10))


def test_the_highest_evaluation_wins_and_a_tie_goes_to_the_newer_weights():
    best = BestPolicy(target=None)
    assert best.offer(["v1"], result(1, 10.0), env_steps=100)
    assert not best.offer(["v2"], result(2, 5.0), env_steps=200)
    assert best.offer(["v3"], result(3, 10.0), env_steps=300)  # the same mean: the newer weights
    assert not best.offer(["v4"], result(4), env_steps=400)  # no episodes: a NaN mean is never the best
    assert best.refs == ["v3"] and best.record == BestRecord(3, 10.0, 1, 300, False)


def test_the_evaluation_that_met_the_target_beats_any_that_did_not():
    best = BestPolicy(target=EvalTarget(50.0))
    best.offer(["v1"], result(1, 40.0), env_steps=100)
    assert best.offer(["v2"], result(2, 50.0, 50.0), env_steps=200)
    assert best.record is not None and best.record.met_target
    # a target on an episode value (Mario's flag rate) is met on its own, at a lower return
    flags = BestPolicy(target=EvalTarget(50.0, {"flag_get": 0.5}))
    flags.offer(["v1"], result(1, 45.0), env_steps=100)
    flagged = EvalResult(2, np.array([30.0, 35.0]), np.full(2, 10), extras={"flag_get": np.array([1.0, 0.0])})
    assert flags.offer(["v2"], flagged, env_steps=200) and flags.record is not None and flags.record.met_target
    # a record restored from an earlier run's best.pt that did not meet it loses to one that did
    assert not BestRecord(9, 60.0, 5, 900, met_target=False).beats(best.record)


@pytest.mark.parametrize("policies", [(), ("red", "blue")])
def test_best_pt_round_trips_its_policies_and_record(policies, tmp_path):
    cfg = make_config(tmp_path, *FAKE, "topology=local")
    outputs = RunOutputs(cfg.run_dir)
    weights = [Weights(7 + k, {"w": np.full((2, 3), float(k), np.float32)}) for k in range(max(1, len(policies)))]
    record = BestRecord(7, 12.5, 10, 4096, met_target=True)
    names = list(policies)  # whose policy is which in best.pt
    saver = CheckpointManager(cfg.checkpoint, cfg.to_dict(), outputs, Progress(), policy_names=names)
    saver.save_best(weights if policies else weights[0], record)
    assert saver.files()[-2:] == ["final.pt", "best.pt"]
    resume = ResumeState.__new__(ResumeState)  # a resumed run reads it back; a new one does not

    def reader(resume: ResumeState | None) -> CheckpointManager:
        return CheckpointManager(cfg.checkpoint, cfg.to_dict(), outputs, Progress(), resume, policy_names=names)

    assert reader(None).load_best() is None
    loaded = reader(resume).load_best()
    outputs.close()
    assert loaded is not None
    back, back_record = loaded
    assert back_record == record
    assert [w.version for w in back] == [w.version for w in weights]
    for got, want in zip(back, weights, strict=True):
        np.testing.assert_array_equal(got.params["w"], want.params["w"])


class Held(VersionedWeights):
    def __init__(self) -> None:
        self.version = -1
        self.loaded: list[int] = []
        self._mirrored = self  # type: ignore[assignment]

    def load(self, params: dict[str, np.ndarray]) -> None:
        self.loaded.append(int(params["v"]))


def test_an_evaluation_loads_older_weights_a_rollout_does_not():
    policy = Held()
    assert policy.set_weights(Weights(5, {"v": np.array(5)}))
    assert not policy.set_weights(Weights(3, {"v": np.array(3)}))  # a rollout worker keeps the newer
    assert policy.set_weights(Weights(3, {"v": np.array(3)}), exact=True)  # an evaluation takes the one handed
    assert not policy.set_weights(Weights(3, {"v": np.array(3)}), exact=True)  # held already: no copy
    assert policy.version == 3 and policy.loaded == [5, 3]


def test_the_final_evaluations_have_the_last_word_unless_the_target_was_met():
    old, new = [Weights(3, {})], [Weights(9, {})]
    kept = (old, BestRecord(3, 20.0, 4, 300, met_target=False), result(3, 15.0))
    chosen = final_choice(kept, new, result(9, 18.0), env_steps=900)
    assert chosen is not None and chosen.record == BestRecord(9, 18.0, 1, 900, False, "final")
    assert chosen.policy == new[0] and chosen.final_eval is not None and chosen.final_eval.version == 9
    met = (old, BestRecord(3, 20.0, 4, 300, met_target=True), result(3, 15.0))
    chosen = final_choice(met, new, result(9, 18.0), env_steps=900)
    assert chosen is not None and chosen.policy == old[0] and chosen.record.met_target
    assert final_choice(None, new, None, env_steps=900) is None  # nothing evaluated: no best.pt
    chosen = final_choice(None, new, result(9, 18.0), env_steps=900)  # only the final evaluation ran
    assert chosen is not None and chosen.record.chosen_by == "final"

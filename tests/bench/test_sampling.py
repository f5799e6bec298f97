"""``bench sampling``'s arithmetic: efficiency against W x the env-only rate, and the workers' time shares."""

from __future__ import annotations

import numpy as np
import pytest

from raylab.bench.sampling import efficiency, shares


def test_efficiency_is_sampled_over_workers_times_env_only():
    assert efficiency(60_000, 2, 150_000) == pytest.approx(0.2)
    assert efficiency(150_000, 1, 150_000) == pytest.approx(1.0)


def test_shares_split_the_workers_wall_time_and_transport_is_the_rest():
    got = shares({"env": 6.0, "inference": 8.0, "weight_sync": 1.0, "wait": 3.0}, workers=2, wall_s=10.0)
    assert got == pytest.approx({"env_share": 0.3, "inference_share": 0.4, "sync_share": 0.05, "transport_share": 0.25})
    assert shares({"env": 30.0}, workers=1, wall_s=10.0)["transport_share"] == 0.0  # never negative


def test_the_in_process_line_samples_the_rollout_worker_without_ray(tmp_path, monkeypatch):
    """``_in_process`` runs the actors' RolloutWorker in this process on a new weights version per chunk."""
    from raylab.bench import sampling
    from raylab.envs.registry import env_spaces
    from raylab.rollout.worker import RolloutWorker
    from tests.conftest import FAKE, make_config

    cfg = make_config(tmp_path, *FAKE, "algo=appo", "topology=appo", "model.hidden_sizes=[8]")
    versions: list[int] = []
    sample = RolloutWorker.sample

    def recording(self):
        versions.append(self.policy_version)
        return sample(self)

    class Clock:  # the measurement's clock advances 0.1 s per reading: 4 chunks after the warm-up, on any machine
        now = 0.0

        @classmethod
        def perf_counter(cls) -> float:
            cls.now += 0.1
            return cls.now

    monkeypatch.setattr(RolloutWorker, "sample", recording)
    monkeypatch.setattr(sampling, "time", Clock)
    rate = sampling._in_process(cfg, env_spaces(cfg.env), seconds=0.45)
    assert rate > 0 and len(versions) == 5  # the warm-up chunk, then one per clock reading below 0.45 s
    assert versions[1:] == list(range(versions[1], versions[1] + 4))  # one new weights version per chunk


def test_the_sink_hands_out_weights_as_a_learners_call_returns_them():
    """Under Ray's inline limit a learner's returned weights travel inside the actors' sample calls, so the sink
    passes small weights by value; larger ones go through the object store, as Ray would put them."""
    from raylab.bench import sink
    from raylab.types import Weights

    put: list[Weights] = []

    def record(value: Weights) -> str:
        put.append(value)
        return "ref"

    small = Weights(3, {"w": np.zeros(1000, np.float32)})  # 4 KB: CartPole's and Snake's MLPs are of this order
    large = Weights(3, {"w": np.zeros(sink.INLINE_BYTES // 4, np.float32)})  # at the limit: a CNN's
    assert sink.publish(small, record) is small and not put
    assert sink.publish(large, record) == "ref" and put == [large]

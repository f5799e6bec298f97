"""The Learner with the APPO objective, without Ray: over-lagged chunks are dropped and counted; lagged chunks
still teach it."""

from __future__ import annotations

import numpy as np
import pytest

from raylab.learner import Learner
from tests.factories import actor_critic_learner
from tests.unit.test_ppo_learner import fake_worker


def learner(max_policy_lag: int = 2, vtrace_lambda: float = 1.0) -> Learner:
    settings = {
        "gamma": 0.5, "entropy_coef": 0.0, "max_policy_lag": max_policy_lag, "epochs": 2, "minibatches": 2,
        "vtrace_lambda": vtrace_lambda,
    }  # fmt: skip
    return actor_critic_learner(
        "appo", (4,), 3, hidden=(32,), settings=settings, lr=3e-3, adam_eps=1e-5, max_grad_norm=0.5
    )


def test_the_rollout_worker_records_the_behaviour_log_probs():
    worker = fake_worker(0, 0)
    chunk, _ = worker.sample()
    assert chunk.log_probs is not None and chunk.log_probs.shape == chunk.actions.shape
    assert (chunk.log_probs <= 0).all() and np.allclose(chunk.log_probs, np.log(1 / 3), atol=0.05)  # near uniform


def test_chunks_older_than_max_policy_lag_are_dropped_and_counted():
    appo = learner(max_policy_lag=2)
    worker = fake_worker(0, 0)
    worker.set_weights(appo.get_weights())
    stale, _ = worker.sample()  # acted by version 0
    for _ in range(3):
        fresh, _ = worker.sample()
        fresh.policy_version = appo.version
        appo.update_many([fresh])
    assert appo.version == 3
    out = appo.update_many([stale])  # lag 3 > 2
    assert out.updates == 0 and not out.published and appo.version == 3
    assert appo.objective.dropped_chunks == 1 and out.metrics["dropped_chunks"] == 1


def test_a_chunk_without_behaviour_log_probs_is_refused():
    appo = learner()
    chunk, _ = fake_worker(0, 0).sample()
    chunk.log_probs = None
    with pytest.raises(ValueError, match="behaviour policy's log-probabilities"):
        appo.update_many([chunk])


@pytest.mark.parametrize("vtrace_lambda", [1.0, 0.9])
def test_appo_learns_the_fake_task_from_lagged_chunks(vtrace_lambda):
    appo = learner(max_policy_lag=4, vtrace_lambda=vtrace_lambda)
    assert appo.objective.lam == vtrace_lambda, "algo.vtrace_lambda reaches the objective"
    workers = [fake_worker(i, i) for i in range(2)]
    returns: list[float] = []
    for round_ in range(60):
        if round_ % 2 == 0:  # workers refresh their weights every other update: lag 0 or 1
            for w in workers:
                w.set_weights(appo.get_weights())
        chunks = []
        for w in workers:
            c, stats = w.sample()
            chunks.append(c)
            returns.extend(stats.episodes.returns.tolist())
        appo.update_many(chunks)
    assert appo.objective.dropped_chunks == 0
    assert np.mean(returns[-20:]) >= 8.0, np.mean(returns[-20:])  # reading the label: 10; chance: 3.3

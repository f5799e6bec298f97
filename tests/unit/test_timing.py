"""Stage timers, the wait they measure, and the per-interval shares the driver turns them into."""

import time

import numpy as np
import pytest

from raylab.driver.progress import Progress
from raylab.metrics.timing import GapTimer, StageTimer
from raylab.rollout.worker import RolloutWorker
from raylab.types import Episodes, LearnerStats, RolloutStats, Weights


def test_stage_timer_accumulates_and_pops():
    timer = StageTimer()
    for _ in range(3):
        with timer.stage("env"):
            time.sleep(0.01)
    timer.add("wait", 0.5)
    out = timer.pop()
    assert 0.03 <= out["env"] < 0.2 and out["wait"] == 0.5
    assert timer.pop() == {}


def test_stage_timer_records_a_stage_that_raises():
    timer = StageTimer()
    with pytest.raises(ValueError), timer.stage("env"):
        raise ValueError
    assert "env" in timer.pop()


def test_disabled_timer_is_a_no_op():
    timer = StageTimer(enabled=False)
    with timer.stage("env"):
        time.sleep(0.005)
    timer.add("wait", 1.0)
    assert timer.pop() == {}


def test_gap_timer_counts_the_time_between_calls_once():
    gap = GapTimer()
    assert gap.begin() == 0.0  # the first call waited for nothing
    gap.end()
    time.sleep(0.02)
    assert 0.02 <= gap.begin() < 0.2
    assert gap.begin() == 0.0  # a second begin before the next end adds nothing


class _Env:
    num_envs = 2
    restarts = 0

    def reset(self):
        return np.zeros((2, 3), np.float32)

    def step(self, actions):
        from raylab.envs.vector import VectorStep

        time.sleep(0.002)
        z = np.zeros(2, bool)
        return VectorStep(np.zeros((2, 3), np.float32), np.ones(2, np.float32), z, z, [], [], None)


class _Policy:
    version = 0
    last_log_probs = None

    def act(self, obs):
        return np.zeros(len(obs), np.int64)

    load_s = 0.01  # what loading weights takes

    def set_weights(self, weights):
        time.sleep(self.load_s)
        self.version = weights.version
        return True


def test_rollout_worker_reports_wait_between_chunks_apart_from_weight_sync():
    policy = _Policy()
    policy.load_s = 0.3  # far longer than a busy machine's scheduling delays: counted as wait, it shows
    worker = RolloutWorker(_Env(), policy, worker_id=3, rollout_length=5)
    _, first = worker.sample()
    assert first.timings["wait"] == 0.0 and first.timings["env"] >= 0.01
    time.sleep(0.05)  # the driver holds the worker back
    worker.set_weights(Weights(1, {}))
    _, second = worker.sample()
    assert 0.05 <= second.timings["wait"] < 0.05 + 0.3  # the weight load is not wait
    assert second.timings["weight_sync"] >= 0.3


def test_rollout_worker_with_timing_off_reports_no_stages():
    worker = RolloutWorker(_Env(), _Policy(), worker_id=0, rollout_length=3, timer=StageTimer(enabled=False))
    worker.sample()
    _, stats = worker.sample()
    assert stats.timings == {}


def _rollout(worker: int, steps: int, timings: dict[str, float]) -> RolloutStats:
    return RolloutStats(worker_id=worker, num_steps=steps, policy_version=0, episodes=Episodes(), timings=timings)


class _Clock:
    """A Progress clock the test moves by hand."""

    t = 0.0

    def __call__(self) -> float:
        return self.t


def test_progress_turns_stage_seconds_into_shares_per_actor_and_worker_wait():
    clock = _Clock()
    progress = Progress(clock=clock)
    progress.actor_counts = {"rollout": 2, "learner": 1, "replay": 1}
    progress.restart_clock()
    clock.t = 1.0  # each report covers the sum of its stages up to its arrival: all of them inside [0, 2]
    progress.add_rollout(_rollout(0, 100, {"env": 0.4, "inference": 0.1, "wait": 0.3}), learner_version=0)
    progress.add_rollout(_rollout(1, 100, {"env": 0.2, "inference": 0.1, "wait": 0.6}), learner_version=0)
    clock.t = 1.5
    progress.add_learner(
        LearnerStats(updates=4, samples=400, version=4, metrics={}, seconds=0.8,
                     timings={"batch_wait_s": 0.2, "wait_s": 0.1, "publish_s": 0.01})
    )  # fmt: skip
    progress.add_timings("replay", {"add_s": 0.05, "sample_s": 0.1})
    clock.t = 2.0
    row = progress.row(replay_size=200)
    assert row["share/rollout/env"] == pytest.approx(0.6 / (2 * 2.0))
    assert row["share/rollout/wait"] == pytest.approx(0.9 / (2 * 2.0))
    assert row["timing/learner/update_s"] == pytest.approx(0.6)  # the batch wait inside the call is its own stage
    assert row["share/learner/update"] == pytest.approx(0.6 / 2.0)
    assert row["share/learner/batch_wait"] == pytest.approx(0.2 / 2.0)
    assert row["share/learner/wait"] == pytest.approx(0.1 / 2.0)
    assert row["share/replay/sample"] == pytest.approx(0.1 / 2.0)
    assert row["wait/worker_0_share"] == pytest.approx(0.3 / 2.0)
    assert row["wait/worker_1_share"] == pytest.approx(0.6 / 2.0)
    assert row["wait/worker_max_share"] == pytest.approx(0.6 / 2.0)
    assert row["replay/samples_per_insert"] == pytest.approx(400 / 200)
    # the next interval starts from zero
    clock.t = 3.0
    later = progress.row(replay_size=200)
    assert not any(k.startswith(("share/", "timing/", "wait/")) for k in later)


def _after_a_first_row(workers: int) -> tuple[_Clock, Progress]:
    """A Progress on a fake clock with ``workers`` rollout actors and one learner, its first row written at t=3."""
    clock = _Clock()
    progress = Progress(clock=clock)
    progress.actor_counts = {"rollout": workers, "learner": 1}
    progress.restart_clock()
    clock.t = 3.0
    progress.row()
    return clock, progress


def test_progress_spreads_a_report_over_the_span_it_covered():
    """A 4.5-s learner call (or chunk) reported in a 3-s interval fills at most all of it, not 1.5 of it."""
    clock, progress = _after_a_first_row(workers=1)
    clock.t = 6.0  # both covered [1.5, 6]: 3 of their 4.5 s lie in this row's interval [3, 6]
    progress.add_learner(LearnerStats(updates=1, samples=32, version=1, metrics={}, seconds=4.5))
    progress.add_rollout(_rollout(0, 100, {"wait": 4.0, "env": 0.5}), learner_version=0)
    row = progress.row()
    assert row["timing/learner/update_s"] == pytest.approx(4.5)  # timing/ keys: the seconds that arrived
    assert row["share/learner/update"] == pytest.approx(1.0)
    assert row["share/rollout/wait"] == pytest.approx(4.0 * (3 / 4.5) / 3)
    assert row["share/rollout/wait"] + row["share/rollout/env"] == pytest.approx(1.0)
    assert row["wait/worker_0_share"] == pytest.approx(4.0 * (3 / 4.5) / 3)
    # a report wholly inside an interval counts wholly; one of no length, where it arrived
    clock.t = 7.0
    progress.add_learner(LearnerStats(updates=1, samples=32, version=2, metrics={}, seconds=0.5))
    progress.add_time("driver/wait_s", 0.0)
    clock.t = 9.0
    row = progress.row()
    assert row["share/learner/update"] == pytest.approx(0.5 / 3)
    assert row["share/driver/wait"] == 0.0


def test_reports_of_one_actor_that_arrive_together_are_laid_end_to_end():
    """A learner's (or a worker's) reports that reach a busy driver at once covered successive spans: two 2-s
    calls arriving together at t=6 ran over [2, 6], so the interval [3, 6] holds 3 s of them, not 4."""
    clock, progress = _after_a_first_row(workers=2)
    clock.t = 6.0
    for version in (1, 2):
        progress.add_learner(LearnerStats(updates=1, samples=32, version=version, metrics={}, seconds=2.0))
    for worker in (0, 0, 1):  # worker 0's two chunks ran one after the other; worker 1's beside them
        progress.add_rollout(_rollout(worker, 100, {"env": 2.0}), learner_version=0)
    row = progress.row()
    assert row["share/learner/update"] == pytest.approx(1.0)
    assert row["share/rollout/env"] == pytest.approx((3.0 + 2.0) / (2 * 3))
    assert row["timing/learner/update_s"] == pytest.approx(4.0)

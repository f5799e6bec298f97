"""A crashing env is rebuilt on the spot; its partial episode and the transitions touching it are dropped."""

import numpy as np
import pytest

from raylab.builders import build_rollout_worker
from raylab.envs import env_spaces
from raylab.envs.fake import FakeEnv
from raylab.envs.vector import SerialVectorEnv
from raylab.replay import NStepAdder
from tests.conftest import FAKE, make_config


def crashing(crash_every=7, crash_in="step", length=5):
    return lambda: FakeEnv(episode_length=length, crash_every=crash_every, crash_in=crash_in)


def test_a_step_crash_rebuilds_the_env_and_flags_the_step():
    venv = SerialVectorEnv([crashing(), crashing(crash_every=None)], seeds=[0, 1])
    venv.reset()
    crashes, episodes = [], []
    for t in range(30):
        step = venv.step(np.zeros(2, np.int64))
        episodes += step.episodes
        if step.restarted is not None:
            crashes.append(t)
            assert step.restarted.tolist() == [True, False]
            assert step.truncated[0] and not step.terminated[0] and step.rewards[0] == 0.0
            assert all(i != 0 for i, _ in step.final_obs)  # no fake "last observation" for a crash
    assert venv.restarts == len(crashes) >= 3
    assert all(r["length"] == 5 for _, r in episodes)  # partial episodes are never reported


def test_reset_crashes_are_retried_and_a_hopeless_env_is_an_error():
    venv = SerialVectorEnv([crashing(crash_every=2, crash_in="reset")], seeds=[0])
    venv.reset()
    for _ in range(20):
        venv.step(np.zeros(1, np.int64))
    assert venv.restarts >= 1
    with pytest.raises(RuntimeError, match="failed 3 times in a row"):
        SerialVectorEnv([crashing(crash_every=1, crash_in="reset")], seeds=[0]).reset()


def test_rollout_worker_counts_restarts_and_marks_the_chunk(tmp_path):
    cfg = make_config(tmp_path, *FAKE, "+env.options.crash_every=9", "topology.envs_per_worker=2",
                      "topology.rollout_length=20", "model.hidden_sizes=[8]")  # fmt: skip
    worker = build_rollout_worker(cfg, env_spaces(cfg.env), 0)
    chunk, stats = worker.sample()
    assert stats.env_restarts >= 2 and chunk.restarted is not None
    assert chunk.restarted.sum() == stats.env_restarts
    assert (chunk.truncated[chunk.restarted]).all()


def test_adder_drops_transitions_whose_window_reaches_a_crash(tmp_path):
    cfg = make_config(tmp_path, *FAKE, "+env.options.crash_every=9", "topology.envs_per_worker=1",
                      "topology.rollout_length=40", "model.hidden_sizes=[8]",
                      "env.options.episode_length=1000")  # fmt: skip
    chunk, stats = build_rollout_worker(cfg, env_spaces(cfg.env), 0).sample()
    crash_steps = np.flatnonzero(chunk.restarted[:, 0])
    adder = NStepAdder(n=3, gamma=0.9)
    transitions = adder.add(chunk)
    # each crash invalidates the crash step and the (n - 1) steps before it
    assert adder.dropped_transitions == sum(min(3, c + 1) for c in crash_steps)
    assert len(transitions) == (40 - 3 + 1) - adder.dropped_transitions
    assert stats.env_restarts == len(crash_steps) >= 3


def test_no_crash_means_no_restart_mask():
    venv = SerialVectorEnv([crashing(crash_every=None)] * 2, seeds=[0, 1])
    venv.reset()
    assert all(venv.step(np.zeros(2, np.int64)).restarted is None for _ in range(20))


def test_an_env_that_crashes_every_step_stops_the_run():
    venv = SerialVectorEnv([crashing(crash_every=1)], seeds=[0])
    venv.reset()
    with pytest.raises(RuntimeError, match="crashed in 10 steps in a row"):
        for _ in range(12):
            venv.step(np.zeros(1, np.int64))

"""Counting restarts as the driver sees them: each death once, whichever of its signs arrive and in what order."""

import pytest
import ray

from raylab.driver.restarts import Restarts
from raylab.errors import RaylabError
from raylab.remote.runtime import wait_back


def test_a_death_counts_once_however_many_calls_fail_and_the_restarted_reply_does_not_add_one():
    r = Restarts()
    assert r.died("replay", "replay_0") and not r.died("replay", "replay_0")  # add and sample both failed
    r.rejoined("replay", "replay_0")  # the restarted shard's first reply
    assert r.replay == 1 and not r.down


def test_a_death_between_calls_is_counted_by_the_restarted_reply():
    r = Restarts()
    r.rejoined("replay", "replay_1")
    r.rollout_answered("rollout_0", restarted=True)
    r.rollout_answered("rollout_1", restarted=False)
    assert (r.replay, r.rollout) == (1, 1)


def test_two_deaths_count_twice():
    r = Restarts()
    r.died("learner", "learner")
    r.answered("learner")
    r.died("learner", "learner")
    assert r.learner == 2
    assert r.metrics()["restarts/learner"] == 2 and set(r.metrics()) >= {"restarts/server", "restarts/replay_restored"}


def test_an_actor_that_never_comes_back_is_one_line_naming_the_fix():
    def ready():  # what a dead actor's call does once its restarts are used up (no Ray runtime needed)
        raise ray.exceptions.RayActorError()

    with pytest.raises(RaylabError) as err:
        wait_back(ready, "the learner", timeout_s=0.3)
    message = str(err.value)
    assert "\n" not in message and message.startswith("the learner did not come back within 0 s after a crash")
    assert "raise topology.max_actor_restarts" in message

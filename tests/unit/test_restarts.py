"""Counting restarts as the driver sees them: each death once, whichever of its signs arrive and in what order."""

import random

import pytest
import ray

from raylab.driver.restarts import Restarts
from raylab.errors import RaylabError
from raylab.remote.runtime import wait_back


def test_a_death_counts_once_however_many_calls_fail_and_the_restarted_reply_does_not_add_one():
    r = Restarts()
    assert r.failed("replay", "replay_0", tag=0)  # add failed
    assert not r.failed("replay", "replay_0", tag=0)  # sample_many of the same life failed too
    assert r.down("replay_0")
    assert not r.replied("replay", "replay_0", life=1)  # the restarted shard's first reply
    assert r.replay == 1 and not r.down("replay_0")


def test_a_late_failure_after_the_restarted_reply_is_not_a_second_death():
    """The race CI saw: a learner call that sampled the dead shard fails only once the learner resolves its
    argument, after the restarted shard has answered an add. It was sent in life 0: no new death."""
    r = Restarts()
    r.failed("replay", "replay_0", tag=0)
    r.replied("replay", "replay_0", life=1)
    assert not r.failed("replay", "replay_0", tag=0)
    assert r.replay == 1


def test_a_death_between_calls_is_counted_by_the_restarted_reply():
    r = Restarts()
    assert r.replied("replay", "replay_1", life=1)
    assert r.replied("rollout", "rollout_0", life=1)
    assert not r.replied("rollout", "rollout_1", life=0)
    assert (r.replay, r.rollout) == (1, 1)


def test_two_deaths_count_twice_and_calls_are_tagged_with_the_newest_life_heard():
    r = Restarts()
    assert r.tag("learner") == 0
    assert r.failed("learner", "learner", tag=0)
    r.replied("learner", "learner", life=1)
    assert r.tag("learner") == 1
    assert r.failed("learner", "learner", tag=1)
    assert r.learner == 2
    assert r.metrics()["restarts/learner"] == 2 and set(r.metrics()) >= {"restarts/server", "restarts/replay_restored"}


def test_a_replaced_actor_counts_its_death_once_and_its_successor_starts_at_life_zero():
    r = Restarts()
    r.failed("rollout", "rollout_3", tag=0)
    r.replace("rollout", "rollout_3")  # the driver made a new actor under the same name
    assert r.rollout == 1
    r.replace("rollout", "rollout_3")  # it died again, seen only by the driver replacing it
    assert not r.replied("rollout", "rollout_3", life=0)
    assert r.rollout == 2


def _history(rng: random.Random) -> tuple[int, list[tuple[str, int]]]:
    """A random crash history of one actor, as the signs reaching a driver: (deaths, signs). The actor lives
    ``deaths + 1`` lives; each call is sent while the driver had heard from some life <= the one that runs
    it (its tag), and either fails (that life died with it in flight) or is answered (a reply carrying the
    life). Lives may die between calls (no failed call) or answer nothing."""
    deaths = rng.randint(0, 4)
    signs: list[tuple[str, int]] = []
    for life in range(deaths + 1):
        for _ in range(rng.randint(0, 3)):
            signs.append(("reply", life))
        if life < deaths:
            for _ in range(rng.randint(0, 3)):  # calls in flight when this life died
                signs.append(("fail", rng.randint(0, life)))  # tagged with any life heard before
    signs.append(("reply", deaths))  # the newest life answers once more before the run ends
    return deaths, signs


@pytest.mark.parametrize("seed", range(200))
def test_any_interleaving_of_late_replies_failed_calls_and_restarted_replies_counts_each_death_exactly_once(seed):
    rng = random.Random(seed)
    deaths, signs = _history(rng)
    rng.shuffle(signs)  # any arrival order: late replies, late failures, restarted replies first
    r = Restarts()
    announced = 0
    for kind, value in signs:
        new = r.replied("learner", "learner", value) if kind == "reply" else r.failed("learner", "learner", value)
        announced += new
        assert r.learner <= deaths, f"overcounted: {r.learner} > {deaths} deaths after {signs}"
    assert r.learner == deaths, signs
    assert announced == deaths, "every death is announced exactly once"


def test_an_actor_that_never_comes_back_is_one_line_naming_the_fix():
    def ready():  # what a dead actor's call does once its restarts are used up (no Ray runtime needed)
        raise ray.exceptions.RayActorError()

    with pytest.raises(RaylabError) as err:
        wait_back(ready, "the learner", timeout_s=0.3)
    message = str(err.value)
    assert "\n" not in message and message.startswith("the learner did not come back within 0 s after a crash")
    assert "raise topology.max_actor_restarts" in message

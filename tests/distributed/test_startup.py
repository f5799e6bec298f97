"""Actor start-up waits for the event, not a fixed time: actors still starting on a busy machine are waited
for while the cluster holds them; actors the cluster cannot hold are a one-line error after the timeout."""

from __future__ import annotations

import time

import pytest

from raylab.errors import RaylabError
from raylab.remote.runtime import cluster_fits, wait_ready

pytestmark = [pytest.mark.distributed, pytest.mark.usefixtures("ray_session")]


def slow_actor(seconds: float, num_cpus: float = 0.5):
    import ray

    @ray.remote(num_cpus=num_cpus)
    class Slow:  # defined here: shipped by value, nothing for the workers to import
        def __init__(self) -> None:
            time.sleep(seconds)

        def ready(self) -> bool:
            return True

    return Slow.remote()


def test_actors_still_starting_are_waited_for_while_the_cluster_holds_them(capfd):
    actor = slow_actor(4.0)
    start = time.monotonic()
    wait_ready([actor.ready.remote()], "slow actors", timeout_s=0.5, fits=lambda: cluster_fits(0.5))
    assert time.monotonic() - start >= 3.0  # it waited for the constructor, well past the timeout
    err = capfd.readouterr().err
    assert err.count("1 of 1 slow actors still starting after 0 s (the cluster has their CPUs") == 1


def test_without_the_resources_it_is_one_line_after_the_timeout():
    actor = slow_actor(0.0, num_cpus=64)  # more than the session's Ray has: never placed
    assert not cluster_fits(64)
    try:
        with pytest.raises(RaylabError, match="did not start within 1 s: the Ray cluster lacks the CPUs") as info:
            wait_ready([actor.ready.remote()], "big actors", timeout_s=1.0, fits=lambda: cluster_fits(64))
        assert "\n" not in str(info.value)
    finally:
        import ray

        ray.kill(actor)  # it would wait for resources for the rest of the session

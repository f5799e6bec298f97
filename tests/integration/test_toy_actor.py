"""Adding an actor kind is one host class: this file defines one, ``Tally``, and runs it on both backends
through the generic clients (raylab.remote.host's declaration; raylab.remote.ray_backend and .inprocess).
Nothing else in raylab names it."""

from __future__ import annotations

import os
import signal
import sys

import pytest

from raylab.config import RayConfig
from raylab.remote.host import ActorSpec, Host, Resources, remote
from raylab.remote.inprocess import InProcessBackend


class Tally(Host):
    """A toy actor kind: a running total."""

    def __init__(self, start: int):
        self.total = start

    @remote()
    def add(self, k: int) -> int:
        self.total += k
        return self.total

    @remote(returns=lambda *ks: len(ks))
    def add_each(self, *ks: int) -> tuple[int, ...]:
        """One return value per argument: each its own ref."""
        return tuple(self.add(k) for k in ks)

    @remote(returns=2)
    def halves(self) -> tuple[int, int]:
        return self.total // 2, self.total - self.total // 2

    @remote()
    def pid(self) -> int:
        return os.getpid()

    @remote()
    def environ(self, name: str) -> str | None:
        return os.environ.get(name)

    def not_remote(self) -> int:
        return self.total


@pytest.fixture(params=["in_process", "ray"])
def backend(request):
    if request.param == "in_process":
        return InProcessBackend()
    request.getfixturevalue("ray_session")
    import ray

    from raylab.remote.ray_backend import RayBackend

    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # Ray's workers need not import tests/
    return RayBackend(RayConfig(), max_restarts=1)


def test_a_new_actor_kind_is_one_host_class(backend):
    tally = backend.spawn(ActorSpec(Tally, (10,), Resources(cpus=0)))
    backend.wait_ready([tally], "tally")
    assert backend.get(tally.add(5)) == 15
    refs = tally.add_each(1, 2, 3)
    assert len(refs) == 3 and backend.get(list(refs)) == [16, 18, 21]
    low, high = tally.halves()
    assert backend.get([low, high]) == [10, 11]
    assert backend.get(tally.add(high)) == 32  # a ref as an argument arrives as its value
    assert backend.get(tally.add(k=1)) == 33
    assert backend.get(tally.get_life()) == 0 and backend.get(tally.peak_memory_bytes()) > 0
    with pytest.raises(AttributeError, match="not a remote method"):
        tally.not_remote()


@pytest.mark.distributed
def test_a_crashed_toy_actor_comes_back_under_the_restart_policy(request):
    request.getfixturevalue("ray_session")
    import ray

    from raylab.remote.ray_backend import RayBackend

    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    backend = RayBackend(RayConfig(), max_restarts=1)
    tally = backend.spawn(ActorSpec(Tally, (10,), Resources(cpus=0)))
    assert backend.get(tally.add(5)) == 15
    os.kill(backend.get(tally.pid()), signal.SIGKILL)
    assert backend.wait_back(tally, "the tally") == 1  # its second life, rebuilt from its spec
    assert backend.get(tally.add(1)) == 11


def test_an_actor_on_several_threads_waits_asleep_unless_the_user_chose(request, monkeypatch, tmp_path):
    """Resources.threads > 1 (the learner on learner.num_threads): Ray starts the actor's process with
    OMP_WAIT_POLICY=PASSIVE, so its OpenMP threads do not spin against the rollout actors for shared cores; one
    thread is left alone; a policy in the driver's environment goes to the actor instead, one in ray.runtime_env
    is left to Ray."""
    request.getfixturevalue("ray_session")
    import ray

    from raylab.builders.plans import learner_spec
    from raylab.envs import env_spaces
    from raylab.remote.ray_backend import RayBackend
    from tests.conftest import FAKE, make_config

    cfg = make_config(tmp_path, *FAKE, "learner.num_threads=2")
    assert learner_spec(cfg, env_spaces(cfg.env)).resources.threads == 2
    before = os.environ.get("OMP_WAIT_POLICY")  # what the session's Ray started with, for a one-thread actor
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    backend = RayBackend(RayConfig(), max_restarts=0)
    two = backend.spawn(ActorSpec(Tally, (0,), Resources(cpus=0, threads=2)))
    one = backend.spawn(ActorSpec(Tally, (0,), Resources(cpus=0)))
    assert backend.get(two.environ("OMP_WAIT_POLICY")) == "PASSIVE"
    assert backend.get(one.environ("OMP_WAIT_POLICY")) == before
    monkeypatch.setenv("OMP_WAIT_POLICY", "ACTIVE")
    assert backend._thread_env() == {"OMP_WAIT_POLICY": "ACTIVE"}
    chosen = RayConfig(runtime_env={"env_vars": {"OMP_WAIT_POLICY": "ACTIVE"}})
    assert RayBackend(chosen, max_restarts=0)._thread_env() == {}

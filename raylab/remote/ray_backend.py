"""The Ray backend of raylab.driver.loop: hosts (raylab.remote.host) as Ray actors, one generic client for all.

``spawn`` makes a host class a Ray actor class once (``node_id``, ``pid`` and the actor's life added), starts it
with the spec's resources under the run's one restart policy, and returns a ``RayClient``: each method the host
declares remote is forwarded as ``.remote()`` with its declared number of return values. The loop waits on
the refs, fetches them, tells an actor's death from other errors and asks where actors run, all through this
object; nothing else in a run imports Ray.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import ray

from raylab.config import RayConfig
from raylab.config.coerce import plain
from raylab.remote.host import ActorSpec, Resources, Returns, count, remote_methods
from raylab.remote.runtime import (
    actor_life,
    cluster_fits,
    cluster_nodes,
    placement,
    run_on_ray,
    user_error,
    wait_back,
    wait_ready,
)

T = TypeVar("T")
SPREAD = "SPREAD"


class RayTransport:
    """Waiting on and reading ObjectRefs; picklable, so an actor can be handed it with the clients it calls."""

    ActorDied: type[BaseException] = ray.exceptions.RayActorError
    """What fetching a call's result raises when its actor died (Ray restarts it, or it is gone)."""

    def back(self, client: RayClient, what: str) -> int:
        """After a crash Ray restarts the actor: wait for it; returns the life of the one now answering."""
        wait_back(client.ready, what)
        return int(ray.get(client.get_life()))

    def wait(self, refs: Sequence[Any], timeout: float | None, every: bool = False, fetch: bool = True) -> list[Any]:
        """``fetch=False``: done where they are, not yet copied here (an A3C worker blocked on the server
        counts the copy as receiving, not waiting)."""
        ready, _ = ray.wait(list(refs), num_returns=len(refs) if every else 1, timeout=timeout, fetch_local=fetch)
        return ready

    def get(self, ref: Any) -> Any:
        """``ray.get``; an actor's user error (a RaylabError it raised) comes back as itself, one line."""
        try:
            return ray.get(ref)
        except ray.exceptions.RayError as err:
            raise user_error(err) or err from None

    def put(self, obj: Any) -> Any:
        return ray.put(obj)


class RayClient:
    """Calls a host's declared remote methods on its actor: ``client.sample(w)`` is
    ``handle.sample.options(num_returns=n).remote(w)``; each result is a ref (a tuple of refs for n > 1)."""

    def __init__(self, handle: Any, returns: dict[str, Returns], kind: str):
        self.handle, self._returns, self.kind = handle, returns, kind

    def __getattr__(self, name: str) -> Callable[..., Any]:
        if name.startswith("_") or name not in self._returns:
            raise AttributeError(f"{name} is not a remote method of {self.__dict__.get('kind', 'this host')}")
        method, returns = getattr(self.handle, name), self._returns[name]

        def call(*args: Any, **kwargs: Any) -> Any:
            n = count(returns, args)
            return method.remote(*args, **kwargs) if n == 1 else method.options(num_returns=n).remote(*args, **kwargs)

        self.__dict__[name] = call  # the next lookup skips __getattr__
        return call

    def __getstate__(self) -> dict[str, Any]:
        return {"handle": self.handle, "_returns": self._returns, "kind": self.kind}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)


class _Located:
    """Mixed into every host made a Ray actor: its life read before the host's constructor runs, the torch
    threads and niceness its spec asks for, and where it runs (benchmark_metrics.json's ``placement``; tests
    that kill an actor find its pid)."""

    def __init__(self, nice: int, *args: Any):
        self.life = actor_life()
        if nice:
            os.nice(nice)
        if getattr(self, "single_threaded", False):
            import torch

            torch.set_num_threads(1)
        super().__init__(*args)

    def node_id(self) -> str:
        return str(ray.get_runtime_context().get_node_id())

    def pid(self) -> int:
        return os.getpid()


_ACTOR_CLASSES: dict[type, Any] = {}


def actor_class(host: type) -> Any:
    """``ray.remote`` of ``host`` with ``_Located`` mixed in, made once per host class."""
    if host not in _ACTOR_CLASSES:
        _ACTOR_CLASSES[host] = ray.remote(type(host.__name__, (_Located, host), {"__doc__": host.__doc__}))
    return _ACTOR_CLASSES[host]


class RayBackend(RayTransport):
    """The loop's calls (``wait``, ``get``, ``put``) are the transport's."""

    def __init__(self, ray_cfg: RayConfig, max_restarts: int, keep_ray: bool = False):
        """``max_restarts``: the run's one restart policy (topology.max_actor_restarts), for every actor;
        ``keep_ray``: a Ray this run starts outlives it (a sweep's trials share it)."""
        self.ray_cfg, self.max_restarts, self.keep_ray = ray_cfg, max_restarts, keep_ray
        self.transport = RayTransport()
        self.required_cpus = float("inf")
        """What the topology reserves (set by ``run``): start-ups wait past the timeout only if the cluster
        holds it."""
        self._warned_no_gpu = False

    def run(self, demands: Sequence[tuple[str, Resources]], body: Callable[[], T]) -> T:
        self.required_cpus = sum(res.cpus for _, res in demands)
        return run_on_ray(self.ray_cfg, self.required_cpus, body, keep=self.keep_ray)

    def nodes(self) -> list[dict[str, float]]:
        return cluster_nodes()

    def spawn(self, spec: ActorSpec) -> RayClient:
        res = spec.resources
        options: dict[str, Any] = {
            "num_cpus": res.cpus, "num_gpus": self._gpus(res), "max_restarts": self.max_restarts,
        }  # fmt: skip
        if res.spread:
            options["scheduling_strategy"] = SPREAD
        if res.concurrency > 1:
            options["max_concurrency"] = res.concurrency
        if spec.name:
            options["name"] = spec.name
        if res.threads > 1 and (env := self._thread_env()):
            options["runtime_env"] = {"env_vars": env}  # merged with the run's ray.runtime_env by Ray
        handle = actor_class(spec.host).options(**options).remote(res.nice, *spec.args)
        return RayClient(handle, remote_methods(spec.host), spec.host.__name__)

    def _thread_env(self) -> dict[str, str]:
        """The environment of an actor training on several OpenMP threads: their waits asleep at once
        (OMP_WAIT_POLICY=PASSIVE), not spinning first as libgomp's default does. On 2 cores shared with the
        rollout actors a spinning thread holds a core the others need: ``mario_dqn`` with its learner on 2
        threads collected 0.79x the frames/s of 1 thread, and 0.96x with the 2 threads passive; ``atari_appo``'s
        2 learner threads collected 1.02x passive against spinning, within the spinning runs' spread
        (benchmarks/mario_learner_omp.json, atari_learner_omp.json). A policy in the driver's environment goes
        to the actor instead (a cluster's actors do not inherit it); one in ray.runtime_env reaches it already."""
        runtime = plain(self.ray_cfg.runtime_env) if self.ray_cfg.runtime_env else {}
        if "OMP_WAIT_POLICY" in (runtime.get("env_vars") or {}):
            return {}
        return {"OMP_WAIT_POLICY": os.environ.get("OMP_WAIT_POLICY", "PASSIVE")}

    def _gpus(self, res: Resources) -> float:
        if not res.gpu_if_any:
            return res.gpus
        if float(ray.cluster_resources().get("GPU", 0.0)) >= 1:
            return res.gpu_if_any
        if not self._warned_no_gpu:
            self._warned_no_gpu = True
            logging.getLogger("raylab").warning(
                "no GPU in the Ray cluster: the learner runs on CPU (learner.device=auto)"
            )
        return 0.0

    def called_died(self, err: BaseException) -> bool:
        """``err`` (ActorDied) came from inside a call whose actor lives on: an actor *it* called died."""
        return isinstance(err, ray.exceptions.RayTaskError)

    def death_of(self, err: BaseException, client: RayClient) -> bool:
        """Whether ``err`` reports the death of ``client``'s actor (not of an actor its call called)."""
        return getattr(err, "actor_id", None) == client.handle._actor_id.hex()

    def wait_ready(self, clients: Sequence[RayClient], what: str) -> None:
        wait_ready([c.ready() for c in clients], what, fits=lambda: cluster_fits(self.required_cpus))

    def wait_back(self, client: RayClient, what: str) -> int:
        return self.back(client, what)

    def kill(self, client: RayClient) -> None:
        ray.kill(client.handle, no_restart=True)

    def placement(self, clients: dict[str, RayClient]) -> dict[str, str]:
        return placement({name: c.handle for name, c in clients.items()})

    def peak_memory_bytes(self, clients: Sequence[RayClient]) -> int:
        """Summed over the actors still alive (one lost while stopping has no answer)."""
        total = 0
        for ref in [c.peak_memory_bytes() for c in clients]:
            with contextlib.suppress(ray.exceptions.RayActorError):
                total += int(ray.get(ref))
        return total

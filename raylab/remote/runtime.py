"""Starting or joining Ray, and waiting for actors with a bounded patience."""

from __future__ import annotations

import logging
import math
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import ray
from ray import ObjectRef

from raylab.config import RayConfig
from raylab.config.coerce import plain
from raylab.errors import RaylabError

ACTOR_START_TIMEOUT_S = 180.0
"""How long actors may wait to be placed (resources) before a start-up fails with "the cluster lacks ..."."""
ACTOR_START_LIMIT_S = 1800.0
"""How long placed actors may take to finish starting (their constructors) before the start-up fails."""
T = TypeVar("T")


def run_on_ray(cfg: RayConfig, required_cpus: float, body: Callable[[], T], keep: bool = False) -> T:
    """Run a topology's driver loop on Ray: start or join it, turn an actor's user error back into its one
    line, and stop the Ray this call started unless ``keep`` (a sweep's trials share it: raylab/sweep.py,
    which restarts one too small for a trial's CPUs)."""
    if keep and KEPT.started and ray.is_initialized() and ray_cpus() < required_cpus:
        ray.shutdown()  # a sweep's trial that needs more CPUs than the Ray the earlier trials shared
    started = init_ray(cfg, required_cpus)
    KEPT.started = KEPT.started or (started and keep)
    try:
        return body()
    except ray.exceptions.RayError as err:
        raise user_error(err) or err from None
    finally:
        if started and not keep:
            ray.shutdown()


class _Kept:
    started = False
    """This process started the Ray that a sweep's trials share (only that one may be restarted bigger)."""


KEPT = _Kept()


def actor_life() -> int:
    """How many times Ray had restarted the calling actor when this process started it: 0 in its first life.
    (Ray's own ``was_current_actor_reconstructed`` reads the same actor-table entry.)"""
    from ray._private.state import actors

    info = actors(actor_id=ray.get_runtime_context().get_actor_id())
    return int(info.get("NumRestarts", 0)) if info else 0


def placement(handles: dict[str, Any]) -> dict[str, str]:
    """{actor name: node id} for actors made by raylab.remote.ray_backend (their ``node_id``)."""
    nodes = ray.get([h.node_id.remote() for h in handles.values()])
    return dict(zip(handles, nodes, strict=True))


WORKER_NICENESS = "RAY_worker_niceness"
"""Ray starts its worker processes (every actor) at nice 15 unless this variable says otherwise."""


def actors_at_driver_priority() -> None:
    """Have the Ray this process starts run its actors at the driver's priority (nice 0), as ``ray job
    submit`` does for its drivers, unless RAY_worker_niceness is set. Ray's default (15) starves every actor
    behind any ordinary process: beside two busy loops on 2 cores, mario_dqn's rollout actors stepped 13 env
    steps/s and a short test run missed its target; the actors are the workload here, not background work. Its
    GCS keeps 10,000 task events, not 100,000: it grew 110-223 MB in 30-min runs (benchmarks/gcs_task_events.json)."""
    os.environ.setdefault(WORKER_NICENESS, "0")
    os.environ.setdefault("RAY_task_events_max_num_task_in_gcs", "10000")


TOKEN_AUTH_LOGGER = "ray._private.authentication.authentication_token_setup"
"""Where Ray 2.60 says, on every start of a new local instance, that it turned token authentication on."""


def quiet_token_auth_notice() -> None:
    """Keep Ray's default token authentication for the Ray this process starts, without its notice ("Token
    authentication is enabled for this Ray cluster. Set RAY_AUTH_MODE=disabled to opt out"), which a healthy
    first run should not print. (Setting RAY_AUTH_MODE=token instead also silences it, but only if set before
    ``import ray``: set later, the driver and the GCS disagree and the start fails.) A cluster joined by address
    keeps whatever its nodes were started with, and Ray's other auth messages are untouched."""
    logging.getLogger(TOKEN_AUTH_LOGGER).setLevel(logging.ERROR)


def init_ray(cfg: RayConfig, required_cpus: float) -> bool:
    """Start an embedded Ray or join a cluster; returns True when this call started Ray (and must stop it).

    ``ray.address=""`` starts a local Ray with enough logical CPUs for the topology (at least the machine's
    cores), unless RAY_ADDRESS is set (as under ``ray job submit``), in which case that cluster is joined.
    """
    if ray.is_initialized():
        return False
    kwargs: dict = {
        "include_dashboard": cfg.include_dashboard,
        "dashboard_host": cfg.dashboard_host,
        "logging_level": logging.WARNING,
    }
    if cfg.runtime_env:
        kwargs["runtime_env"] = plain(cfg.runtime_env)
    address: str | None = cfg.address or None
    if address is None and not os.environ.get("RAY_ADDRESS"):
        # "local" always starts a new instance; None would join a cluster left by `ray start` on this machine
        address = "local"
        actors_at_driver_priority()
        quiet_token_auth_notice()
        kwargs["num_cpus"] = cfg.num_cpus or max(os.cpu_count() or 1, math.ceil(required_cpus))
        if cfg.object_store_memory:
            kwargs["object_store_memory"] = cfg.object_store_memory
    if address not in (None, "local", "auto"):
        wait_reachable(address, cfg.connect_timeout_s)
    on_sigterm = signal.getsignal(signal.SIGTERM)
    try:
        ray.init(address=address, **kwargs)
    except (ConnectionError, RuntimeError, ValueError) as err:
        where = cfg.address or os.environ.get("RAY_ADDRESS", "") or "local"
        raise RaylabError(
            f"cannot start or reach Ray at '{where}' ({' '.join(str(err).split())[:160]}): "
            f"check ray.address (empty = embedded local Ray)"
        ) from err
    if callable(on_sigterm) and threading.current_thread() is threading.main_thread():
        # Ray's driver installs a C-level SIGTERM handler that dumps a stack and exits 15; keep raylab's
        # graceful stop (raylab.train's handler: final checkpoint, metrics, exit 0)
        signal.signal(signal.SIGTERM, on_sigterm)
    return True


def wait_reachable(address: str, timeout_s: float) -> None:
    """Retry a TCP connection to a cluster address until it answers or ``timeout_s`` passes: ray.init on an
    address nobody listens on can wait far longer, and says less, than this."""
    target = address.removeprefix("ray://").rsplit("/", 1)[0]
    host, sep, port = target.rpartition(":")
    if not sep or not port.isdigit():
        raise RaylabError(f"ray.address '{address}' is not host:port, ray://host:port or auto: fix ray.address")
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            with socket.create_connection((host.strip("[]"), int(port)), timeout=min(2.0, timeout_s)):
                return
        except OSError as err:
            if time.monotonic() >= deadline:
                raise RaylabError(
                    f"cannot reach Ray at '{address}' within {timeout_s:g} s ({err.strerror or err}): start the "
                    f"cluster (ray start --head) or fix ray.address (empty = embedded local Ray)"
                ) from None
            time.sleep(min(0.5, max(0.0, deadline - time.monotonic())))


def wait_back(ready: Callable[[], ObjectRef], what: str, timeout_s: float = ACTOR_START_TIMEOUT_S) -> None:
    """Block until a restarting actor answers ``ready()`` again (Ray refuses its calls meanwhile)."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            ray.get(ready())
            return
        except ray.exceptions.RayActorError as err:
            if time.monotonic() > deadline:
                why = " ".join(str(err).split())[:160]
                raise RaylabError(
                    f"{what} did not come back within {timeout_s:.0f} s after a crash ({why}): its restarts may be "
                    f"used up (raise topology.max_actor_restarts, -1 = always); its logs are under "
                    f"/tmp/ray/session_latest/logs"
                ) from None
            time.sleep(0.2)


def wait_ready(
    refs: Sequence[ObjectRef],
    what: str,
    timeout_s: float = ACTOR_START_TIMEOUT_S,
    fits: Callable[[], bool] | None = None,
) -> None:
    """Block until every actor answers ``ready``.

    After ``timeout_s``, actors still not ready are an error when the cluster cannot hold them (``fits()``
    False, or no ``fits`` given): one line, the cluster lacks the resources they reserve. When it can, they are
    waiting for a worker process that is still starting (importing torch on a busy machine, unpacking a
    runtime_env), and are waited for up to ACTOR_START_LIMIT_S, saying so once on stderr."""
    start = time.monotonic()
    pending = list(refs)
    told = False
    while True:
        waited = time.monotonic() - start
        limit = timeout_s if waited < timeout_s else ACTOR_START_LIMIT_S
        ready, pending = ray.wait(pending, num_returns=len(pending), timeout=max(0.0, limit - waited))
        try:
            ray.get(ready)  # re-raises a constructor's exception
        except ray.exceptions.RayError as err:
            raise user_error(err) or err from None
        if not pending:
            return
        if fits is None or not fits():
            raise RaylabError(
                f"{len(pending)} of {len(refs)} {what} did not start within {timeout_s:.0f} s: the Ray cluster "
                f"lacks the CPUs/GPUs they reserve; lower topology.num_workers, topology.worker_cpus or "
                f"learner.num_gpus"
            )
        if time.monotonic() - start >= ACTOR_START_LIMIT_S:
            raise RaylabError(
                f"{len(pending)} of {len(refs)} {what} did not finish starting within {ACTOR_START_LIMIT_S:.0f} s "
                f"although the cluster has the CPUs they reserve: see their logs under /tmp/ray/session_latest/logs"
            )
        if not told:
            print(
                f"raylab: {len(pending)} of {len(refs)} {what} still starting after {timeout_s:.0f} s (the cluster "
                f"has their CPUs: a busy machine?); waiting",
                file=sys.stderr,
                flush=True,
            )
            told = True


def cluster_nodes() -> list[dict[str, float]]:
    """The resources of each live node of the Ray cluster this process is connected to."""
    return [dict(node.get("Resources", {})) for node in ray.nodes() if node.get("Alive")]


def cluster_fits(required_cpus: float) -> bool:
    """Whether the cluster's logical CPUs hold what the run reserves (its actors then all get placed)."""
    return ray_cpus() >= required_cpus - 1e-9


def ray_cpus() -> float:
    """Logical CPUs of the Ray cluster this process is connected to."""
    return float(ray.cluster_resources().get("CPU", 0.0))


def start_local_ray(num_cpus: int) -> None:
    """A local Ray for a benchmark, as a run's embedded one starts (actors at the driver's priority, not at Ray's
    default nice 15), without the actors' logs on the console."""
    actors_at_driver_priority()
    quiet_token_auth_notice()
    ray.init(num_cpus=num_cpus, include_dashboard=False, log_to_driver=False)


def shutdown_ray() -> None:
    """Stop the Ray this process started (``init_ray`` returned True)."""
    ray.shutdown()


def user_error(err: BaseException) -> RaylabError | None:
    """The RaylabError behind a Ray error (an actor's constructor or method raised it), if there is one."""
    seen: set[int] = set()
    current: BaseException | None = err
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, RaylabError) and not isinstance(current, ray.exceptions.RayError):
            return current  # the original, not Ray's wrapper that subclasses it and carries a traceback
        cause = getattr(current, "cause", None)
        current = cause if isinstance(cause, BaseException) else current.__cause__
    return None

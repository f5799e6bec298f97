"""One driver loop for every topology: a topology declares its dataflow (a ``Flow``), the ``Driver`` runs it.

    Driver.run ── backend.run (start or join Ray; in one process: nothing) ──> flow.create: the actors
       │   + the evaluation actor (the driver's own) ── wait_ready, record placement, flow.start
       │
       └─ loop until monitor.stop_reason() or Ctrl-C / SIGTERM:
             flow.step(driver)          submit what may be submitted now (driver.submit(job))
             eval due? ─────────────── EvalJob(flow.eval_weights())
             backend.wait(refs in flight) ── job.done(driver, value)  |  job.failed(driver, err) (actor died)
             gauges, restarts/*, tick (periodic checkpoint of flow.state())
       then: flow.drain (learner calls in flight), the run's newest policy (flow.latest_weights(): final.pt) and
             the best evaluated ones (raylab.driver.best: best.pt), the final evaluation of each (one when
             they are the same version; none after an interruption), peak memory, monitor.finish

A job is one call in flight: it knows its ref and what to do when the call is done or its actor died; the
driver never asks what kind of job it holds. Restarts (raylab.driver.restarts) go through ``heard`` and
``lost``, which apply the one restart policy, topology.max_actor_restarts, to every actor alike: -1 always
restarted, 0 never (the crash ends the run with one line), n at most n times per actor.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from raylab.driver.best import BestPolicy, final_choice, policy_layout
from raylab.driver.checkpoints import ReplaySnapshot
from raylab.driver.monitor import RunMonitor
from raylab.driver.placement import RestartWatch, check_placeable
from raylab.driver.report import RunSummary
from raylab.driver.restarts import Restarts
from raylab.driver.stop import INTERRUPTED, interrupted_reason
from raylab.errors import RaylabError
from raylab.plan import RunPlan
from raylab.remote.host import ActorSpec, Resources
from raylab.transport import Transport
from raylab.types import EvalResult, Weights

WAIT_TIMEOUT_S = 0.1
PROBE_EVERY_S = 0.5
"""How often a restarting actor is asked whether it is back."""
T = TypeVar("T")


class Backend(Protocol):
    """Where the actors run: Ray actors (raylab.remote.ray_backend), or plain host objects in this process whose
    calls are done when made (raylab.remote.inprocess). A flow starts its actors with ``spawn`` (an
    ``ActorSpec``: any host class, raylab.remote.host); a client's calls return refs the loop waits on and
    fetches. Nothing here names an actor kind or an algorithm."""

    ActorDied: type[BaseException]

    @property
    def transport(self) -> Transport:
        """How code handed to an actor (an A3C worker's link to its shards) waits on and reads refs."""
        ...

    def run(self, demands: Sequence[tuple[str, Resources]], body: Callable[[], T]) -> T:
        """``body()`` where the actors can run: ``demands`` (every actor the run starts, and what it reserves)
        are checked against what the cluster holds before any of them starts."""
        ...

    def nodes(self) -> list[dict[str, float]] | None:
        """The resources of each live node where the actors run (None: no cluster, nothing is reserved)."""
        ...

    def spawn(self, spec: ActorSpec) -> Any: ...
    def wait(
        self, refs: Sequence[Any], timeout: float | None, every: bool = False, fetch: bool = True
    ) -> list[Any]: ...
    def get(self, ref: Any) -> Any: ...
    def put(self, value: Any) -> Any: ...
    def called_died(self, err: BaseException) -> bool: ...
    def death_of(self, err: BaseException, client: Any) -> bool: ...
    def wait_ready(self, clients: Sequence[Any], what: str) -> None: ...
    def wait_back(self, client: Any, what: str) -> int: ...
    def kill(self, client: Any) -> None: ...
    def placement(self, clients: dict[str, Any]) -> dict[str, str]: ...
    def peak_memory_bytes(self, clients: Sequence[Any]) -> int: ...


class Job(Protocol):
    """One call in flight."""

    ref: Any
    drain: bool
    """Waited for at the end of the run (learner calls: the checkpoint then holds every counted update)."""

    def done(self, driver: Driver, value: Any) -> None: ...
    def failed(self, driver: Driver, err: BaseException) -> None: ...


@dataclass
class Call:
    """A call in flight to the restartable actor ``name`` of ``kind``; ``tag``: raylab.driver.restarts."""

    ref: Any
    kind: str
    name: str
    tag: int
    drain: bool = field(default=False, kw_only=True)


class Flow:
    """A topology's dataflow: its actors, what to submit when, and what the run's outputs hold."""

    def beside_checkpoints(self, driver: Driver) -> ReplaySnapshot | None:
        """What the flow writes beside each checkpoint (Ape-X: every replay shard's snapshot), called with the
        checkpoint's path before it is written; None: nothing. Asked before ``create``."""
        return None

    def create(self, driver: Driver) -> dict[str, Any]:
        """Create the actors; returns {name: client} (placement, peak memory, readiness)."""
        raise NotImplementedError

    def start(self, driver: Driver) -> None:
        """Every actor is ready: load a resumed state, submit the first calls."""

    def step(self, driver: Driver) -> None:
        """Before each wait: submit what may be submitted now."""

    def eval_weights(self, driver: Driver) -> list[Any] | None:
        """Refs to the weights to evaluate now, one per policy (None: none to evaluate now)."""
        raise NotImplementedError

    def gauges(self, driver: Driver) -> dict[str, float]:
        return {}

    def state(self, driver: Driver) -> dict[str, Any] | None:
        """The full training state for a periodic checkpoint (None: not now, e.g. restarting)."""
        raise NotImplementedError

    def drain(self, driver: Driver) -> None:
        """The loop ended: let the calls that change the training state land (by default the jobs marked
        ``drain``; one whose actor died counts nothing)."""
        for job in [job for job in driver.pending.values() if job.drain]:
            driver.pending.pop(job.ref)
            try:
                value = driver.backend.get(job.ref)
            except driver.backend.ActorDied:
                continue
            job.done(driver, value)

    def latest_weights(self, driver: Driver) -> list[Any]:
        """Refs to the newest weights, one per policy (the run's policy unless an evaluation met
        stop.mean_return); with DQN's learner.average_rate, the learner's moving average of them."""
        raise NotImplementedError

    def final_state(self, driver: Driver) -> dict[str, Any]:
        raise NotImplementedError

    def extra(self, driver: Driver, state: dict[str, Any]) -> dict[str, Any]:
        """benchmark_metrics.json sections of this topology (Ape-X: ``replay``; a3c: ``a3c``; ``restarts`` is
        the driver's)."""
        return {}


@dataclass
class Probe(Call):
    """Is the restarting actor back? Asked every PROBE_EVERY_S; ``then`` runs once it answers."""

    client: Any = None
    then: Callable[[], None] = lambda: None

    def done(self, driver: Driver, life: int) -> None:
        driver.restart_watch.back(self.name)
        driver.heard(self.kind, self.name, life)
        self.then()

    def failed(self, driver: Driver, err: BaseException) -> None:
        driver.later(PROBE_EVERY_S, lambda: driver.when_back(self.client, self.kind, self.name, self.then))


@dataclass
class EvalJob(Call):
    weights: Any = None

    def done(self, driver: Driver, result: EvalResult) -> None:
        driver.monitor.on_eval(result)
        driver.best.offer(self.weights, result, driver.monitor.progress.env_steps)
        driver.evaluating = False

    def failed(self, driver: Driver, err: BaseException) -> None:  # the next one is due an interval later
        driver.lost(self.kind, self.name, self.tag, err)
        driver.when_back(driver.evaluator, "eval", "eval", lambda: setattr(driver, "evaluating", False))


def first_line(err: BaseException) -> str:
    return (str(err).strip().splitlines() or [type(err).__name__])[0][:160]


class Driver:
    def __init__(
        self, plan: RunPlan, flow: Flow, backend: Backend, open_monitor: Callable[[ReplaySnapshot | None], RunMonitor]
    ):
        """``open_monitor(hook)``: the run's monitor (raylab.driver.monitor), writing with each checkpoint what
        ``hook`` writes (the flow's ``beside_checkpoints``)."""
        self.plan, self.flow, self.backend, self.open_monitor = plan, flow, backend, open_monitor
        self.restarts = Restarts()
        self.restart_watch = RestartWatch(plan.demands(), backend.nodes, plan.placement_wait_s)
        """A restarting actor the cluster can no longer hold ends the run (raylab.driver.placement)."""
        self.pending: dict[Any, Job] = {}
        self.timers: list[tuple[float, Callable[[], None]]] = []
        self.evaluating = False
        self.stopping = False
        """The loop ended: calls still landing start no new work."""
        self.best = BestPolicy(plan.target)
        """The refs of the best weights evaluated (best.pt)."""

    # -- for the topologies' jobs --------------------------------------------------------------------------
    def submit(self, job: Job) -> None:
        self.pending[job.ref] = job

    def later(self, delay_s: float, then: Callable[[], None]) -> None:
        self.timers.append((time.monotonic() + delay_s, then))

    def heard(self, kind: str, name: str, life: int) -> int:
        """A reply of ``name`` from its life ``life``: returns the deaths it reveals (restore what it lost)."""
        new = self.restarts.replied(kind, name, life)
        self._within_limit(name, None)
        return new

    def lost(self, kind: str, name: str, tag: int, err: BaseException) -> int:
        """A call to ``name`` failed because it died: returns 1 for a death not counted yet."""
        if self.plan.max_restarts == 0:
            raise RaylabError(
                f"{name} died ({first_line(err)}) and topology.max_actor_restarts=0: raise it to let Ray restart "
                f"crashed actors (-1 = always), or check the actors' logs under /tmp/ray/session_latest/logs"
            ) from None
        new = self.restarts.failed(kind, name, tag)
        self._within_limit(name, err)
        return new

    def _within_limit(self, name: str, err: BaseException | None) -> None:
        limit, deaths = self.plan.max_restarts, self.restarts.actors[name].deaths
        if 0 <= limit < deaths:
            last = f" (last: {first_line(err)})" if err is not None else ""
            raise RaylabError(
                f"{name} died {deaths} times{last}, more than topology.max_actor_restarts={limit}: raise "
                f"it, or check the actors' logs under /tmp/ray/session_latest/logs"
            ) from None

    def when_back(self, client: Any, kind: str, name: str, then: Callable[[], None]) -> None:
        """Run ``then`` once the restarting actor answers again (without blocking the loop)."""
        self.restart_watch.restarting(name)
        self.submit(Probe(client.get_life(), kind, name, 0, client=client, then=then))

    def in_flight(self, kind: type[T]) -> list[T]:
        return [job for job in self.pending.values() if isinstance(job, kind)]

    # -- the run -------------------------------------------------------------------------------------------
    def run(self) -> RunSummary:
        return self.backend.run(self.plan.demands(), self._run)

    def _run(self) -> RunSummary:
        if self.backend.nodes() is not None:  # nothing starts where it cannot be placed
            check_placeable(self.plan.demands(), lambda: self.backend.nodes() or [], self.plan.placement_wait_s)
        with self.open_monitor(self.flow.beside_checkpoints(self)) as self.monitor:
            self.actors = self.flow.create(self)
            """{name: client} of every actor (placement, readiness, peak memory)."""
            self.evaluator = self.actors["eval"] = self.backend.spawn(self.plan.evaluator)
            self.backend.wait_ready(list(self.actors.values()), "raylab actors")
            placement = self.backend.placement(self.actors)
            if placement:  # in one process: none to record
                self.monitor.record_placement(placement)
            self.flow.start(self)
            earlier = self.monitor.checkpointer.load_best()  # a resumed run's best.pt
            if earlier is not None:
                self.best.restore([self.backend.put(w) for w in earlier[0]], earlier[1])
            self.monitor.start()
            stop = self._loop()
            self.monitor.stopped()
            return self._finish(stop)

    def _loop(self) -> str:
        monitor = self.monitor
        try:
            while True:
                self.flow.step(self)
                self._evaluate_if_due()
                self._wait()
                self.restart_watch.check()
                monitor.gauge({**self.flow.gauges(self), **self.restarts.metrics()})
                monitor.tick(state=lambda: self.flow.state(self))
                stop = monitor.stop_reason()
                if stop is not None:
                    return stop
        except KeyboardInterrupt as err:
            return interrupted_reason(err)

    def _evaluate_if_due(self) -> None:
        if self.evaluating or not self.monitor.eval_due():
            return
        weights = self.flow.eval_weights(self)
        if weights is None:
            return
        self.monitor.eval_started()
        plan, tag = self.plan, self.restarts.tag("eval")
        ref = self.evaluator.evaluate(plan.eval_episodes, plan.target, plan.confirm_episodes, *weights)
        self.submit(EvalJob(ref, "eval", "eval", tag, weights=weights))
        self.evaluating = True

    def _wait(self) -> None:
        now = time.monotonic()
        due, self.timers = [t for t in self.timers if t[0] <= now], [t for t in self.timers if t[0] > now]
        for _, then in due:
            then()
        waited = time.perf_counter()
        ready: list[Any] = []
        if self.pending:
            ready = self.backend.wait(list(self.pending), WAIT_TIMEOUT_S)
        else:  # every actor is restarting and nothing else is in flight
            time.sleep(WAIT_TIMEOUT_S)
        self.monitor.add_time("driver/wait_s", time.perf_counter() - waited)
        for ref in ready:
            job = self.pending.pop(ref)
            try:
                value = self.backend.get(ref)
            except self.backend.ActorDied as err:
                job.failed(self, err)
                continue
            job.done(self, value)

    def _finish(self, stop: str) -> RunSummary:
        flow, backend, monitor = self.flow, self.backend, self.monitor
        self.stopping = True
        flow.drain(self)
        newest_refs = flow.latest_weights(self)
        newest: list[Weights] = backend.get(list(newest_refs))
        refs, record = self.best.refs, self.best.record
        evaluate = bool(self.plan.final_episodes) and stop not in INTERRUPTED
        newest_eval = self._final_eval(newest_refs) if evaluate else None
        kept = None
        if refs is not None and record is not None:
            best: list[Weights] = backend.get(list(refs))
            same = [w.version for w in best] == [w.version for w in newest]  # then one evaluation
            kept = (best, record, (newest_eval if same else self._final_eval(refs)) if evaluate else None)
        outcome = final_choice(kept, newest, newest_eval, monitor.progress.env_steps)
        state = flow.final_state(self)
        peak = backend.peak_memory_bytes(list(self.actors.values()))
        extra = {**flow.extra(self, state), "restarts": self.restarts.metrics()}
        newest_layout = policy_layout(newest)
        return monitor.finish(
            stop, state, newest_layout, newest_eval, extra_peak_memory_bytes=peak, extra=extra, best=outcome
        )

    def _final_eval(self, refs: Sequence[Any]) -> EvalResult:
        return self.backend.get(self.evaluator.evaluate(self.plan.final_episodes, None, 0, *refs))

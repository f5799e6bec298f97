"""A3C on Ray: self-driven workers push gradients to parameter-server shards; nobody waits for anybody.

    A3CWorkerActor x N  --push(grad slice, version)-->  ShardActor x S  (shared RMSProp, one writer each)
          ^   (loop on the worker: segment, gradient, push;     |
          |    block only with > pushes_in_flight unanswered)  |
          +-------------- reply: the shard's new weights <-----+
    driver: Window job (run(window)) per worker -> report -> RunMonitor;  eval: pull shards -> EvalActor

Workers drive themselves (raylab.rollout.a3c.A3CWorker): the driver only hands each one a window (the plan's:
on Ray a quarter second; in one process one segment, the workers taking turns) and collects its report
(steps, episodes, losses, per-stage seconds including the time blocked on the server), so it never sits
between a worker and the server. A worker that dies (its process killed, a node lost) is restarted by Ray
with fresh seeds under the one restart policy (topology.max_actor_restarts, raylab.driver.loop), like every
other actor, and pulls the server's weights before its next window; its pushes in flight are lost. An
exception raised inside a worker (a bug, a bad config) stops the run. A crashed shard comes back (Ray) with
its initial weights: every worker finishes its window, then the whole server rolls back to the latest
periodic checkpoint (raylab.topology.a3c_server), versions moving on. The cost, counted: the updates since
that checkpoint plus the windows cut short.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from raylab.driver.loop import Call, Driver, Flow
from raylab.params.link import ServerLink
from raylab.plan import A3CPlan
from raylab.rollout.a3c import WorkerReport
from raylab.topology.a3c_server import ServerShards, WaitAccount, finish_windows


@dataclass
class Window(Call):
    flow: A3CTopology
    worker: int

    def done(self, driver: Driver, report: WorkerReport) -> None:
        self.flow.on_report(driver, report)
        self.flow.next_window(driver, self.worker)

    def failed(self, driver: Driver, err: BaseException) -> None:
        i, flow = self.worker, self.flow
        driver.restarts.lost_chunks += 1
        if driver.backend.called_died(err):  # the worker is alive: a server shard it pushed to died
            flow.server.lost(err, f"a3c worker {i}")
            flow.next_window(driver, i)
            return
        driver.lost(self.kind, self.name, self.tag, err)  # Ray restarts it with fresh seeds
        driver.when_back(flow.workers[i], self.kind, self.name, lambda: flow.next_window(driver, i))


class A3CTopology(Flow):
    def __init__(self, plan: A3CPlan):
        self.plan = plan

    def create(self, driver: Driver) -> dict[str, Any]:
        plan = self.plan
        self.server = ServerShards(driver, plan)
        link = ServerLink(self.server.shards, plan.bounds, driver.backend.transport)
        specs = [plan.worker(i, link, plan.incarnation) for i in range(plan.num_workers)]
        self.workers = [driver.backend.spawn(spec) for spec in specs]
        self.account = WaitAccount()
        self.idle: list[int] = []
        """Workers whose window ended while the server was down: they go on once it is restored."""
        return {
            **{f"server_{k}": s for k, s in enumerate(self.server.shards)},
            **{f"rollout_{i}": w for i, w in enumerate(self.workers)},
        }

    def start(self, driver: Driver) -> None:
        if self.plan.resumed_shards is not None:  # before any worker's first run pulls the weights
            shard_states = zip(self.server.shards, self.plan.resumed_shards, strict=True)
            driver.backend.get([s.load_state_dict(st) for s, st in shard_states])
        for i in range(len(self.workers)):
            self.next_window(driver, i)

    def next_window(self, driver: Driver, i: int) -> None:
        if driver.stopping:
            return
        if self.server.down:
            self.idle.append(i)
        else:
            name = f"rollout_{i}"
            ref = self.workers[i].run(*self.plan.window)
            driver.submit(Window(ref, "rollout", name, driver.restarts.tag(name), flow=self, worker=i))

    def on_report(self, driver: Driver, report: WorkerReport) -> None:
        self.account.add(report)
        # the parameter server's busy time, as its shards measured it for this worker's pushes
        driver.monitor.add_time("server/apply_s", report.timings.get("server_apply", 0.0))
        driver.monitor.on_rollout(report.rollout_stats(), report.policy_version_last)
        if report.segments:
            driver.monitor.on_learner(report.learner_stats())

    def step(self, driver: Driver) -> None:
        if self.server.down and not driver.in_flight(Window):
            self.server.restore(driver, self.workers)
            idle, self.idle = self.idle, []
            for i in idle:
                self.next_window(driver, i)

    def eval_weights(self, driver: Driver) -> list[Any] | None:
        weights = self.server.weights_or_none(driver)
        return None if weights is None else [weights]

    def state(self, driver: Driver) -> dict[str, Any] | None:
        return self.server.state_or_none(driver)

    def drain(self, driver: Driver) -> None:
        """The workers' last windows (finish_windows); a shard that crashed while stopping is restored."""
        windows = {job.ref: job.worker for job in driver.in_flight(Window)}
        finish_windows(driver, self.workers, windows, lambda report: self.on_report(driver, report))
        lives = driver.backend.get([s.get_life() for s in self.server.shards])
        if self.server.down or any(life != driver.restarts.tag(f"server_{k}") for k, life in enumerate(lives)):
            self.server.restore(driver, self.workers)  # a shard crashed while stopping: not the run's weights

    def latest_weights(self, driver: Driver) -> list[Any]:
        return [driver.backend.put(self.server.weights(driver))]

    def final_state(self, driver: Driver) -> dict[str, Any]:
        return self.server.state(driver)

    def extra(self, driver: Driver, state: dict[str, Any]) -> dict[str, Any]:
        restarts = sum(a.deaths for name, a in driver.restarts.actors.items() if name.startswith("rollout_"))
        summary = {**self.account.summary(), "server": self.server.summary(driver)}
        return {"a3c": {**summary, "worker_restarts": restarts}}

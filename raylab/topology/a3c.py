"""A3C on Ray: self-driven workers push gradients to parameter-server shards; nobody waits for anybody.

    A3CWorkerActor x N  --push(grad slice, version)-->  ShardActor x S  (shared RMSProp, one writer each)
          ^   (loop on the worker: segment, gradient, push;     |
          |    block only with > pushes_in_flight unanswered)  |
          +-------------- reply: the shard's new weights <-----+
    driver: Window job (run(window)) per worker -> report -> RunMonitor;  eval: pull shards -> EvalActor

Workers drive themselves (raylab.algos.a3c.A3CWorker): the driver only hands each one a window (on Ray
raylab.remote.a3c.WINDOW_S seconds; in one process one segment, the workers taking turns) and collects its
report (steps, episodes, losses, per-stage seconds including the time blocked on the server), so it never
sits between a worker and the server. A worker that dies (its process killed, a
node lost) is replaced by a fresh one with new seeds, up to topology.max_actor_restarts times each (the
one restart policy, raylab.driver.loop); an exception raised inside a worker (a bug, a bad config) stops
the run. A crashed shard comes back (Ray) with its initial weights: every worker finishes its window, then
the whole server rolls back to the latest periodic checkpoint (raylab.topology.a3c_server), versions moving
on. The cost, counted: the updates since that checkpoint plus the windows cut short.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from raylab.algos.a3c import WorkerReport
from raylab.builders import build_parameter_servers
from raylab.config import RunConfig
from raylab.driver.loop import Call, Driver, Flow, first_line
from raylab.driver.resume import ResumeState
from raylab.envs.registry import EnvSpaces
from raylab.topology.a3c_server import ParameterServer, WaitAccount, finish_windows


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
        else:
            flow.replace_worker(driver, i, err)
        flow.next_window(driver, i)


class A3CTopology(Flow):
    def __init__(self, cfg: RunConfig, spaces: EnvSpaces, resume: ResumeState | None = None):
        self.cfg, self.spaces, self.resume = cfg, spaces, resume
        self.layout, self.bounds, self.initial = build_parameter_servers(cfg, spaces)

    def required_cpus(self) -> float:
        cfg = self.cfg
        return cfg.topology.num_workers * cfg.topology.worker_cpus + cfg.params.num_shards * cfg.params.shard_cpus

    def create(self, driver: Driver) -> dict[str, Any]:
        self.token = uuid.uuid4().hex[:8]
        self.server = ParameterServer(driver.backend, self.cfg, self.layout, self.bounds, self.initial, self.token)
        self.incarnations = [0 if self.resume is None else self.resume.incarnation] * self.cfg.topology.num_workers
        self.workers = [self.create_worker(driver, i) for i in range(self.cfg.topology.num_workers)]
        self.account, self.worker_restarts = WaitAccount(), 0
        self.idle: list[int] = []
        """Workers whose window ended while the server was down: they go on once it is restored."""
        return {
            **{f"server_{k}": s for k, s in enumerate(self.server.shards)},
            **{f"rollout_{i}": w for i, w in enumerate(self.workers)},
        }

    def create_worker(self, driver: Driver, i: int) -> Any:
        name = f"raylab-a3c-{self.token}-worker-{i}-{self.incarnations[i]}"
        return driver.backend.a3c_worker(i, self.server.shards, self.bounds, self.incarnations[i], name)

    def start(self, driver: Driver) -> None:
        if self.resume is not None:  # before any worker's first run pulls the weights
            shard_states = zip(self.server.shards, self.resume.learner["shards"], strict=True)
            driver.backend.get([s.load_state_dict(st) for s, st in shard_states])
        for i in range(len(self.workers)):
            self.next_window(driver, i)

    def next_window(self, driver: Driver, i: int) -> None:
        if driver.stopping:
            return
        if self.server.down:
            self.idle.append(i)
        else:
            ref = self.workers[i].window()
            driver.submit(Window(ref, "rollout", f"rollout_{i}", 0, flow=self, worker=i))

    def replace_worker(self, driver: Driver, i: int, err: BaseException) -> None:
        self.incarnations[i] += 1
        self.worker_restarts += 1
        driver.replaced("rollout", f"rollout_{i}", err, f"a3c worker {i}")
        print(f"raylab: a3c worker {i} died ({first_line(err)}); restarting it", flush=True)
        self.workers[i] = driver.actors[f"rollout_{i}"] = self.create_worker(driver, i)
        driver.backend.wait_ready([self.workers[i]], f"a3c worker {i}")

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

    def eval_weights(self, driver: Driver) -> Any | None:
        return self.server.weights_or_none(driver)

    def state(self, driver: Driver) -> dict[str, Any] | None:
        return self.server.state_or_none(driver)

    def drain(self, driver: Driver) -> None:
        """The workers' last windows (finish_windows); a shard that crashed while stopping is restored."""
        windows = {job.ref: job.worker for job in driver.in_flight(Window)}
        finish_windows(driver, self.workers, windows, lambda report: self.on_report(driver, report))
        lives = driver.backend.get([s.life() for s in self.server.shards])
        if self.server.down or any(life != driver.restarts.tag(f"server_{k}") for k, life in enumerate(lives)):
            self.server.restore(driver, self.workers)  # a shard crashed while stopping: not the run's weights

    def latest_weights(self, driver: Driver) -> Any:
        return driver.backend.put(self.server.weights(driver))

    def final_state(self, driver: Driver) -> dict[str, Any]:
        return self.server.state(driver)

    def extra(self, driver: Driver, state: dict[str, Any]) -> dict[str, Any]:
        summary = {**self.account.summary(), "server": self.server.summary(driver)}
        return {"a3c": {**summary, "worker_restarts": self.worker_restarts}}

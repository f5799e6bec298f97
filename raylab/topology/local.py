"""Serial topology: every component in one process, no Ray. The debugging tool, the fast test path and the
"sequential" side of the benchmarks. ``LocalTopology`` runs DQN (apex_dqn's components), ``LocalA3CTopology``
runs A3C (the a3c topology's workers in turn, against in-process parameter-server shards).

DQN:

repeat until a stop condition:
    for each RolloutWorker w (same seeds and epsilons as the Ray topology):
        chunk = w.sample()                 # rollout_length x envs_per_worker steps
        replay.add_chunk(chunk)            # n-step transitions
    while the samples-per-insert limiter allows:
        learner.update_many(replay.sample(batch_size) for _ in range(updates_per_call))  # prefetched
        replay.update_priorities(...)      # prioritized replay
        on publish: every worker loads the new weights (no copy when not newer)
    periodic greedy evaluation; report
the final checkpoint and evaluation use the evaluated weights that met stop.mean_return, if one did

PPO:
repeat until a stop condition:
    chunks = [w.sample() for each RolloutWorker w]   # every worker acts with the learner's current weights
    learner.update(chunks)                           # GAE, minibatch epochs; every worker loads the new weights
    periodic greedy evaluation; report

A3C:
repeat until a stop condition:
    for each A3CWorker w: w.run(max_segments=1)     # segment, gradient, push (applied at once), new weights
    periodic greedy evaluation; report
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from raylab.builders import (
    build_a3c_worker,
    build_evaluator,
    build_learner,
    build_parameter_server,
    build_parameter_servers,
    build_rate_limiter,
    build_replay,
    build_rollout_worker,
    replay_snapshots_to_load,
)
from raylab.config import RunConfig
from raylab.driver.monitor import RunMonitor, RunSummary
from raylab.driver.resume import ResumeState, resumed
from raylab.driver.stop import INTERRUPTED, interrupted_reason
from raylab.envs.registry import EnvSpaces
from raylab.params.link import LocalServerLink
from raylab.replay.snapshot import load_snapshot, save_snapshot, snapshot_path
from raylab.rollout.evaluator import Evaluator
from raylab.types import EvalResult, Weights


def run_serial(
    cfg: RunConfig,
    monitor: RunMonitor,
    evaluator: Evaluator,
    step: Callable[[], None],
    weights: Callable[[], Weights],
    state: Callable[[], dict[str, Any]],
) -> tuple[str, Weights, EvalResult | None]:
    """The loop every serial topology shares around its own ``step`` (one round of acting and learning):
    periodic greedy evaluation of ``weights()``, reports and periodic checkpoints of ``state()``, the stop
    check, Ctrl-C; then the final evaluation of the run's policy (the evaluated weights that met
    stop.mean_return, else the latest). Returns (stop reason, policy, final evaluation)."""
    monitor.start()
    stop: str | None = None
    evaluated = weights()
    try:
        while stop is None:
            step()
            if monitor.eval_due():
                monitor.eval_started()
                evaluated = weights()
                monitor.on_eval(
                    evaluator.evaluate(evaluated, cfg.eval.episodes, cfg.stop.mean_return, cfg.eval.confirm_episodes)
                )
            monitor.tick(state=state)
            stop = monitor.stop_reason()
    except KeyboardInterrupt as err:
        stop = interrupted_reason(err)
    monitor.stopped()
    policy = evaluated if monitor.target_reached() else weights()
    final_eval = None
    if cfg.eval.final_episodes and stop not in INTERRUPTED:
        final_eval = evaluator.evaluate(policy, cfg.eval.final_episodes)
    return stop, policy, final_eval


class LocalTopology:
    def __init__(self, cfg: RunConfig, spaces: EnvSpaces, resume: ResumeState | None = None):
        self.cfg = cfg
        self.resume = resume
        self.spaces = spaces
        self.limiter = build_rate_limiter(cfg)
        self.replay = build_replay(cfg, spaces)
        self.learner = build_learner(cfg, spaces)
        self.workers = [
            build_rollout_worker(cfg, spaces, i, *resumed(resume, i)) for i in range(cfg.topology.num_workers)
        ]
        if resume is not None:
            self.learner.load_state_dict(resume.learner)
            snapshot = replay_snapshots_to_load(cfg, spaces, resume)[0]
            if snapshot is not None:  # before the monitor: a refused snapshot writes nothing
                self.limiter.credit_restored(load_snapshot(snapshot, self.replay))
                print(f"raylab: replay restored from {snapshot.name}: {len(self.replay):,} transitions", flush=True)
        self.evaluator = build_evaluator(cfg, spaces)

    def _snapshot(self, checkpoint: Path) -> None:
        save_snapshot(snapshot_path(checkpoint.parent, 0, checkpoint.name), self.replay)

    def run(self) -> RunSummary:
        snapshot = self._snapshot if self.cfg.checkpoint.replay else None
        with RunMonitor(self.cfg, self.spaces, resume=self.resume, replay_snapshot=snapshot) as monitor:
            return self._run(monitor)

    def _run(self, monitor: RunMonitor) -> RunSummary:
        cfg, limiter, replay, learner = self.cfg, self.limiter, self.replay, self.learner
        batch, calls = cfg.learner.batch_size, cfg.learner.updates_per_call
        initial = learner.get_weights()
        for worker in self.workers:
            worker.set_weights(initial)

        def step() -> None:
            for worker in self.workers:
                if not limiter.can_insert(worker.rollout_length * worker.env.num_envs):
                    break  # the learner is behind: let it catch up first
                chunk, stats = worker.sample()
                replay.add_chunk(chunk)
                limiter.record_insert(chunk.size)
                monitor.on_rollout(stats, learner.version)
            while limiter.can_sample(batch * calls):
                limiter.record_sample(batch * calls)
                # a generator: the learner's prefetch thread draws batch k + 1 while batch k trains
                learner_stats = learner.update_many(replay.sample(batch) for _ in range(calls))
                if learner_stats.priorities is not None:
                    replay.update_priorities(learner_stats.priorities.keys, learner_stats.priorities.td_errors)
                monitor.on_learner(learner_stats)
                if learner_stats.published:
                    weights = learner.get_weights()
                    for worker in self.workers:
                        worker.set_weights(weights)
                if limiter.samples_per_insert == 0:
                    break  # unlimited: one call per round keeps acting and learning interleaved
            monitor.replay_size = len(replay)
            monitor.gauge({"replay/inserted": replay.writer.total})
            monitor.add_timings("replay", replay.interval_timings())

        stop, policy, final_eval = run_serial(
            cfg, monitor, self.evaluator, step, learner.get_weights, learner.state_dict
        )
        return monitor.finish(stop, learner.state_dict(), policy, final_eval, replay.stats())


class LocalA3CTopology:
    def __init__(self, cfg: RunConfig, spaces: EnvSpaces, resume: ResumeState | None = None):
        self.cfg = cfg
        self.resume = resume
        self.layout, self.bounds, initial = build_parameter_servers(cfg, spaces)
        self.servers = [build_parameter_server(cfg, params, k) for k, params in enumerate(initial)]
        if resume is not None:
            for server, state in zip(self.servers, resume.learner["shards"], strict=True):
                server.load_state_dict(state)
        self.link = LocalServerLink(self.servers, self.bounds)
        incarnation = 0 if resume is None else resume.incarnation
        self.workers = [
            build_a3c_worker(cfg, spaces, i, self.link, incarnation) for i in range(cfg.topology.num_workers)
        ]
        self.evaluator = build_evaluator(cfg, spaces)
        self.spaces = spaces

    def weights(self) -> Weights:
        update = self.link.pull()
        return self.layout.weights(update.version, update.params.copy())

    def run(self) -> RunSummary:
        with RunMonitor(self.cfg, self.spaces, resume=self.resume) as monitor:
            return self._run(monitor)

    def _run(self, monitor: RunMonitor) -> RunSummary:
        def step() -> None:
            for worker in self.workers:
                report = worker.run(max_segments=1)
                monitor.on_rollout(report.rollout_stats(), report.policy_version_last)
                monitor.on_learner(report.learner_stats())

        stop, policy, final_eval = run_serial(self.cfg, monitor, self.evaluator, step, self.weights, self.state_dict)
        return monitor.finish(stop, self.state_dict(), policy, final_eval)

    def state_dict(self) -> dict[str, Any]:
        return {
            "layout": self.layout.as_dict(),
            "bounds": self.bounds,
            "shards": [s.state_dict() for s in self.servers],
        }


class LocalPPOTopology:
    def __init__(self, cfg: RunConfig, spaces: EnvSpaces, resume: ResumeState | None = None):
        self.cfg = cfg
        self.resume = resume
        self.learner = build_learner(cfg, spaces)
        self.workers = [
            build_rollout_worker(cfg, spaces, i, *resumed(resume, i)) for i in range(cfg.topology.num_workers)
        ]
        if resume is not None:
            self.learner.load_state_dict(resume.learner)
        self.evaluator = build_evaluator(cfg, spaces)
        self.spaces = spaces

    def run(self) -> RunSummary:
        with RunMonitor(self.cfg, self.spaces, resume=self.resume) as monitor:
            return self._run(monitor)

    def _run(self, monitor: RunMonitor) -> RunSummary:
        learner = self.learner

        def step() -> None:
            chunks = []
            weights = learner.get_weights()  # every worker acts with the learner's current weights
            for worker in self.workers:
                worker.set_weights(weights)
                chunk, stats = worker.sample()
                chunks.append(chunk)
                monitor.on_rollout(stats, learner.version)
            monitor.on_learner(learner.update_many(chunks))

        stop, policy, final_eval = run_serial(
            self.cfg, monitor, self.evaluator, step, learner.get_weights, learner.state_dict
        )
        return monitor.finish(stop, learner.state_dict(), policy, final_eval)

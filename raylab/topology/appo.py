"""Asynchronous PPO on Ray: the learner trains on whatever chunks have arrived, never on a round.

    RolloutActor x N --chunk ref--> driver queue --(1..chunks_per_update refs)--> PPOLearnerActor (APPO)
          ^   (each worker always has one chunk in flight,                            |
          |    acting with the newest weights it was handed)                           |
          +-------------------- newest weights ref, on the worker's next chunk <------+
    EvalActor <- weights ref every eval interval

A worker is never held for the learner except by backpressure (a queue of more than 2 x chunks_per_update
arrived chunks parks it), and the learner never waits for the slowest worker: each call takes what is
queued. V-trace corrects for the policy having moved on; chunks more than algo.max_policy_lag updates old
are dropped by the learner and counted (``learner/dropped_chunks``).
"""

from __future__ import annotations

import ray
from ray import ObjectRef

from raylab.config import APPOConfig, RunConfig
from raylab.driver.monitor import RunMonitor, RunSummary
from raylab.driver.restarts import Restarts
from raylab.driver.resume import ResumeState, resumed
from raylab.driver.stop import INTERRUPTED, interrupted_reason
from raylab.envs.registry import EnvSpaces
from raylab.remote.clients import EvalClient, RolloutClient
from raylab.remote.ppo import PPOLearnerClient
from raylab.remote.runtime import learner_gpus, placement, run_on_ray, wait_ready
from raylab.types import Chunk, EvalResult, LearnerStats, RolloutStats, Weights

WAIT_TIMEOUT_S = 0.1


class APPOTopology:
    def __init__(self, cfg: RunConfig, spaces: EnvSpaces, resume: ResumeState | None = None):
        assert isinstance(cfg.algo, APPOConfig), f"topology=appo got algo={cfg.algo.name}"
        self.cfg = cfg
        self.resume = resume
        self.algo = cfg.algo
        self.spaces = spaces

    def required_cpus(self) -> float:
        return self.cfg.topology.num_workers * self.cfg.topology.worker_cpus + self.cfg.learner.num_cpus

    def run(self) -> RunSummary:
        return run_on_ray(self.cfg.ray, self.required_cpus(), self._run)

    def _run(self) -> RunSummary:
        with RunMonitor(self.cfg, self.spaces, resume=self.resume) as monitor:
            return self._drive(monitor)

    def _drive(self, monitor: RunMonitor) -> RunSummary:
        cfg, spaces, algo = self.cfg, self.spaces, self.algo
        learner = PPOLearnerClient.create(cfg, spaces, learner_gpus(cfg.learner))
        evaluator = EvalClient.create(cfg, spaces)
        workers = [
            RolloutClient.create(cfg, spaces, i, *resumed(self.resume, i)) for i in range(cfg.topology.num_workers)
        ]
        wait_ready([learner.ready(), evaluator.ready(), *[w.ready() for w in workers]], "raylab actors")
        monitor.record_placement(placement({
            "learner": learner.handle, "eval": evaluator.handle,
            **{f"rollout_{i}": w.handle for i, w in enumerate(workers)},
        }))  # fmt: skip

        resumed_version = 0 if self.resume is None else ray.get(learner.load_state_dict(self.resume.learner))
        weights_ref: ObjectRef[Weights] = learner.weights()
        evaluated_ref = weights_ref
        rollouts: dict[ObjectRef[RolloutStats], tuple[int, ObjectRef[Chunk], int]] = {}
        queue: list[ObjectRef[Chunk]] = []
        parked: list[int] = []
        update: tuple[ObjectRef[LearnerStats], ObjectRef[Weights], int] | None = None
        eval_job: tuple[ObjectRef[EvalResult], ObjectRef[Weights]] | None = None
        version = resumed_version
        queue_limit = 2 * algo.chunks_per_update
        restarts = Restarts()

        def submit(i: int) -> None:
            chunk_ref, stats_ref = workers[i].sample(weights_ref)
            rollouts[stats_ref] = (i, chunk_ref, restarts.tag(f"rollout_{i}"))

        monitor.start()
        for i in range(len(workers)):
            submit(i)
        stop: str | None = None
        try:
            while stop is None:
                if update is None and queue:
                    batch, queue = queue[: algo.chunks_per_update], queue[algo.chunks_per_update :]
                    update = (*learner.update(batch), restarts.tag("learner"))
                    while parked and len(queue) < queue_limit:
                        submit(parked.pop(0))
                if eval_job is None and monitor.eval_due():
                    monitor.eval_started()
                    eval_ref = evaluator.evaluate(
                        weights_ref, cfg.eval.episodes, cfg.stop.mean_return, cfg.eval.confirm_episodes
                    )
                    eval_job = (eval_ref, weights_ref)
                waiting: list[ObjectRef] = list(rollouts)
                if update is not None:
                    waiting.append(update[0])
                if eval_job is not None:
                    waiting.append(eval_job[0])
                ready, _ = ray.wait(waiting, num_returns=1, timeout=WAIT_TIMEOUT_S)
                for ref in ready:
                    if ref in rollouts:
                        i, chunk_ref, tag = rollouts.pop(ref)
                        try:
                            rollout = ray.get(ref)
                        except ray.exceptions.RayActorError:  # Ray restarts it; its chunk in flight is lost
                            if cfg.topology.max_actor_restarts == 0:
                                raise
                            restarts.failed("rollout", f"rollout_{i}", tag)
                            restarts.lost_chunks += 1
                            restarts.replied("rollout", f"rollout_{i}", workers[i].wait_back(f"rollout actor {i}"))
                            submit(i)
                            continue
                        restarts.replied("rollout", f"rollout_{i}", rollout.life)
                        monitor.on_rollout(rollout, version)
                        queue.append(chunk_ref)
                        if len(queue) < queue_limit:
                            submit(i)
                        else:
                            parked.append(i)
                    elif update is not None and ref == update[0]:
                        stats: LearnerStats | None = None
                        try:
                            stats = ray.get(ref)
                            died = restarts.replied("learner", "learner", stats.life)  # it died between calls
                        except ray.exceptions.RayActorError:
                            if cfg.topology.max_actor_restarts == 0:
                                raise
                            died = restarts.failed("learner", "learner", update[2])
                        if died:  # Ray restarted the learner: it resumes from its latest checkpoint
                            version, life = learner.restore_blocking(monitor.latest_learner_state(), version + 1)
                            restarts.replied("learner", "learner", life)
                            weights_ref = learner.weights()
                        if died or stats is None:
                            restarts.lost_chunks += algo.chunks_per_update  # the batch it was training on
                            update = None
                            continue
                        monitor.on_learner(stats)
                        if stats.published:
                            weights_ref, version = update[1], stats.version
                        update = None
                    elif eval_job is not None and ref == eval_job[0]:
                        monitor.on_eval(ray.get(ref))
                        evaluated_ref, eval_job = eval_job[1], None
                monitor.gauge(restarts.metrics())
                monitor.tick(state=learner.state_dict_or_none)
                stop = monitor.stop_reason()
        except KeyboardInterrupt as err:
            stop = interrupted_reason(err)
        monitor.stopped()
        if update is not None:
            monitor.on_learner(ray.get(update[0]))
            weights_ref = update[1]
        policy_ref = evaluated_ref if monitor.target_reached() else weights_ref
        final_eval = None
        if cfg.eval.final_episodes and stop not in INTERRUPTED:
            final_eval = ray.get(evaluator.evaluate(policy_ref, cfg.eval.final_episodes))
        policy: Weights = ray.get(policy_ref)
        state = learner.state_dict_blocking()
        peak_refs = [learner.peak_memory_bytes(), evaluator.peak_memory_bytes()]
        peak = sum(ray.get([*peak_refs, *[w.peak_memory_bytes() for w in workers]]))
        extra = {"appo": {"dropped_chunks": int(state.get("dropped_chunks", 0))}, "restarts": restarts.metrics()}
        return monitor.finish(stop, state, policy, final_eval, extra_peak_memory_bytes=peak, extra=extra)

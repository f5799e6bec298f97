"""Synchronous PPO on Ray: every round, each rollout actor returns one chunk made with the current weights;
the learner trains on all of them and the new weights go out with the next round.

    RolloutActor x N --chunk refs (not fetched by the driver)--> PPOLearnerActor.update(*chunks)
          ^                                                               |
          +---------------- new weights ref, next round <----------------+
    EvalActor <- weights ref every eval interval (runs beside training, never blocks a round)

The driver fetches only each chunk's small RolloutStats and the learner's stats. Weights are put once per
round by the learner's return and passed by ref to every worker.
"""

from __future__ import annotations

import ray
from ray import ObjectRef

from raylab.config import RunConfig
from raylab.driver.monitor import RunMonitor, RunSummary
from raylab.driver.restarts import Restarts
from raylab.driver.resume import ResumeState, resumed
from raylab.driver.stop import INTERRUPTED, interrupted_reason
from raylab.envs.registry import EnvSpaces
from raylab.remote.clients import EvalClient, RolloutClient
from raylab.remote.ppo import PPOLearnerClient
from raylab.remote.runtime import learner_gpus, placement, run_on_ray, wait_ready
from raylab.types import Chunk, EvalResult, LearnerStats, RolloutStats, Weights


class PPOTopology:
    def __init__(self, cfg: RunConfig, spaces: EnvSpaces, resume: ResumeState | None = None):
        self.cfg = cfg
        self.resume = resume
        self.spaces = spaces

    def required_cpus(self) -> float:
        return self.cfg.topology.num_workers * self.cfg.topology.worker_cpus + self.cfg.learner.num_cpus

    def run(self) -> RunSummary:
        return run_on_ray(self.cfg.ray, self.required_cpus(), self._run)

    def _run(self) -> RunSummary:
        with RunMonitor(self.cfg, self.spaces, resume=self.resume) as monitor:
            return self._drive(monitor)

    def _drive(self, monitor: RunMonitor) -> RunSummary:
        cfg, spaces = self.cfg, self.spaces
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
        eval_ref: ObjectRef[EvalResult] | None = None
        eval_weights = weights_ref
        version = resumed_version
        restarts = Restarts()
        monitor.start()
        stop: str | None = None
        try:
            while stop is None:
                sampled = [w.sample(weights_ref) for w in workers]
                for rollout in self._round(sampled, workers, weights_ref, restarts):
                    monitor.on_rollout(rollout, version)
                tag = restarts.tag("learner")
                stats_ref, weights_ref = learner.update([chunk for chunk, _ in sampled])
                learner_stats: LearnerStats | None = None
                try:
                    learner_stats = ray.get(stats_ref)
                    died = restarts.replied("learner", "learner", learner_stats.life)  # it died between calls
                except ray.exceptions.RayActorError:
                    if cfg.topology.max_actor_restarts == 0:
                        raise
                    died = restarts.failed("learner", "learner", tag)
                if died:  # Ray restarted the learner: it resumes from its latest checkpoint
                    version, life = learner.restore_blocking(monitor.latest_learner_state(), version + 1)
                    restarts.replied("learner", "learner", life)
                if died or learner_stats is None:
                    restarts.lost_chunks += len(workers)  # the round it was training on
                    weights_ref = learner.weights()
                    continue
                version = learner_stats.version
                monitor.on_learner(learner_stats)
                if eval_ref is not None and ray.wait([eval_ref], timeout=0)[0]:
                    monitor.on_eval(ray.get(eval_ref))
                    evaluated_ref, eval_ref = eval_weights, None
                if eval_ref is None and monitor.eval_due():
                    monitor.eval_started()
                    eval_weights = weights_ref
                    eval_ref = evaluator.evaluate(
                        weights_ref, cfg.eval.episodes, cfg.stop.mean_return, cfg.eval.confirm_episodes
                    )
                monitor.gauge(restarts.metrics())
                monitor.tick(state=learner.state_dict_or_none)
                stop = monitor.stop_reason()
        except KeyboardInterrupt as err:
            stop = interrupted_reason(err)
        monitor.stopped()
        policy_ref = evaluated_ref if monitor.target_reached() else weights_ref
        final_eval = None
        if cfg.eval.final_episodes and stop not in INTERRUPTED:
            final_eval = ray.get(evaluator.evaluate(policy_ref, cfg.eval.final_episodes))
        policy: Weights = ray.get(policy_ref)
        state = learner.state_dict_blocking()
        peak = sum(
            ray.get(
                [learner.peak_memory_bytes(), evaluator.peak_memory_bytes(), *[w.peak_memory_bytes() for w in workers]]
            )
        )
        extra = {"restarts": restarts.metrics()}
        return monitor.finish(stop, state, policy, final_eval, extra_peak_memory_bytes=peak, extra=extra)

    def _round(
        self,
        sampled: list[tuple[ObjectRef[Chunk], ObjectRef[RolloutStats]]],
        workers: list[RolloutClient],
        weights_ref: ObjectRef[Weights],
        restarts: Restarts,
    ) -> list[RolloutStats]:
        """The round's rollout stats. A rollout actor that crashed (Ray restarts it) is waited for and
        samples its chunk again with the same weights, so the round stays whole and on-policy; only its
        chunk in flight is lost. ``sampled`` is updated in place."""
        out = []
        for i, (_, stats_ref) in enumerate(sampled):
            name = f"rollout_{i}"
            tag = restarts.tag(name)  # the round was sent just before this call
            while True:
                try:
                    stats: RolloutStats = ray.get(stats_ref)
                    restarts.replied("rollout", name, stats.life)
                    out.append(stats)
                    break
                except ray.exceptions.RayActorError:
                    if self.cfg.topology.max_actor_restarts == 0:
                        raise
                    restarts.failed("rollout", name, tag)
                    restarts.lost_chunks += 1
                    restarts.replied("rollout", name, workers[i].wait_back(f"rollout actor {i}"))
                    tag = restarts.tag(name)
                    sampled[i] = workers[i].sample(weights_ref)
                    stats_ref = sampled[i][1]
        return out

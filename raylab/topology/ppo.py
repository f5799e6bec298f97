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
from raylab.driver.resume import ResumeState, resumed
from raylab.driver.stop import INTERRUPTED, interrupted_reason
from raylab.envs.registry import EnvSpaces
from raylab.remote.clients import EvalClient, RolloutClient
from raylab.remote.ppo import PPOLearnerClient
from raylab.remote.runtime import learner_gpus, placement, run_on_ray, wait_ready
from raylab.types import EvalResult, LearnerStats, Weights


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
        cfg, spaces = self.cfg, self.spaces
        monitor = RunMonitor(cfg, spaces, resume=self.resume)
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
        monitor.start()
        stop: str | None = None
        try:
            while stop is None:
                sampled = [w.sample(weights_ref) for w in workers]
                stats_ref, weights_ref = learner.update([chunk for chunk, _ in sampled])
                for rollout in ray.get([stats for _, stats in sampled]):
                    monitor.on_rollout(rollout, version)
                learner_stats: LearnerStats = ray.get(stats_ref)
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
                monitor.tick(state=learner.state_dict_blocking)
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
        return monitor.finish(stop, state, policy, final_eval, extra_peak_memory_bytes=peak)

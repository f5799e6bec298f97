"""RunMonitor: what every topology's driver loop reports to, and what writes the run's outputs.

A topology moves data; the monitor counts it and composes the pieces that act on the counts:
``Reporter`` (raylab.driver.reporting: metrics rows, loggers, the evaluation schedule, when to stop, the stop
on a non-finite loss), ``CheckpointManager`` (raylab.driver.checkpoints: periodic checkpoints and their
rotation, final.pt, the state a crashed learner restarts from) and ``benchmark_report``
(raylab.driver.report: benchmark_metrics.json).
"""

from __future__ import annotations

import datetime as dt
import resource
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from raylab import failures
from raylab.config import RunConfig
from raylab.config.policies import policy_map
from raylab.driver.best import BestOutcome
from raylab.driver.checkpoints import CheckpointManager, ReplaySnapshot
from raylab.driver.outputs import RunOutputs
from raylab.driver.progress import Progress
from raylab.driver.report import RunFacts, RunSummary, benchmark_report, eval_section
from raylab.driver.reporting import Reporter
from raylab.driver.resources import ResourceSampler
from raylab.driver.resume import ResumeState, set_rng_state
from raylab.metrics.loggers import Logger, VideoLogger, build_loggers
from raylab.types import EnvSpaces, EpisodeVideo, EvalResult, LearnerStats, RolloutStats, Weights

__all__ = ["RunMonitor", "RunSummary"]


class RunMonitor:
    """A context manager: ``with RunMonitor(...) as monitor:`` closes the resource sampler's thread, the loggers
    and metrics.jsonl when the block ends, whether the run finished or raised."""

    def __init__(
        self,
        cfg: RunConfig,
        spaces: EnvSpaces,
        loggers: list[Logger] | None = None,
        resume: ResumeState | None = None,
        replay_snapshot: ReplaySnapshot | None = None,
        actor_counts: dict[str, int] | None = None,
        in_process: bool = False,
    ):
        """``replay_snapshot`` (DQN topologies with checkpoint.replay): writes every replay shard's snapshot
        for a checkpoint's path, before that checkpoint is written (raylab.driver.checkpoints)."""
        self.cfg = cfg
        pmap = policy_map(cfg, spaces)
        self.progress = Progress(spaces.frames_per_step, pmap.names if pmap.several else ())
        self.progress.actor_counts = dict(actor_counts or {})
        self.in_process = in_process
        self.resources = ResourceSampler()  # its thread starts with start()
        self.start_time = dt.datetime.now()
        self.placement: dict[str, str] = {}
        """Ray topologies: {actor name: node id} (where each actor ran)."""
        self.resumed_from: str | None = None
        self.outputs = RunOutputs(cfg.run_dir)
        try:
            self.outputs.write_config(cfg.to_dict())
            if loggers is None:
                loggers = build_loggers(cfg.logger, cfg.run_dir, cfg.to_dict(), cfg.stop.env_steps)
            self.reporter = Reporter(
                cfg.stop, cfg.eval, cfg.logger.report_every_seconds, self.progress, self.outputs, loggers,
                self.resources,
            )  # fmt: skip
            self.checkpointer = CheckpointManager(
                cfg.checkpoint, cfg.to_dict(), self.outputs, self.progress, resume, replay_snapshot, list(cfg.policies)
            )
            if resume is not None:
                self._restore(resume)
        except BaseException:  # no monitor to close: nothing it opened may stay open
            for logger in loggers or []:
                logger.close()
            self.outputs.close()
            raise

    def _restore(self, resume: ResumeState) -> None:
        """Continue the counters, the worker accounts and the driver's RNG (the checkpoint rotation continues
        in the CheckpointManager)."""
        p = self.progress
        p.env_steps, p.updates, p.episodes, p.seconds_offset = (
            resume.env_steps, resume.updates, resume.episodes, resume.train_seconds,
        )  # fmt: skip
        for name, counters in resume.policies.items():
            if name in p.policies:
                p.policies[name].restore(counters)
        for worker_id, steps in resume.workers.items():
            p.workers[worker_id] = {"chunks": 0, "env_steps": steps, "policy_version_first": 0}
        if resume.rng is not None:
            set_rng_state(resume.rng)
        if resume.history is not None:
            p.restore_history(resume.history)
        aside = self.outputs.set_aside_rows_after(resume.env_steps, resume.train_seconds, resume.path.stem)
        if aside is not None:
            print(f"raylab: the metrics rows after {resume.path.name} went to {aside.name}", flush=True)
        self.resumed_from = str(resume.path)
        print(f"raylab: resuming from {resume.path} at {resume.env_steps:,} env steps", flush=True)

    @property
    def replay_size(self) -> int | None:
        """Transitions in the replay (DQN): the topology sets it; reported as replay/size."""
        return self.reporter.replay_size

    @replay_size.setter
    def replay_size(self, size: int | None) -> None:
        self.reporter.replay_size = size

    # -- events from the topology --------------------------------------------------------------------------
    def start(self) -> None:
        """Call when every component is up: training time and throughput count from here."""
        self.start_time = dt.datetime.now()
        failures.training_started()
        self.progress.restart_clock()
        self.reporter.start()
        self.checkpointer.start()
        self.resources.start()

    def stopped(self) -> None:
        """Call when the training loop ends: training time, the final rates and resource use stop counting
        here (the final evaluation, draining and writing are not training)."""
        self.progress.stop_clock()
        self.resources.stop()

    def on_rollout(self, stats: RolloutStats, learner_version: int, policy_versions: Sequence[int] = ()) -> None:
        """``policy_versions``: with several policies, each policy's learner version (its lag's reference)."""
        self.progress.add_rollout(stats, learner_version, policy_versions)

    def add_time(self, stage: str, seconds: float) -> None:
        """Seconds the driver spent in ``stage`` (e.g. waiting on actors), reported per row as timing/<stage>."""
        self.progress.add_time(stage, seconds)

    def add_timings(self, actor: str, timings: dict[str, float]) -> None:
        """Seconds per stage of ``actor`` (e.g. "replay": {"add_s": ...}), reported as timing/<actor>/<stage>."""
        self.progress.add_timings(actor, timings)

    def gauge(self, values: dict[str, float]) -> None:
        """Set values reported as they stand in the next row (queue depths, transitions inserted)."""
        self.progress.gauges.update(values)

    def on_learner(self, stats: LearnerStats, policy: str | None = None) -> None:
        """Count a learner call (``policy``: whose, with several policies); a NaN or infinite loss stops the
        run (NonFiniteLossError) after one last metrics row, before any checkpoint could store the diverged
        weights."""
        self.reporter.on_learner(stats, self.checkpointer.last_periodic, policy)

    def on_eval(self, result: EvalResult) -> None:
        self.progress.add_eval(result)
        if result.video is not None:  # eval.video: this evaluation's recorded episode, named by its env steps
            self._keep_video(result.video, f"eval_{self.progress.env_steps}", "eval/video")

    def _keep_video(self, video: EpisodeVideo, name: str, key: str) -> Path:
        """The recorded episode into videos/<name> and, as ``key`` of the next metrics row, to every logger that
        takes videos (W&B)."""
        path = self.outputs.save_video(name, video.data, video.fmt)
        for logger in self.reporter.loggers:
            if isinstance(logger, VideoLogger):
                logger.video(key, path)
        return path

    def record_placement(self, actors: dict[str, str]) -> None:
        """Where the actors run (benchmark_metrics.json's ``placement``); says so on the console."""
        self.placement = dict(actors)
        nodes = len(set(actors.values()))
        print(f"raylab: {len(actors)} actors on {nodes} Ray node{'s' if nodes != 1 else ''}", flush=True)

    # -- decisions -----------------------------------------------------------------------------------------
    def eval_due(self) -> bool:
        return self.reporter.eval_due()

    def eval_started(self) -> None:
        self.reporter.eval_started()

    def stop_reason(self) -> str | None:
        return self.reporter.stop_reason()

    def tick(self, force_report: bool = False, state: Callable[[], dict[str, Any] | None] | None = None) -> None:
        """Cheap; call every loop iteration. Updates live progress and writes a row when one is due.

        ``state`` returns the topology's full training state (None: not available now, e.g. the learner is
        restarting); it is called only when a periodic checkpoint (checkpoint.every_seconds) is due.
        """
        if state is not None:
            self.checkpointer.maybe_save(state)
        self.reporter.tick(force_report)

    def save_periodic_checkpoint(self, learner_state: dict[str, Any]) -> str:
        """checkpoints/step_<env steps>.pt (learner state, counters, config); keeps checkpoint.keep of them."""
        return self.checkpointer.save_periodic(learner_state)

    def latest_learner_state(self) -> dict[str, Any] | None:
        """The learner state a crashed learner (or A3C's server) restarts from (CheckpointManager's)."""
        return self.checkpointer.latest_learner_state()

    # -- the end -------------------------------------------------------------------------------------------
    def finish(
        self,
        stop_reason: str,
        learner_state: dict[str, Any],
        policy: Weights | list[Weights],
        final_eval: EvalResult | None,
        extra_peak_memory_bytes: int = 0,
        extra: dict[str, Any] | None = None,
        best: BestOutcome | None = None,
    ) -> RunSummary:
        """Final report row, checkpoints and benchmark_metrics.json; closes the loggers.

        ``extra`` adds topology-specific sections (a3c: per-worker wait, server apply times, restarts).
        ``policy``: the newest weights (final.pt, with ``learner_state``, the full training state, for
        resuming), ``final_eval`` their final evaluation. ``best``: the best policy evaluated (best.pt), whose
        final evaluation is the run's result (``eval``; the newest weights' is ``eval_newest``).
        """
        p = self.progress
        self.stopped()  # in case the topology did not say so
        train_seconds = p.seconds
        # final_fps is the last full report interval's rate: the forced last row may cover a fraction of a
        # second, too short to mean much.
        last_full_rates = dict(p.last_rates)
        tail_is_short = p.seconds_since_row() < 0.5 * self.cfg.logger.report_every_seconds
        # final.pt's replay snapshot goes before the last row, which then reports its seconds
        # (timing/replay/snapshot_s): written after it, they would be in no row
        self.checkpointer.snapshot_final()
        result = best.final_eval if best is not None else final_eval
        videos = {"final": result, "final_newest": final_eval if final_eval is not result else None}
        for name, scored in videos.items():  # eval.video: the final evaluations' episodes, in the last row
            if scored is not None and scored.video is not None:
                self._keep_video(scored.video, f"eval_{name}", f"eval/video_{name}")
        self.reporter.tick(force_report=True)
        final_rates = last_full_rates if (last_full_rates and tail_is_short) else p.last_rates
        end_time = dt.datetime.now()
        self.checkpointer.save_final(learner_state, policy)
        if best is not None:
            self.checkpointer.save_best(best.policy, best.record)
        process_peaks = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 + extra_peak_memory_bytes
        facts = RunFacts(
            stop_reason=stop_reason,
            start_time=self.start_time,
            end_time=end_time,
            train_seconds=train_seconds,
            final_rates=final_rates,
            usage=self.resources.stop(),
            process_peaks=process_peaks,
            resumed_from=self.resumed_from,
            placement=self.placement,
            in_process=self.in_process,
            checkpoints=self.checkpointer.files(),
        )
        extra = {**(extra or {}), **_best_sections(best, final_eval)}
        if p.policies:
            extra["policies"] = self._policies_section(result, extra)
        benchmark = benchmark_report(self.cfg, p, facts, result, extra)
        self.outputs.write_benchmark(benchmark)
        self.close()
        return RunSummary(
            run_dir=str(self.outputs.run_dir),
            stop_reason=stop_reason,
            env_steps=p.env_steps,
            updates=p.updates,
            train_seconds=train_seconds,
            eval_return_mean=result.mean if result else None,
            benchmark=benchmark,
        )

    def _policies_section(self, final_eval: EvalResult | None, extra: dict[str, Any]) -> dict[str, Any]:
        """Several policies: benchmark_metrics.json's ``policies``, each one's counters, final evaluation and
        what the topology adds (its learner's restarts)."""
        policies = {name: track.summary() for name, track in self.progress.policies.items()}
        for name, returns in ((final_eval.policies or {}) if final_eval else {}).items():
            policies[name]["final_eval_return_mean"] = float(returns.mean()) if len(returns) else None
        for name, more in extra.get("policies", {}).items():
            policies[name].update(more)
        return policies

    def close(self) -> None:
        """Stop the sampler, close the loggers and metrics.jsonl; safe to call more than once."""
        self.resources.stop()
        self.reporter.close()
        self.outputs.close()

    def __enter__(self) -> RunMonitor:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _best_sections(best: BestOutcome | None, newest_eval: EvalResult | None) -> dict[str, Any]:
    """benchmark_metrics.json's ``best`` (the evaluation that chose best.pt's policy; null: none was
    evaluated) and ``eval_newest`` (final.pt's policy's final evaluation, beside ``eval``: best.pt's)."""
    return {"best": best.record.to_dict() if best else None, "eval_newest": eval_section(newest_eval)}

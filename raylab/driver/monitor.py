"""RunMonitor: what every topology's driver loop reports to, and what writes the run's outputs.

A topology moves data; the monitor counts it, decides when to evaluate, report and stop, and at the end
writes the checkpoint and benchmark_metrics.json (seed 003's format plus throughput and eval).
"""

from __future__ import annotations

import datetime as dt
import math
import resource
import time
import weakref
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any, ClassVar

import numpy as np
import torch

from raylab.config import A3CConfig, RunConfig
from raylab.driver.outputs import RunOutputs
from raylab.driver.progress import Progress
from raylab.driver.resources import ResourceSampler
from raylab.driver.resume import ResumeState, rng_state, set_rng_state
from raylab.driver.stop import StopCondition
from raylab.envs.registry import EnvSpaces
from raylab.errors import NonFiniteLossError
from raylab.learner.checkpoint import load_checkpoint
from raylab.metrics.loggers import Logger, build_loggers
from raylab.replay.buffer import ReplayStats
from raylab.types import EvalResult, LearnerStats, RolloutStats, Weights


def actor_counts(cfg: RunConfig) -> dict[str, int]:
    """How many actors of each type share the stage timings (the share denominators), so that a share is of
    one actor's own timeline: its stages plus its wait add up to about 1. The serial topology runs them in
    turn in one process, with the same accounting (a worker waits while the others and the learner run)."""
    workers = cfg.topology.num_workers
    counts = {"rollout": workers, "learner": 1, "replay": 1, "driver": 1}
    if cfg.topology.name == "apex_dqn":
        counts["replay"] = cfg.replay.num_shards
    if isinstance(cfg.algo, A3CConfig):  # each A3C worker is its own learner; the server is params.num_shards
        counts.update(learner=workers, server=cfg.params.num_shards)
    return counts


@dataclass
class RunSummary:
    run_dir: str
    stop_reason: str
    env_steps: int
    updates: int
    train_seconds: float
    eval_return_mean: float | None
    benchmark: dict[str, Any]


class RunMonitor:
    _open: ClassVar[weakref.WeakSet[RunMonitor]] = weakref.WeakSet()
    """Monitors not closed yet: ``raylab.train.run`` closes them when a run raises."""

    def __init__(
        self, cfg: RunConfig, spaces: EnvSpaces, loggers: list[Logger] | None = None, resume: ResumeState | None = None
    ):
        self.cfg = cfg
        self.outputs = RunOutputs(cfg.run_dir)
        self.outputs.write_config(cfg.to_dict())
        self.progress = Progress(spaces.frames_per_step)
        self.progress.actor_counts = actor_counts(cfg)
        self.stop = StopCondition(cfg.stop)
        if loggers is None:
            loggers = build_loggers(cfg.logger, cfg.run_dir, cfg.to_dict(), cfg.stop.env_steps)
        self.loggers = loggers
        self.start_time = dt.datetime.now()
        self._last_report = 0.0
        self._last_eval_time = 0.0
        self._last_eval_steps = 0
        self._last_progress = 0.0
        self._last_checkpoint = 0.0
        self.checkpoints: list[str] = []
        """Periodic checkpoints written so far (file names under checkpoints/), oldest first."""
        self.replay_size: int | None = None
        self.placement: dict[str, str] = {}
        """Ray topologies: {actor name: node id} (where each actor ran)."""
        self.resumed_from: str | None = None
        self.replay_snapshot: Callable[[str], None] | None = None
        """DQN topologies with checkpoint.replay: write every replay shard's snapshot for a checkpoint name
        (raylab.replay.snapshot). Called before the checkpoint itself is written."""
        self.resources = ResourceSampler()
        self._resume = resume
        if resume is not None:
            self._restore(resume)
        RunMonitor._open.add(self)

    def _restore(self, resume: ResumeState) -> None:
        """Continue the counters, the worker accounts, the checkpoint rotation and the driver's RNG."""
        p = self.progress
        p.env_steps, p.updates, p.episodes, p.seconds_offset = (
            resume.env_steps, resume.updates, resume.episodes, resume.train_seconds,
        )  # fmt: skip
        for worker_id, steps in resume.workers.items():
            p.workers[worker_id] = {"chunks": 0, "env_steps": steps, "policy_version_first": 0}
        self.checkpoints = sorted(f.name for f in self.outputs.checkpoint_dir.glob("step_*.pt"))
        if resume.rng is not None:
            set_rng_state(resume.rng)
        self.resumed_from = str(resume.path)
        print(f"raylab: resuming from {resume.path} at {resume.env_steps:,} env steps", flush=True)

    # -- events from the topology --------------------------------------------------------------------------
    def start(self) -> None:
        """Call when every component is up: training time and throughput count from here."""
        self.start_time = dt.datetime.now()
        self.progress.restart_clock()
        self._last_report = self._last_eval_time = self._last_checkpoint = time.perf_counter()
        self.resources.start()

    def stopped(self) -> None:
        """Call when the training loop ends: training time, the final rates and resource use stop counting
        here (the final evaluation, draining and writing are not training)."""
        self.progress.stop_clock()
        self.resources.stop()

    def on_rollout(self, stats: RolloutStats, learner_version: int) -> None:
        self.progress.add_rollout(stats, learner_version)

    def add_time(self, stage: str, seconds: float) -> None:
        """Seconds the driver spent in ``stage`` (e.g. waiting on actors), reported per row as timing/<stage>."""
        self.progress.add_time(stage, seconds)

    def add_timings(self, actor: str, timings: dict[str, float]) -> None:
        """Seconds per stage of ``actor`` (e.g. "replay": {"add_s": ...}), reported as timing/<actor>/<stage>."""
        self.progress.add_timings(actor, timings)

    def gauge(self, values: dict[str, float]) -> None:
        """Set values reported as they stand in the next row (queue depths, transitions inserted)."""
        self.progress.gauges.update(values)

    def on_learner(self, stats: LearnerStats) -> None:
        """Count a learner call; a NaN or infinite loss stops the run (NonFiniteLossError) after one last
        metrics row, before any checkpoint could store the diverged weights."""
        self.progress.add_learner(stats)
        bad = {k: v for k, v in stats.metrics.items() if k.endswith("loss") and not math.isfinite(v)}
        if bad:
            self.tick(force_report=True)
            key, value = next(iter(bad.items()))
            last = (
                f"the last good checkpoint is {self.outputs.checkpoint_dir / self.checkpoints[-1]}"
                if self.checkpoints
                else "no checkpoint was written yet (checkpoint.every_seconds keeps periodic ones)"
            )
            raise NonFiniteLossError(
                f"learner {key} became {value} by update {self.progress.updates:,} (env step "
                f"{self.progress.env_steps:,}): the run stopped without writing final.pt; {last}; lower learner.lr "
                f"or set learner.max_grad_norm"
            )

    def on_eval(self, result: EvalResult) -> None:
        self.progress.add_eval(result)

    def record_placement(self, actors: dict[str, str]) -> None:
        """Where the actors run (benchmark_metrics.json's ``placement``); says so on the console."""
        self.placement = dict(actors)
        nodes = len(set(actors.values()))
        print(f"raylab: {len(actors)} actors on {nodes} Ray node{'s' if nodes != 1 else ''}", flush=True)

    # -- decisions -----------------------------------------------------------------------------------------
    def eval_due(self) -> bool:
        ev = self.cfg.eval
        if ev.every_seconds is not None and time.perf_counter() - self._last_eval_time >= ev.every_seconds:
            return True
        return ev.every_env_steps is not None and self.progress.env_steps - self._last_eval_steps >= ev.every_env_steps

    def eval_started(self) -> None:
        self._last_eval_time = time.perf_counter()
        self._last_eval_steps = self.progress.env_steps

    def target_reached(self) -> bool:
        """The last greedy evaluation met stop.mean_return (its weights are then the run's policy)."""
        last, target = self.progress.last_eval, self.cfg.stop.mean_return
        return last is not None and target is not None and last.mean >= target

    def stop_reason(self) -> str | None:
        last = self.progress.last_eval
        p = self.progress
        return self.stop.reason(p.env_steps, p.seconds, last.mean if last else None, p.returns)

    def tick(self, force_report: bool = False, state: Callable[[], dict[str, Any] | None] | None = None) -> None:
        """Cheap; call every loop iteration. Updates live progress and writes a row when one is due.

        ``state`` returns the topology's full training state (None: not available now, e.g. the learner is
        restarting); it is called only when a periodic checkpoint (checkpoint.every_seconds) is due.
        """
        now = time.perf_counter()
        every = self.cfg.checkpoint.every_seconds
        if state is not None and every is not None and now - self._last_checkpoint >= every:
            self._last_checkpoint = now
            learner_state = state()
            if learner_state is not None:
                self.save_periodic_checkpoint(learner_state)
        if now - self._last_progress >= 0.2:
            self._last_progress = now
            p = self.progress
            postfix: dict[str, float] = {
                "upd/s": round(p.last_rates.get("throughput/updates_per_s", 0.0)),
                "replay": self.replay_size or 0,
            }
            if p.returns:
                postfix["ret"] = round(float(np.mean(p.returns)), 1)
            if p.last_eval is not None:
                postfix["eval"] = round(p.last_eval.mean, 1)
            for logger in self.loggers:
                logger.progress(p.env_steps, postfix)
        if force_report or now - self._last_report >= self.cfg.logger.report_every_seconds:
            self._last_report = now
            row = self.progress.row(self.replay_size)
            row["resources/memory_gb"] = self.resources.last_memory_gb
            row["resources/cpu_percent"] = self.resources.last_cpu_percent
            self.outputs.append_metrics(row)
            for logger in self.loggers:
                logger.log(row)

    def save_periodic_checkpoint(self, learner_state: dict[str, Any]) -> str:
        """checkpoints/step_<env steps>.pt (learner state, counters, config); keeps checkpoint.keep of them."""
        p = self.progress
        name = f"step_{p.env_steps:012d}.pt"
        self._snapshot_replay(name)
        self.outputs.save_checkpoint(
            name,
            {
                "learner": learner_state,
                "counters": {"env_steps": p.env_steps, "updates": p.updates, "episodes": p.episodes},
                "train_seconds": p.seconds,
                "workers": self._worker_steps(),
                "rng": rng_state(),
                "config": self.cfg.to_dict(),
            },
        )
        if name not in self.checkpoints:
            self.checkpoints.append(name)
        while len(self.checkpoints) > self.cfg.checkpoint.keep:
            old = self.checkpoints.pop(0)
            (self.outputs.checkpoint_dir / old).unlink(missing_ok=True)
            for snapshot in self.outputs.checkpoint_dir.glob(f"replay_*_{old.removesuffix('.pt')}.npz"):
                snapshot.unlink(missing_ok=True)
        return name

    def _snapshot_replay(self, checkpoint_name: str) -> None:
        if self.replay_snapshot is not None:
            start = time.perf_counter()
            self.replay_snapshot(checkpoint_name)
            self.add_time("replay/snapshot_s", time.perf_counter() - start)

    def _worker_steps(self) -> dict[str, int]:
        return {str(k): int(v["env_steps"]) for k, v in self.progress.workers.items()}

    def latest_learner_state(self) -> dict[str, Any] | None:
        """The learner state a crashed learner (or A3C's server) restarts from: the newest periodic
        checkpoint's, or the resumed checkpoint's when that is newer (a run resumed from final.pt next to
        older step_*.pt files); None when there is neither, and it starts fresh."""
        latest = load_checkpoint(self.outputs.checkpoint_dir / self.checkpoints[-1]) if self.checkpoints else None
        resume = self._resume
        if resume is not None and (latest is None or latest["counters"]["env_steps"] < resume.env_steps):
            return resume.learner
        return latest["learner"] if latest is not None else None

    # -- the end -------------------------------------------------------------------------------------------
    def finish(
        self,
        stop_reason: str,
        learner_state: dict[str, Any],
        policy: Weights,
        final_eval: EvalResult | None,
        replay_stats: ReplayStats | None = None,
        extra_peak_memory_bytes: int = 0,
        extra: dict[str, Any] | None = None,
    ) -> RunSummary:
        """Final report row, checkpoint and benchmark_metrics.json; closes the loggers.

        ``extra`` adds topology-specific sections (a3c: per-worker wait, server apply times, restarts).
        ``policy`` is the run's result: the weights that met stop.mean_return when that stopped the run,
        the learner's last weights otherwise. ``learner_state`` is the full training state, for resuming.
        """
        p = self.progress
        self.stopped()  # in case the topology did not say so
        train_seconds = p.seconds
        # final_fps is the last full report interval's rate: the forced last row may cover a fraction of a
        # second, too short to mean much.
        last_full_rates = dict(p.last_rates)
        tail_is_short = p.seconds_since_row() < 0.5 * self.cfg.logger.report_every_seconds
        self.tick(force_report=True)
        final_rates = last_full_rates if (last_full_rates and tail_is_short) else p.last_rates
        end_time = dt.datetime.now()
        self._snapshot_replay("final.pt")
        self.outputs.save_checkpoint(
            "final.pt",
            {
                "learner": learner_state,
                "policy": {
                    "version": policy.version,
                    "params": {k: torch.from_numpy(np.array(v)) for k, v in policy.params.items()},
                },
                "counters": {"env_steps": p.env_steps, "updates": p.updates, "episodes": p.episodes},
                "train_seconds": train_seconds,
                "workers": self._worker_steps(),
                "rng": rng_state(),
                "config": self.cfg.to_dict(),
            },
        )
        frames = p.env_steps * p.frames_per_step
        process_peaks = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 + extra_peak_memory_bytes
        usage = self.resources.stop()
        returns = list(p.returns)
        losses = {k: v for k, v in p.learner_metrics.items() if k.endswith("loss") or k == "entropy"}
        benchmark: dict[str, Any] = {
            "training_mode": "sequential" if self.cfg.topology.name == "local" else "parallel",
            "topology": self.cfg.topology.name,
            "start_time": self.start_time.isoformat(timespec="seconds"),
            "end_time": end_time.isoformat(timespec="seconds"),
            "duration_hours": train_seconds / 3600.0,
            "total_timesteps": p.env_steps,
            "total_updates": p.updates,
            "average_fps": frames / max(train_seconds, 1e-9),
            "final_fps": final_rates.get("throughput/env_frames_per_s", 0.0),
            "performance": {
                "initial_reward": float(np.mean(p.first_returns)) if p.first_returns else None,
                "final_reward": float(np.mean(returns[-10:])) if returns else None,
                "best_reward": p.best_window_mean if np.isfinite(p.best_window_mean) else None,
                "average_reward_last_100_episodes": float(np.mean(returns)) if returns else None,
                "reward_std_last_100_episodes": float(np.std(returns)) if returns else None,
            },
            "timesteps_per_hour": p.env_steps / max(train_seconds, 1e-9) * 3600.0,
            "final_losses": losses,
            "resource_usage": {
                # the whole process tree at one instant (sampled each second); falls back to the sum of
                # each process's own peak when the run was too short to sample
                "peak_memory_gb": usage.peak_memory_gb if usage.samples > 2 else process_peaks / 2**30,
                "sum_of_process_peaks_gb": process_peaks / 2**30,
                **{k: v for k, v in asdict(usage).items() if k != "peak_memory_gb"},
            },
            "throughput": {
                "env_frames_per_s": frames / max(train_seconds, 1e-9),
                "agent_steps_per_s": p.env_steps / max(train_seconds, 1e-9),
                "learner_updates_per_s": p.updates / max(train_seconds, 1e-9),
            },
            "eval": {
                "return_mean": final_eval.mean if final_eval else None,
                "return_std": final_eval.std if final_eval else None,
                "episodes": int(final_eval.returns.size) if final_eval else 0,
                "policy_version": final_eval.version if final_eval else None,
            },
            "evals": p.evals,
            "workers": {str(k): v for k, v in sorted(p.workers.items())},
            "replay": None
            if replay_stats is None
            else {
                "size": replay_stats.size,
                "capacity": replay_stats.capacity,
                "inserted": replay_stats.inserted,
                "sampled": replay_stats.sampled,
                "inserted_by_worker": {str(k): v for k, v in sorted(replay_stats.inserted_by_worker.items())},
                "nbytes": replay_stats.nbytes,
                "bytes_per_transition": round(replay_stats.bytes_per_transition, 1),
                "frames": replay_stats.frames,
                "frames_per_transition": round(replay_stats.frames_per_transition, 4),
                "shards": replay_stats.shards,
                "priority_updates": replay_stats.priority_updates,
                "stale_priority_updates": replay_stats.stale_priority_updates,
                "timings": replay_stats.timings,
            },
            "stop_reason": stop_reason,
            "resumed_from": self.resumed_from,
            "episodes": p.episodes,
            "episode_extras": {k: float(np.mean(v)) for k, v in p.extras.items() if v},
            "env_restarts": p.env_restarts,
            "placement": {"nodes": len(set(self.placement.values())), "actors": self.placement}
            if self.placement
            else None,
            "checkpoints": [*self.checkpoints, "final.pt"],
            **(extra or {}),
            "config": self.cfg.to_dict(),
        }
        self.outputs.write_benchmark(benchmark)
        self.close()
        return RunSummary(
            run_dir=str(self.outputs.run_dir),
            stop_reason=stop_reason,
            env_steps=p.env_steps,
            updates=p.updates,
            train_seconds=train_seconds,
            eval_return_mean=final_eval.mean if final_eval else None,
            benchmark=benchmark,
        )

    def close(self) -> None:
        """Stop the sampler, close the loggers and metrics.jsonl; safe to call more than once."""
        self.resources.stop()
        for logger in self.loggers:
            logger.close()
        self.loggers = []
        self.outputs.close()
        RunMonitor._open.discard(self)

    @classmethod
    def close_open(cls) -> None:
        """Close every monitor a run left open because it raised (its sampler thread, W&B run and files)."""
        for monitor in list(cls._open):
            monitor.close()

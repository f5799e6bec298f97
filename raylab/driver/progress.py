"""Counters, episode statistics and throughput, turned into one flat metrics row per report interval."""

from __future__ import annotations

import math
import time
from collections import defaultdict, deque
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

from raylab.types import EvalResult, LearnerStats, RolloutStats


class PolicyProgress:
    """What the driver counts per policy in a run with several (reported as ``policy/<name>/...``)."""

    def __init__(self) -> None:
        self.env_steps = 0
        self.updates = 0
        self.episodes = 0
        self.version = 0
        self.returns: deque[float] = deque(maxlen=100)
        self.lengths: deque[int] = deque(maxlen=100)
        self.extras: dict[str, deque[float]] = {}
        self.learner_metrics: dict[str, float] = {}
        self.lags: list[int] = []
        self.lag_sum = 0
        self.lag_count = 0
        self.eval_returns: np.ndarray | None = None
        self.mark = (0, 0)

    def row(self, prefix: str, dt: float) -> dict[str, Any]:
        steps0, updates0 = self.mark
        self.mark = (self.env_steps, self.updates)
        row: dict[str, Any] = {
            f"{prefix}/env_steps": self.env_steps,
            f"{prefix}/updates": self.updates,
            f"{prefix}/episodes": self.episodes,
            f"{prefix}/version": self.version,
            f"{prefix}/throughput/env_steps_per_s": (self.env_steps - steps0) / dt,
            f"{prefix}/throughput/updates_per_s": (self.updates - updates0) / dt,
        }
        if self.returns:
            row[f"{prefix}/episode/return_mean"] = float(np.mean(self.returns))
            row[f"{prefix}/episode/length_mean"] = float(np.mean(self.lengths))
        for key, values in self.extras.items():
            if values:
                row[f"{prefix}/episode/{key}_mean"] = float(np.mean(values))
        if self.lags:
            row[f"{prefix}/lag/mean"], row[f"{prefix}/lag/max"] = float(np.mean(self.lags)), max(self.lags)
            self.lags.clear()
        if self.eval_returns is not None and len(self.eval_returns):
            row[f"{prefix}/eval/return_mean"] = float(self.eval_returns.mean())
        row.update({f"{prefix}/learner/{k}": v for k, v in self.learner_metrics.items()})
        return row

    def counters(self) -> dict[str, int]:
        """What a checkpoint keeps (a resumed run continues them)."""
        return {
            "env_steps": self.env_steps,
            "updates": self.updates,
            "episodes": self.episodes,
            "version": self.version,
        }

    def restore(self, counters: dict[str, int]) -> None:
        self.env_steps, self.updates = counters.get("env_steps", 0), counters.get("updates", 0)
        self.episodes, self.version = counters.get("episodes", 0), counters.get("version", 0)
        self.mark = (self.env_steps, self.updates)

    def history(self) -> dict[str, Any]:
        """Its last 100 episodes, which a checkpoint keeps beside the counters (``Progress.history``)."""
        return _episodes(self.returns, self.lengths, self.extras)

    def restore_history(self, history: dict[str, Any]) -> None:
        _restore_episodes(history, self.returns, self.lengths, self.extras)

    def summary(self) -> dict[str, Any]:
        """benchmark_metrics.json's ``policies.<name>``."""
        return {
            "env_steps": self.env_steps,
            "updates": self.updates,
            "episodes": self.episodes,
            "version": self.version,
            "episode_return_mean_last100": float(np.mean(self.returns)) if self.returns else None,
            **{f"episode_{k}_mean_last100": float(np.mean(v)) for k, v in self.extras.items() if v},
            "lag_mean": self.lag_sum / self.lag_count if self.lag_count else None,
            "final_losses": {k: v for k, v in self.learner_metrics.items() if k.endswith("loss")},
            "eval_return_mean": float(self.eval_returns.mean())
            if self.eval_returns is not None and len(self.eval_returns)
            else None,
        }


def _episodes(returns: deque[float], lengths: deque[int], extras: dict[str, deque[float]]) -> dict[str, Any]:
    return {
        "returns": [float(r) for r in returns],
        "lengths": [int(n) for n in lengths],
        "extras": {key: [float(v) for v in values] for key, values in extras.items()},
    }


def _restore_episodes(
    history: dict[str, Any], returns: deque[float], lengths: deque[int], extras: dict[str, deque[float]]
) -> None:
    returns.extend(float(r) for r in history.get("returns", []))
    lengths.extend(int(n) for n in history.get("lengths", []))
    for key, values in history.get("extras", {}).items():
        extras.setdefault(key, deque(maxlen=100)).extend(float(v) for v in values)


class _Report(NamedTuple):
    """One timing report: seconds per timing key, spread evenly over the wall-clock span it covered,
    ``[end - length, end]`` (``end``: when it arrived)."""

    end: float
    length: float
    seconds: dict[str, float]
    worker: int | None
    """A rollout report's worker (its rollout/wait_s is that worker's wait); None for other actors."""

    def inside(self, then: float, now: float) -> float:
        """The fraction of the span inside ``[then, now]``; a zero-length span counts wholly if it ends inside."""
        if self.length <= 0:
            return float(then <= self.end <= now)
        return max(0.0, min(self.end, now) - max(self.end - self.length, then)) / self.length


class Progress:
    """Everything the driver counts. Rates in a row cover the interval since the previous row."""

    def __init__(
        self, frames_per_step: int = 1, policies: Sequence[str] = (), clock: Callable[[], float] = time.perf_counter
    ):
        """``policies``: the names of a run's several policies (none: one policy, no per-policy keys);
        ``clock``: the seconds every time here is read from (tests drive it)."""
        self.frames_per_step = frames_per_step
        self.policies = {name: PolicyProgress() for name in policies}
        self.clock = clock
        self.start = clock()
        self.seconds_offset = 0.0
        """Training seconds of the run this one resumes."""
        self.env_steps = 0
        self.updates = 0
        self.samples = 0
        self.episodes = 0
        self.returns: deque[float] = deque(maxlen=100)
        self.lengths: deque[int] = deque(maxlen=100)
        self.extras: dict[str, deque[float]] = {}
        """Family-specific episode values (Mario x_pos/flag_get, Snake snake_length), last 100 episodes."""
        self.env_restarts = 0
        self._epsilons: dict[int, float] = {}
        """Latest mean epsilon per epsilon-greedy worker."""
        self.gauges: dict[str, float] = {}
        """Values the topology sets as they are (queue depths, replay inserts), reported as they stand."""
        self.first_returns: list[float] = []
        self._window: deque[float] = deque(maxlen=10)
        self.best_window_mean = -math.inf
        self.learner_metrics: dict[str, float] = {}
        self.last_eval: EvalResult | None = None
        self.evals: list[dict[str, float]] = []
        self.workers: dict[int, dict[str, int]] = {}
        """Per worker: chunks, env_steps, first and last policy_version seen."""
        self._lags: list[int] = []
        self._interval_returns: list[float] = []
        self._timings: defaultdict[str, float] = defaultdict(float)
        """Seconds per timing key that arrived in the interval (reported as timing/<key>)."""
        self._reports: list[_Report] = []
        """The interval's timing reports, with the spans they covered (what shares are made of)."""
        self._chains: dict[str, list[int]] = {}
        """Per rollout worker and per learner, its reports of the interval (indices into ``_reports``) in order."""
        self.actor_counts: dict[str, int] = {}
        """Actors per timing prefix (rollout, learner, replay, server, driver): a stage's share of an
        interval is its seconds over (count x interval). A prefix not listed counts as one actor."""
        self._mark = (self.start, 0, 0, 0)
        self.last_rates: dict[str, float] = {}
        self.end: float | None = None
        """When training stopped; time after it (draining, final eval, writing) is not training time."""

    def history(self) -> dict[str, Any]:
        """What a checkpoint keeps besides the counters, so that a resumed run reports the whole run, not only the
        part after its resume: the periodic evaluations, the last 100 episodes (returns, lengths, the env's own
        values), the first 10 returns, the best 10-episode mean with the window it runs over, and each policy's
        last 100 episodes. Plain lists and numbers (a checkpoint is loaded with ``weights_only``)."""
        return {
            "evals": [dict(e) for e in self.evals],
            **_episodes(self.returns, self.lengths, self.extras),
            "first_returns": list(self.first_returns),
            "window": list(self._window),
            "best_window_mean": self.best_window_mean if math.isfinite(self.best_window_mean) else None,
            "env_restarts": self.env_restarts,
            "policies": {name: track.history() for name, track in self.policies.items()},
        }

    def restore_history(self, history: dict[str, Any]) -> None:
        """Continue from ``history`` (``history()`` of the run this one resumes)."""
        self.evals = [dict(e) for e in history.get("evals", [])]
        _restore_episodes(history, self.returns, self.lengths, self.extras)
        self.first_returns = [float(r) for r in history.get("first_returns", [])]
        self._window.extend(float(r) for r in history.get("window", []))
        best = history.get("best_window_mean")
        self.best_window_mean = -math.inf if best is None else float(best)
        self.env_restarts = int(history.get("env_restarts", 0))
        for name, track in history.get("policies", {}).items():
            if name in self.policies:
                self.policies[name].restore_history(track)

    def restart_clock(self) -> None:
        """Start timing now (after actors are up), so throughput excludes start-up."""
        self.start = self.clock()
        self._mark = (self.start, self.env_steps, self.updates, self.samples)

    def stop_clock(self) -> None:
        if self.end is None:
            self.end = self.clock()

    def _now(self) -> float:
        return self.end if self.end is not None else self.clock()

    @property
    def seconds(self) -> float:
        """Training seconds, including those before a resume."""
        return self.seconds_offset + self._now() - self.start

    def seconds_since_row(self) -> float:
        return self._now() - self._mark[0]

    def add_rollout(self, stats: RolloutStats, learner_version: int, policy_versions: Sequence[int] = ()) -> None:
        """``learner_version``: the (oldest) learner's version; ``policy_versions``: each policy's learner's,
        with several policies (each policy's lag is its own learner's version minus its part's)."""
        self.env_steps += stats.num_steps
        if stats.policies is not None and self.policies:
            for part, track, version in zip(stats.policies, self.policies.values(), policy_versions, strict=True):
                track.env_steps += part.num_steps
                track.episodes += len(part.episodes)
                track.returns.extend(part.episodes.returns.tolist())
                track.lengths.extend(part.episodes.lengths.tolist())
                for key, values in part.episodes.extras.items():
                    track.extras.setdefault(key, deque(maxlen=100)).extend(values.tolist())
                lag = version - part.policy_version
                track.lags.append(lag)
                track.lag_sum += lag
                track.lag_count += 1
        worker = self.workers.setdefault(
            stats.worker_id, {"chunks": 0, "env_steps": 0, "policy_version_first": stats.policy_version}
        )
        worker["chunks"] += 1
        worker["env_steps"] += stats.num_steps
        worker["policy_version_last"] = stats.policy_version
        if stats.policies is not None and self.policies:
            self._lags.extend(v - part.policy_version for v, part in zip(policy_versions, stats.policies, strict=True))
        elif stats.lags is None:
            self._lags.append(learner_version - stats.policy_version)
        else:
            self._lags.extend(stats.lags)
        self.env_restarts += stats.env_restarts
        if stats.epsilon is not None:
            self._epsilons[stats.worker_id] = stats.epsilon
        for key, values in stats.episodes.extras.items():
            self.extras.setdefault(key, deque(maxlen=100)).extend(values.tolist())
        timings = {f"rollout/{name}_s": secs for name, secs in stats.timings.items()}
        self._report(timings, stats.worker_id, actor=f"rollout/{stats.worker_id}")
        for ret, length in zip(stats.episodes.returns.tolist(), stats.episodes.lengths.tolist(), strict=True):
            self.episodes += 1
            self.returns.append(ret)
            self.lengths.append(length)
            self._interval_returns.append(ret)
            if len(self.first_returns) < 10:
                self.first_returns.append(ret)
            self._window.append(ret)
            if len(self._window) == self._window.maxlen:
                self.best_window_mean = max(self.best_window_mean, float(np.mean(self._window)))

    def add_time(self, stage: str, seconds: float) -> None:
        self._report({stage: seconds})

    def add_learner(self, stats: LearnerStats, policy: str | None = None) -> None:
        """``policy``: which of several policies' learners made the call."""
        self.updates += stats.updates
        self.samples += stats.samples
        if policy is not None and self.policies:
            track = self.policies[policy]
            track.updates += stats.updates
            track.version = stats.version
            track.learner_metrics = stats.metrics
        else:
            self.learner_metrics = stats.metrics
        timings = stats.timings or {}
        # stages are disjoint so that shares stack: the wait for the next prefetched batch happens inside
        # the update call but is reported as learner/batch_wait_s, not as update time
        self._report(
            {"learner/update_s": stats.seconds - timings.get("batch_wait_s", 0.0)}
            | {f"learner/{name}": secs for name, secs in timings.items()},
            actor=f"learner/{policy or ''}",
        )

    def add_timings(self, prefix: str, timings: dict[str, float]) -> None:
        """Seconds per stage of another actor type (e.g. prefix "replay", stages add_s, sample_s)."""
        self._report({f"{prefix}/{name}": secs for name, secs in timings.items()})

    def _report(self, seconds: dict[str, float], worker: int | None = None, actor: str | None = None) -> None:
        """A report of seconds per timing key, arriving now. Its stages are disjoint and ran back to back up to
        now (a learner call's: the wait before it, the call, the publish), so it covered their sum. ``actor``:
        one rollout worker or one learner, which works on one thing at a time: when its reports arrive together
        (the driver was busy), the earlier ones covered the time before the later ones, and are moved there."""
        for key, secs in seconds.items():
            self._timings[key] += secs
        report = _Report(self._now(), max(sum(seconds.values()), 0.0), seconds, worker)
        if actor is not None:
            chain = self._chains.setdefault(actor, [])
            start = report.end - report.length
            for i in reversed(chain):
                earlier = self._reports[i]
                if earlier.end <= start:
                    break
                self._reports[i] = earlier._replace(end=start)
                start -= earlier.length
            chain.append(len(self._reports))
        self._reports.append(report)

    def add_eval(self, result: EvalResult) -> None:
        self.last_eval = result
        for name, returns in (result.policies or {}).items():
            if name in self.policies:
                self.policies[name].eval_returns = returns
        self.evals.append(
            {
                "time_s": self.seconds,
                "env_steps": self.env_steps,
                "version": result.version,
                "return_mean": result.mean,
                **{f"{key}_mean": value for key, value in result.extra_means().items()},
            }
        )

    def row(self, replay_size: int | None = None) -> dict[str, Any]:
        """A metrics row; resets the interval accumulators."""
        now = self._now()
        then, steps0, updates0, samples0 = self._mark
        dt = max(now - then, 1e-9)
        self._mark = (now, self.env_steps, self.updates, self.samples)
        rates = {
            "throughput/env_steps_per_s": (self.env_steps - steps0) / dt,
            "throughput/env_frames_per_s": (self.env_steps - steps0) * self.frames_per_step / dt,
            "throughput/updates_per_s": (self.updates - updates0) / dt,
            "throughput/samples_per_s": (self.samples - samples0) / dt,
        }
        self.last_rates = rates
        row: dict[str, Any] = {
            "time_s": self.seconds_offset + now - self.start,
            "env_steps": self.env_steps,
            "env_frames": self.env_steps * self.frames_per_step,
            "updates": self.updates,
            "samples": self.samples,
            "episodes": self.episodes,
            **rates,
        }
        if replay_size is not None:
            row["replay/size"] = replay_size
        if self.returns:
            row["episode/return_mean"] = float(np.mean(self.returns))
            row["episode/length_mean"] = float(np.mean(self.lengths))
        for key, values in self.extras.items():
            if values:
                row[f"episode/{key}_mean"] = float(np.mean(values))
        row["rollout/env_restarts"] = self.env_restarts
        if self._epsilons:
            row["rollout/epsilon_mean"] = float(np.mean(list(self._epsilons.values())))
        row.update(self.gauges)
        if self._interval_returns:
            row["episode/return_interval_mean"] = float(np.mean(self._interval_returns))
        if self._lags:
            row["lag/min"], row["lag/mean"], row["lag/max"] = (
                min(self._lags), float(np.mean(self._lags)), max(self._lags),
            )  # fmt: skip
        if self.last_eval is not None:
            row["eval/return_mean"] = self.last_eval.mean
            row["eval/return_std"] = self.last_eval.std
            row["eval/version"] = self.last_eval.version
            for key, value in self.last_eval.extra_means().items():  # Mario: eval/flag_get_mean, the flag rate
                row[f"eval/{key}_mean"] = value
        row.update({f"learner/{k}": v for k, v in self.learner_metrics.items()})
        for name, track in self.policies.items():
            row.update(track.row(f"policy/{name}", dt))
        if replay_size is not None and self.env_steps > steps0:
            row["replay/samples_per_insert"] = (self.samples - samples0) / (self.env_steps - steps0)
        row.update({f"timing/{k}": v for k, v in self._timings.items()})
        row.update(self._shares(then, now))
        self._lags.clear()
        self._interval_returns.clear()
        self._timings.clear()
        self._reports.clear()
        self._chains.clear()
        return row

    def _shares(self, then: float, now: float) -> dict[str, float]:
        """share/<actor>/<stage>: the interval's seconds in a stage over (actors of that type x interval);
        wait/worker_<i>_share: the share of the interval worker i sat waiting (for the driver, the rate
        limiter, the learner, or A3C's parameter server). A report's seconds count in the part of its span
        inside the interval (a call that outlasts the interval does not fill more than all of it); the part
        before ``then`` fell in intervals already reported and counts in no share."""
        dt = max(now - then, 1e-9)
        stages: defaultdict[str, float] = defaultdict(float)
        worker_wait: dict[int, float] = {}
        for report in self._reports:
            part = report.inside(then, now)
            for key, secs in report.seconds.items():
                stages[key] += secs * part
            if report.worker is not None:
                wait = report.seconds.get("rollout/wait_s", 0.0) * part
                worker_wait[report.worker] = worker_wait.get(report.worker, 0.0) + wait
        out = {}
        for key, secs in stages.items():
            actor, _, stage = key.partition("/")
            out[f"share/{actor}/{stage.removesuffix('_s')}"] = secs / (max(self.actor_counts.get(actor, 1), 1) * dt)
        waits = {i: secs / dt for i, secs in sorted(worker_wait.items())}
        for i, share in waits.items():
            out[f"wait/worker_{i}_share"] = share
        if waits:
            out["wait/worker_max_share"] = max(waits.values())
            out["wait/worker_mean_share"] = sum(waits.values()) / len(waits)
        return out

"""The run report: benchmark_metrics.json's layout, and the RunSummary a run returns.

``benchmark_report`` is a pure function of the config, the counters (raylab.driver.progress) and what the
monitor gathered at the end (``RunFacts``): the timed-training seed's format (seed 003) plus throughput,
eval, replay, placement and each topology's own sections.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from raylab.config import RunConfig
from raylab.driver.progress import Progress
from raylab.driver.resources import ResourceUsage
from raylab.metrics.numbers import fmt_return
from raylab.types import EvalResult


@dataclass
class RunSummary:
    run_dir: str
    stop_reason: str
    env_steps: int
    updates: int
    train_seconds: float
    eval_return_mean: float | None
    benchmark: dict[str, Any]


@dataclass
class RunFacts:
    """What the report needs besides the config and the counters."""

    stop_reason: str
    start_time: dt.datetime
    end_time: dt.datetime
    train_seconds: float
    final_rates: dict[str, float]
    """The throughput/* rates final_fps is read from."""
    usage: ResourceUsage
    process_peaks: int
    """Bytes: every process's own peak resident memory, summed (the driver's and the actors')."""
    resumed_from: str | None = None
    placement: dict[str, str] = field(default_factory=dict)
    """Ray topologies: {actor name: node id}."""
    checkpoints: list[str] = field(default_factory=list)
    in_process: bool = False
    """topology=local: every actor in the driver's process (``training_mode`` sequential)."""


def benchmark_report(
    cfg: RunConfig,
    p: Progress,
    facts: RunFacts,
    final_eval: EvalResult | None = None,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """benchmark_metrics.json. ``extra`` adds topology-specific sections (a3c: per-worker wait, server apply
    times; restarts), placed before ``config``."""
    seconds = max(facts.train_seconds, 1e-9)
    frames = p.env_steps * p.frames_per_step
    return {
        "training_mode": "sequential" if facts.in_process else "parallel",
        "topology": cfg.topology.name,
        "start_time": facts.start_time.isoformat(timespec="seconds"),
        "end_time": facts.end_time.isoformat(timespec="seconds"),
        "duration_hours": facts.train_seconds / 3600.0,
        "total_timesteps": p.env_steps,
        "total_updates": p.updates,
        "average_fps": frames / seconds,
        "final_fps": facts.final_rates.get("throughput/env_frames_per_s", 0.0),
        "performance": _performance(p),
        "timesteps_per_hour": p.env_steps / seconds * 3600.0,
        "final_losses": {k: v for k, v in p.learner_metrics.items() if k.endswith("loss") or k == "entropy"},
        "resource_usage": _resource_usage(facts.usage, facts.process_peaks),
        "throughput": {
            "env_frames_per_s": frames / seconds,
            "agent_steps_per_s": p.env_steps / seconds,
            "learner_updates_per_s": p.updates / seconds,
        },
        "eval": eval_section(final_eval),
        "evals": p.evals,
        "workers": {str(k): v for k, v in sorted(p.workers.items())},
        "replay": None,  # a flow with a replay reports it in ``extra`` (ReplayStats.report), which keeps this place
        "stop_reason": facts.stop_reason,
        "resumed_from": facts.resumed_from,
        "episodes": p.episodes,
        "episode_extras": {k: float(np.mean(v)) for k, v in p.extras.items() if v},
        "env_restarts": p.env_restarts,
        "placement": {"nodes": len(set(facts.placement.values())), "actors": facts.placement}
        if facts.placement
        else None,
        "checkpoints": list(facts.checkpoints),
        **(extra or {}),
        "config": cfg.to_dict(),
    }


def _performance(p: Progress) -> dict[str, float | None]:
    returns = list(p.returns)
    return {
        "initial_reward": float(np.mean(p.first_returns)) if p.first_returns else None,
        "final_reward": float(np.mean(returns[-10:])) if returns else None,
        "best_reward": p.best_window_mean if np.isfinite(p.best_window_mean) else None,
        "average_reward_last_100_episodes": float(np.mean(returns)) if returns else None,
        "reward_std_last_100_episodes": float(np.std(returns)) if returns else None,
    }


def _resource_usage(usage: ResourceUsage, process_peaks: int) -> dict[str, Any]:
    return {
        # the whole process tree at one instant (sampled each second); falls back to the sum of each
        # process's own peak when the run was too short to sample
        "peak_memory_gb": usage.peak_memory_gb if usage.samples > 2 else process_peaks / 2**30,
        "sum_of_process_peaks_gb": process_peaks / 2**30,
        **{k: v for k, v in asdict(usage).items() if k != "peak_memory_gb"},
    }


def eval_section(final_eval: EvalResult | None) -> dict[str, Any]:
    """A final evaluation: its mean, std, episodes and the weights version it ran on; each episode's return and
    length (agent steps: an episode that ran to the time limit shows there); the env family's episode values,
    each episode's and their means (Mario: x_pos, and flag_get, whose mean is the flag rate); with
    eval.starts=every, the no-op start each episode played."""
    starts = {"starts": final_eval.starts.tolist()} if final_eval is not None and final_eval.starts is not None else {}
    return {
        **starts,
        "return_mean": final_eval.mean if final_eval else None,
        "return_std": final_eval.std if final_eval else None,
        "episodes": int(final_eval.returns.size) if final_eval else 0,
        "policy_version": final_eval.version if final_eval else None,
        "returns": [float(r) for r in final_eval.returns] if final_eval else [],
        "lengths": [int(n) for n in final_eval.lengths] if final_eval else [],
        "extras_mean": final_eval.extra_means() if final_eval else {},
        "extras": {k: v.tolist() for k, v in final_eval.extras.items()} if final_eval else {},
    }


def result_words(benchmark: dict[str, Any]) -> str:
    """The console's words for a run's final evaluations: best.pt's (the run's result), and final.pt's (the
    newest weights) when they are another version; "" when none ran."""
    ev, newest, best = benchmark["eval"], benchmark.get("eval_newest") or {}, benchmark.get("best")
    if not ev["episodes"]:
        return ""
    mean, std = fmt_return(ev["return_mean"]), fmt_return(ev["return_std"])
    words = f"eval return {mean} ± {std} over {ev['episodes']} episodes"
    words += "".join(f", {key} mean {value:.3g}" for key, value in (ev.get("extras_mean") or {}).items())
    if best is None:  # nothing was evaluated while training: the newest weights are the result
        return f"{words} (final.pt, version {ev['policy_version']}), "
    if newest.get("policy_version") == ev["policy_version"]:
        return f"{words} (best.pt = final.pt, version {ev['policy_version']}), "
    return (
        f"{words} (best.pt, version {ev['policy_version']}); newest weights {fmt_return(newest['return_mean'])} ± "
        f"{fmt_return(newest['return_std'])} (final.pt, version {newest['policy_version']}), "
    )

"""``resume=<run_dir>``: continue a run from its newest checkpoint, counters intact.

What a checkpoint holds (periodic ``step_<env steps>.pt`` and ``final.pt``, written atomically): the
learner's full state (modules, optimizer, version; A3C: every parameter-server shard with its RMSProp
state), the counters (env steps, updates, episodes, training seconds, each rollout worker's env steps, so
that exploration schedules continue where they were), the driver's RNG states, the config, and the run's
history (its periodic evaluations and last 100 episodes, so that a resumed run's benchmark_metrics.json covers
the whole run). The replay is saved only with ``checkpoint.replay=true`` (raylab.replay.snapshot: one file per
shard beside each checkpoint), which a resumed DQN run then loads; without it the run refills its replay to
``replay.min_size`` before learning again. Rollout actors restart their envs on fresh seeds.

A resumed run writes into the run dir it resumes: metrics.jsonl continues, newer checkpoints join the old
ones. The rows a stopped run wrote after the checkpoint it resumes from (training that the resume does over) are
moved to ``metrics.after-<checkpoint>.jsonl`` beside it, so metrics.jsonl reads as one run and nothing is lost.
Everything that shapes the networks or the data must match the checkpoint's config (env, algo, model,
topology name); a mismatch, or a corrupt checkpoint, is a one-line error before anything is written.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from raylab.config.diff import first_difference, select, with_defaults, without_missing
from raylab.errors import ConfigError, RaylabError
from raylab.learner.checkpoint import load_checkpoint
from raylab.replay.snapshot import snapshot_path

MUST_MATCH = ("env", "algo", "model", "topology.name", "topology.envs_per_worker", "policy_mapping")
"""Config sections a resumed run must share with its checkpoint (the networks' shapes, the data they see)."""


@dataclass
class ResumeState:
    path: Path
    learner: dict[str, Any]
    env_steps: int
    updates: int
    episodes: int
    train_seconds: float
    workers: dict[int, int] = field(default_factory=dict)
    """Env steps of each rollout worker at the checkpoint."""
    rng: dict[str, Any] | None = None
    policies: dict[str, dict[str, int]] = field(default_factory=dict)
    """Several policies: each one's counters at the checkpoint (env_steps, updates, episodes)."""
    history: dict[str, Any] | None = None
    """Progress.history at the checkpoint (its evaluations, its last 100 episodes); None in a checkpoint written
    before checkpoints kept it, whose resumed run reports from its resume on."""

    def replay_snapshot(self, shard: int) -> Path | None:
        """The replay snapshot of ``shard`` written with this checkpoint (checkpoint.replay), if there is one."""
        path = snapshot_path(self.path.parent, shard, self.path.name)
        return path if path.is_file() else None

    def worker_steps(self, worker_id: int) -> int:
        return self.workers.get(worker_id, 0)

    @property
    def incarnation(self) -> int:
        """Seeds offset of resumed rollout workers (fresh episodes, not the first run's again)."""
        return self.env_steps % 997 + 1


def resumed(resume: ResumeState | None, worker_id: int) -> tuple[int, int]:
    """(incarnation, env steps) of a rollout worker: fresh seeds, and its exploration schedule's position."""
    return (0, 0) if resume is None else (resume.incarnation, resume.worker_steps(worker_id))


def newest_checkpoint(run_dir: Path) -> Path:
    """The checkpoint with the most env steps (final.pt after a finished run, else the latest periodic one)."""
    return _newest(run_dir)[0]


def _newest(run_dir: Path) -> tuple[Path, dict[str, Any] | None]:
    """(newest checkpoint, its state when it had to be loaded to tell: final.pt, read once)."""
    ckpt_dir = run_dir / "checkpoints"
    candidates: list[tuple[int, float, Path]] = [
        (int(p.stem.removeprefix("step_")), p.stat().st_mtime, p)
        for p in ckpt_dir.glob("step_*.pt")
        if p.stem.removeprefix("step_").isdigit()  # step_<env steps>.pt; another name there is not one of ours
    ]
    final, final_state = ckpt_dir / "final.pt", None
    if final.exists():  # its env steps are inside it
        final_state = load_checkpoint(final)
        candidates.append((int(final_state.get("counters", {}).get("env_steps", -1)), final.stat().st_mtime, final))
    if not candidates:
        raise RaylabError(
            f"resume={run_dir}: no checkpoints in {ckpt_dir}: pass a run dir that has checkpoints/*.pt "
            f"(runs write final.pt at the end and step_*.pt with checkpoint.every_seconds)"
        )
    path = max(candidates)[2]
    return path, final_state if path == final else None


def load_resume(run_dir: str | Path, config: dict[str, Any]) -> ResumeState:
    """Read ``run_dir``'s newest checkpoint and check it against ``config`` (the new run's, as a dict)."""
    run_dir = Path(run_dir)
    if run_dir.is_file():
        run = run_dir.parent.parent if run_dir.parent.name == "checkpoints" else run_dir.parent
        raise RaylabError(
            f"resume={run_dir} is a file: resume takes the run dir (resume={run}), and continues from its newest "
            f"checkpoint"
        )
    if not run_dir.is_dir():
        raise RaylabError(f"resume={run_dir} does not exist: pass the run dir of the run to continue")
    path, state = _newest(run_dir)
    if state is None:
        state = load_checkpoint(path)
    if "learner" not in state or "counters" not in state or "config" not in state:
        raise RaylabError(f"checkpoint {path} is not a raylab training checkpoint: pass a raylab run dir")
    check_compatible(state["config"], config, path)
    counters = state["counters"]
    return ResumeState(
        path=path,
        learner=state["learner"],
        env_steps=int(counters["env_steps"]),
        updates=int(counters["updates"]),
        episodes=int(counters.get("episodes", 0)),
        train_seconds=float(state.get("train_seconds", 0.0)),
        workers={int(k): int(v) for k, v in state.get("workers", {}).items()},
        rng=state.get("rng"),
        policies={str(k): {c: int(n) for c, n in v.items()} for k, v in counters.get("policies", {}).items()},
        history=state.get("history"),
    )


def check_compatible(saved: dict[str, Any], new: dict[str, Any], path: Path) -> None:
    """The sections of MUST_MATCH, and each policy's algo, model and replay overrides, as the checkpoint has them
    (a key the checkpoint's config lacks, from before the key existed, is taken at its default: raylab.config.diff);
    the mapping's patterns also in order (the first that matches wins)."""
    saved = with_defaults(saved)
    names = sorted(set(saved.get("policies") or {}) | set(new.get("policies") or {}))
    policy_keys = [f"policies.{name}.{section}" for name in names for section in ("algo", "model", "replay")]
    for key in (*MUST_MATCH, *policy_keys):
        if key.startswith("policies."):  # free-form overrides: compared as they are (none: {})
            old_value, new_value = select(saved, key) or {}, select(new, key) or {}
        else:
            old_value, new_value = without_missing(select(saved, key), select(new, key))
        if key == "policy_mapping" and old_value == new_value:
            old_value, new_value = list((old_value or {}).items()), list((new_value or {}).items())
        if old_value != new_value:
            diff = first_difference(old_value, new_value, key)
            raise ConfigError(
                f"cannot resume from {path}: {diff[0]} was {diff[1]!r}, now {diff[2]!r}: resume with the "
                f"checkpoint's value (or start a new run without resume=)"
            )


# -- RNG states (the driver's; the learner keeps its own in its state dict) --------------------------------
def rng_state() -> dict[str, Any]:
    """Python, NumPy and torch global RNG states, as checkpoint-safe (weights_only) values."""
    kind, keys, pos, has_gauss, gauss = np.random.get_state()
    return {
        "python": list(random.getstate()[1]),
        "python_version": random.getstate()[0],
        "python_gauss": random.getstate()[2],
        "numpy": {
            "keys": torch.from_numpy(np.asarray(keys, np.int64)),
            "pos": int(pos),
            "has_gauss": int(has_gauss),
            "gauss": float(gauss),
            "kind": str(kind),
        },
        "torch": torch.get_rng_state(),
    }


def set_rng_state(state: dict[str, Any]) -> None:
    random.setstate((state["python_version"], tuple(state["python"]), state.get("python_gauss")))
    np_state = state["numpy"]
    keys = np_state["keys"].numpy().astype(np.uint32)
    np.random.set_state((np_state["kind"], keys, np_state["pos"], np_state["has_gauss"], np_state["gauss"]))
    torch.set_rng_state(state["torch"])

"""CheckpointManager: a run's checkpoints under <run_dir>/checkpoints/.

Periodic ``step_<env steps>.pt`` every checkpoint.every_seconds (the newest checkpoint.keep are kept, their
replay snapshots rotated with them), ``final.pt`` at the end (the newest weights and the full training
state), ``best.pt`` beside it (the best policy evaluated: raylab.driver.best), and the learner state a crashed
learner (or A3C's server) restarts from. With checkpoint.replay, the topology's replay-snapshot callback writes every
replay shard's snapshot just before each checkpoint; its seconds are reported as timing/replay/snapshot_s.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from raylab.config import CheckpointConfig
from raylab.driver.best import BestRecord
from raylab.driver.outputs import RunOutputs
from raylab.driver.progress import Progress
from raylab.driver.resume import ResumeState, rng_state
from raylab.learner.checkpoint import load_checkpoint
from raylab.types import Weights

FINAL = "final.pt"
BEST = "best.pt"

ReplaySnapshot = Callable[[Path], None]
"""Writes every replay shard's snapshot for the checkpoint at the given path (raylab.replay.snapshot's
``snapshot_path(path.parent, shard, path.name)``); called before that checkpoint is written."""


class CheckpointManager:
    def __init__(
        self,
        checkpoint: CheckpointConfig,
        config: dict[str, Any],
        outputs: RunOutputs,
        progress: Progress,
        resume: ResumeState | None = None,
        replay_snapshot: ReplaySnapshot | None = None,
        policy_names: Sequence[str] = (),
    ):
        """``checkpoint``: when to write and how many to keep; ``config``: the run's config, which every
        checkpoint holds; ``policy_names``: with several policies, whose policy is which in final.pt."""
        self.checkpoint, self.config, self.policy_names = checkpoint, config, list(policy_names)
        self.outputs = outputs
        self.progress = progress
        self._resume = resume
        self._replay_snapshot = replay_snapshot
        self.names: list[str] = []
        """Periodic checkpoints written so far (file names under checkpoints/), oldest first; a resumed run
        starts with the ones already there."""
        if resume is not None:
            self.names = sorted(f.name for f in self.directory.glob("step_*.pt"))
        self._last = 0.0
        self._final_snapshot_taken = False
        self._best_written = False

    @property
    def directory(self) -> Path:
        return self.outputs.checkpoint_dir

    def start(self) -> None:
        """The first periodic checkpoint is due checkpoint.every_seconds from now."""
        self._last = time.perf_counter()

    def maybe_save(self, state: Callable[[], dict[str, Any] | None]) -> str | None:
        """A periodic checkpoint when one is due: ``state()`` is then asked for the learner's full state (None:
        not available now, e.g. the learner is restarting, and this one is skipped). Returns its name."""
        every = self.checkpoint.every_seconds
        now = time.perf_counter()
        if every is None or now - self._last < every:
            return None
        self._last = now
        learner_state = state()
        return self.save_periodic(learner_state) if learner_state is not None else None

    def save_periodic(self, learner_state: dict[str, Any]) -> str:
        """checkpoints/step_<env steps>.pt (learner state, counters, config); keeps checkpoint.keep of them."""
        name = f"step_{self.progress.env_steps:012d}.pt"
        self._snapshot(name)
        self.outputs.save_checkpoint(name, {"learner": learner_state, **self._counters()})
        if name not in self.names:
            self.names.append(name)
        self._rotate()
        return name

    def snapshot_final(self) -> None:
        """Write final.pt's replay snapshot now, at most once: the monitor calls it before the run's last metrics
        row so that the row reports its seconds (``save_final`` writes it if this was not called)."""
        if not self._final_snapshot_taken:
            self._final_snapshot_taken = True
            self._snapshot(FINAL)

    def save_final(self, learner_state: dict[str, Any], policy: Weights | list[Weights]) -> None:
        """checkpoints/final.pt: the learner state, the newest policy (``policy``: its inference weights and
        version; several policies: one per policy, saved as ``policy.policies.<name>``), the counters and the
        config."""
        self.snapshot_final()
        policy_state = self._policy_layout(policy)
        self.outputs.save_checkpoint(FINAL, {"learner": learner_state, "policy": policy_state, **self._counters()})

    def save_best(self, policy: Weights | list[Weights], record: BestRecord) -> None:
        """checkpoints/best.pt: the best policy evaluated (final.pt's policy layout, no learner state), the
        evaluation that chose it (``best``), the counters and the config."""
        state = {"policy": self._policy_layout(policy), "best": record.to_dict(), **self._counters()}
        self.outputs.save_checkpoint(BEST, state)
        self._best_written = True

    def load_best(self) -> tuple[list[Weights], BestRecord] | None:
        """A resumed run's best.pt (its policies, in the run's order, and its record); None: there is none."""
        path = self.directory / BEST
        if self._resume is None or not path.is_file():
            return None
        state = load_checkpoint(path)
        layout = state["policy"]
        parts = [layout["policies"][n] for n in self.policy_names] if "policies" in layout else [layout]
        weights = [Weights(int(p["version"]), {k: v.numpy() for k, v in p["params"].items()}) for p in parts]
        return weights, BestRecord.from_dict(state["best"])

    def _policy_layout(self, policy: Weights | list[Weights]) -> dict[str, Any]:
        if isinstance(policy, list):
            return {"policies": {n: _policy_state(w) for n, w in zip(self.policy_names, policy, strict=True)}}
        return _policy_state(policy)

    def files(self) -> list[str]:
        """Every checkpoint this run leaves, final.pt (then best.pt) last (benchmark_metrics.json's
        ``checkpoints``)."""
        return [*self.names, FINAL, *([BEST] if self._best_written else [])]

    def last_periodic(self) -> Path | None:
        return self.directory / self.names[-1] if self.names else None

    def latest_learner_state(self) -> dict[str, Any] | None:
        """The learner state a crashed learner (or A3C's server) restarts from: the newest periodic
        checkpoint's, or the resumed checkpoint's when that is newer (a run resumed from final.pt next to
        older step_*.pt files); None when there is neither, and it starts fresh."""
        newest = self.last_periodic()
        latest = load_checkpoint(newest) if newest is not None else None
        resume = self._resume
        if resume is not None and (latest is None or latest["counters"]["env_steps"] < resume.env_steps):
            return resume.learner
        return latest["learner"] if latest is not None else None

    def _counters(self) -> dict[str, Any]:
        """What every checkpoint holds besides the learner (and final.pt's policy), in this order: the counters,
        the training seconds, each worker's env steps, the driver's RNG, the config, and the history a resumed
        run's report continues (its evaluations and last 100 episodes: Progress.history)."""
        p = self.progress
        return {
            "counters": {
                "env_steps": p.env_steps,
                "updates": p.updates,
                "episodes": p.episodes,
                **({"policies": {n: t.counters() for n, t in p.policies.items()}} if p.policies else {}),
            },
            "train_seconds": p.seconds,
            "workers": {str(k): int(v["env_steps"]) for k, v in p.workers.items()},
            "rng": rng_state(),
            "config": self.config,
            "history": p.history(),
        }

    def _snapshot(self, checkpoint_name: str) -> None:
        if self._replay_snapshot is not None:
            start = time.perf_counter()
            self._replay_snapshot(self.directory / checkpoint_name)
            self.progress.add_time("replay/snapshot_s", time.perf_counter() - start)

    def _rotate(self) -> None:
        while len(self.names) > self.checkpoint.keep:
            old = self.names.pop(0)
            (self.directory / old).unlink(missing_ok=True)
            for snapshot in self.directory.glob(f"replay_*_{old.removesuffix('.pt')}.npz"):
                snapshot.unlink(missing_ok=True)


def _policy_state(policy: Weights) -> dict[str, Any]:
    return {"version": policy.version, "params": {k: torch.from_numpy(np.array(v)) for k, v in policy.params.items()}}

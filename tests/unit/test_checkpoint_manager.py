"""CheckpointManager without Ray: periodic checkpoints and their rotation, final.pt, the replay-snapshot
callback (called before its checkpoint, its seconds reported as timing/replay/snapshot_s) and which learner
state a crashed learner restarts from."""

from __future__ import annotations

import json
import time
from collections import deque
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest
import torch

from raylab.driver import checkpoints
from raylab.driver.checkpoints import CheckpointManager
from raylab.driver.monitor import RunMonitor
from raylab.driver.outputs import RunOutputs
from raylab.driver.progress import Progress
from raylab.driver.resume import ResumeState
from raylab.envs import env_spaces
from raylab.learner.checkpoint import load_checkpoint
from raylab.replay.snapshot import snapshot_path
from raylab.types import Episodes, EvalResult, RolloutStats, Weights
from tests.conftest import FAKE, make_config

Make = Callable[..., tuple[CheckpointManager, Progress]]


@pytest.fixture
def make(tmp_path: Path) -> Iterator[Make]:
    """make(*overrides, resume=, replay_snapshot=) -> (manager, progress) writing into tmp_path."""
    opened: list[RunOutputs] = []

    def build(*overrides: str, resume: ResumeState | None = None, replay_snapshot=None):
        cfg = make_config(tmp_path, *FAKE, "topology=local", *overrides)
        outputs = RunOutputs(cfg.run_dir)
        opened.append(outputs)
        progress = Progress()
        manager = CheckpointManager(
            cfg.checkpoint, cfg.to_dict(), outputs, progress, resume, replay_snapshot, list(cfg.policies)
        )
        return manager, progress

    yield build
    for outputs in opened:
        outputs.close()


def touch_snapshot(checkpoint: Path) -> None:
    """A replay-snapshot callback that writes shard 0's file the way raylab.replay.snapshot names it."""
    checkpoint.parent.mkdir(parents=True, exist_ok=True)
    snapshot_path(checkpoint.parent, 0, checkpoint.name).write_bytes(b"replay")


def test_rotation_keeps_the_newest_and_their_replay_snapshots(make, tmp_path):
    manager, progress = make("checkpoint.keep=2", replay_snapshot=touch_snapshot)
    for steps in (100, 200, 300, 400):
        progress.env_steps = steps
        assert manager.save_periodic({"w": torch.full((1,), float(steps))}) == f"step_{steps:012d}.pt"
    kept = ["step_000000000300.pt", "step_000000000400.pt"]
    ckpts = tmp_path / "checkpoints"
    assert manager.names == kept
    assert sorted(p.name for p in ckpts.glob("step_*.pt")) == kept
    assert sorted(p.name for p in ckpts.glob("replay_0_step_*.npz")) == [
        "replay_0_step_000000000300.npz",
        "replay_0_step_000000000400.npz",
    ]
    assert manager.last_periodic() == ckpts / kept[-1]
    assert load_checkpoint(ckpts / kept[-1])["learner"]["w"].item() == 400.0


def test_a_periodic_checkpoint_holds_the_counters_and_the_config(make, tmp_path):
    manager, progress = make()
    progress.env_steps, progress.updates, progress.episodes = 1000, 50, 7
    progress.workers[0] = {"chunks": 3, "env_steps": 600, "policy_version_first": 0}
    name = manager.save_periodic({"w": torch.ones(2)})
    saved = load_checkpoint(tmp_path / "checkpoints" / name)
    assert list(saved) == ["learner", "counters", "train_seconds", "workers", "rng", "config", "history"]
    assert saved["counters"] == {"env_steps": 1000, "updates": 50, "episodes": 7}
    assert saved["workers"] == {"0": 600} and saved["config"]["env"]["id"] == "Fake-v0"
    assert saved["history"] == progress.history()


def test_a_resumed_progress_reports_the_whole_run(make, tmp_path):
    """What benchmark_metrics.json reads from the counters (the evaluations, the last 100 episodes, the first
    returns, the best 10-episode mean) comes back from a checkpoint, loaded as resume= loads it; episodes after the
    resume join the restored ones."""
    manager, progress = make()
    for k in range(105):  # more than the 100 kept
        extras = {"x_pos": np.array([10.0 * k])}
        progress.add_rollout(RolloutStats(0, 10, 0, Episodes(np.array([float(k)]), np.array([k + 1]), extras), {}), 0)
    progress.add_eval(EvalResult(3, np.array([5.0, 7.0]), np.array([9, 9]), extras={"flag_get": np.array([1.0, 0.0])}))
    name = manager.save_periodic({"w": torch.ones(2)})
    resumed = Progress()
    resumed.restore_history(load_checkpoint(tmp_path / "checkpoints" / name)["history"])
    assert resumed.evals == progress.evals and resumed.evals[0]["flag_get_mean"] == 0.5
    assert list(resumed.returns) == [float(k) for k in range(5, 105)] and list(resumed.lengths) == list(range(6, 106))
    assert list(resumed.extras["x_pos"]) == [10.0 * k for k in range(5, 105)]
    assert resumed.first_returns == [float(k) for k in range(10)] and resumed.best_window_mean == 99.5
    resumed.add_rollout(RolloutStats(0, 10, 0, Episodes(np.array([500.0]), np.array([3])), {}), 0)
    assert resumed.returns[-1] == 500.0 and len(resumed.returns) == 100 and resumed.returns[0] == 6.0
    assert resumed.best_window_mean == np.mean([*range(96, 105), 500.0])  # the window ran on across the resume
    assert Progress().history()["best_window_mean"] is None  # -inf (no 10 episodes yet) is written as None


def test_each_policys_last_episodes_come_back(tmp_path):
    """Several policies: each one's last 100 episodes (returns, lengths, the env's values) are kept by name; a
    policy the resumed run does not have is left out."""
    first = Progress(policies=["red", "blue"])
    first.policies["red"].returns.extend([1.0, 2.0])
    first.policies["red"].lengths.extend([3, 4])
    first.policies["blue"].extras["snake_length"] = deque([5.0], maxlen=100)
    path = tmp_path / "history.pt"
    torch.save(first.history(), path)
    resumed = Progress(policies=["red"])
    resumed.restore_history(torch.load(path, weights_only=True))
    red = resumed.policies["red"]
    assert (list(red.returns), list(red.lengths), red.extras) == ([1.0, 2.0], [3, 4], {})
    assert set(resumed.policies) == {"red"}


def test_final_pt_holds_the_policy_and_comes_after_the_periodic_ones(make, tmp_path):
    manager, progress = make()
    progress.env_steps = 100
    manager.save_periodic({"w": torch.zeros(1)})
    progress.env_steps = 150
    policy = Weights(version=9, params={"layer": np.arange(3, dtype=np.float32)})
    manager.save_final({"w": torch.ones(1)}, policy)
    final = load_checkpoint(tmp_path / "checkpoints" / "final.pt")
    assert list(final) == ["learner", "policy", "counters", "train_seconds", "workers", "rng", "config", "history"]
    assert final["policy"]["version"] == 9 and torch.equal(final["policy"]["params"]["layer"], torch.arange(3.0))
    assert final["counters"]["env_steps"] == 150 and final["learner"]["w"].item() == 1.0
    assert manager.files() == ["step_000000000100.pt", "final.pt"]  # benchmark_metrics.json's checkpoints


def test_the_replay_snapshot_comes_before_its_checkpoint_and_is_timed(make, tmp_path):
    seen: list[tuple[str, bool]] = []

    def snapshot(checkpoint: Path) -> None:
        seen.append((checkpoint.name, checkpoint.exists()))
        time.sleep(0.02)

    manager, progress = make(replay_snapshot=snapshot)
    progress.env_steps = 100
    manager.save_periodic({"w": torch.zeros(1)})
    assert seen == [("step_000000000100.pt", False)]  # the checkpoint did not exist yet
    assert progress.row()["timing/replay/snapshot_s"] >= 0.02
    manager.snapshot_final()
    manager.snapshot_final()  # at most once
    manager.save_final({"w": torch.zeros(1)}, Weights(1, {}))
    assert seen[1:] == [("final.pt", False)]
    assert progress.row()["timing/replay/snapshot_s"] >= 0.02
    assert "timing/replay/snapshot_s" not in progress.row()  # reported once, in the row after it


def test_save_final_writes_the_snapshot_when_nobody_did(make):
    seen: list[str] = []
    manager, _ = make(replay_snapshot=lambda path: seen.append(path.name))
    manager.save_final({"w": torch.zeros(1)}, Weights(1, {}))
    assert seen == ["final.pt"]


def test_without_a_callback_nothing_is_timed(make):
    manager, progress = make()
    manager.save_periodic({"w": torch.zeros(1)})
    manager.save_final({"w": torch.zeros(1)}, Weights(1, {}))
    assert "timing/replay/snapshot_s" not in progress.row()


def test_periodic_checkpoints_are_due_every_seconds(make, monkeypatch):
    clock = [100.0]  # the manager's clock, moved by hand: "not due yet" must not depend on the machine's load
    monkeypatch.setattr(checkpoints.time, "perf_counter", lambda: clock[0])
    manager, _ = make("checkpoint.every_seconds=0.05")
    asked: list[int] = []

    def state() -> dict | None:
        asked.append(1)
        return None if len(asked) == 1 else {"w": torch.zeros(1)}  # the first time: the learner is restarting

    manager.start()
    clock[0] += 0.04
    assert manager.maybe_save(state) is None and not asked  # not due yet
    clock[0] += 0.02
    assert manager.maybe_save(state) is None and len(asked) == 1 and manager.names == []  # skipped
    clock[0] += 0.04
    assert manager.maybe_save(state) is None and len(asked) == 1  # the interval starts over
    clock[0] += 0.02
    assert manager.maybe_save(state) == "step_000000000000.pt"


def test_no_periodic_checkpoints_without_every_seconds(make):
    manager, _ = make()
    manager.start()
    assert manager.maybe_save(lambda: pytest.fail("asked for the state")) is None


def test_latest_learner_state_is_the_newest_of_periodic_and_resumed(make, tmp_path):
    first, progress = make()
    assert first.latest_learner_state() is None  # nothing yet: a crashed learner starts fresh
    progress.env_steps = 5000
    first.save_periodic({"w": torch.ones(1)})
    assert first.latest_learner_state()["w"].item() == 1.0

    final = tmp_path / "checkpoints" / "final.pt"
    # resumed from a final.pt at 10,000 steps beside the older step_5000 file: the resumed state wins
    newer = ResumeState(final, {"w": torch.full((1,), 2.0)}, 10_000, 5, 3, 1.0)
    second, progress = make(resume=newer)
    assert second.names == ["step_000000005000.pt"]  # the rotation continues with the files already there
    assert second.latest_learner_state()["w"].item() == 2.0
    progress.env_steps = 12_000
    second.save_periodic({"w": torch.full((1,), 3.0)})  # this run's own, newer than the resumed one
    assert second.latest_learner_state()["w"].item() == 3.0

    # resumed from a checkpoint older than the newest periodic file: the periodic one wins
    older = ResumeState(final, {"w": torch.full((1,), 4.0)}, 1_000, 5, 3, 1.0)
    third, _ = make(resume=older)
    assert third.latest_learner_state()["w"].item() == 3.0


def test_the_final_snapshot_is_reported_in_the_last_metrics_row(tmp_path):
    """final.pt's replay snapshot is the one every checkpoint.replay run writes (periodic ones only come every
    checkpoint.every_seconds): its seconds are in the run's last row, not added after it and lost."""
    cfg = make_config(tmp_path, *FAKE, "topology=local", "checkpoint.replay=true")
    with RunMonitor(cfg, env_spaces(cfg.env), replay_snapshot=lambda path: time.sleep(0.02)) as monitor:
        monitor.start()
        monitor.finish("test", {"w": torch.zeros(1)}, Weights(1, {}), None)
    last = json.loads((tmp_path / "metrics.jsonl").read_text().splitlines()[-1])
    assert last["timing/replay/snapshot_s"] >= 0.02

"""``resume=<run_dir>``: a run continues from its newest checkpoint with its counters, learner state, version
and exploration schedule intact, writing into the same run dir; a mismatched or corrupt checkpoint is one line
and nothing is written."""

import json
import random
from pathlib import Path

import numpy as np
import pytest
import torch

from raylab.driver.resume import newest_checkpoint, rng_state, set_rng_state
from raylab.errors import ConfigError, RaylabError
from raylab.learner.checkpoint import load_checkpoint
from raylab.train import run
from tests.conftest import FAKE, make_config, metrics_rows

SHORT = (
    *FAKE, "eval.every_seconds=null", "eval.final_episodes=2", "stop.seconds=120", "checkpoint.every_seconds=0.3",
    "logger.report_every_seconds=0.1",
)  # fmt: skip

CASES = {
    "dqn_local": ("topology=local", "algo.epsilon.anneal_env_steps=3000"),
    "ppo_local": ("topology=local", "algo=ppo", "model.hidden_sizes=[16]"),
    "a3c_local": ("topology=local", "algo=a3c", "model.hidden_sizes=[16]"),
    "ppo_lstm_local": (
        "topology=local",
        "algo=ppo",
        "model.hidden_sizes=[16]",
        "model.recurrent=lstm",
        "model.recurrent_size=8",
        "algo.bptt=8",
    ),
}


def rows(run_dir: Path) -> list[dict]:
    return metrics_rows(run_dir)


def resume_pair(tmp_path: Path, overrides: tuple[str, ...], ray: bool = False):
    first = run(make_config(tmp_path, *SHORT, *overrides, "stop.env_steps=2000"))
    saved = load_checkpoint(newest_checkpoint(tmp_path))
    second = run(make_config(tmp_path / "ignored", *SHORT, *overrides, "stop.env_steps=4000", f"resume={tmp_path}"))
    return first, saved, second


@pytest.mark.parametrize("case", list(CASES))
def test_resume_continues_counters_and_learner(case, tmp_path):
    first, saved, second = resume_pair(tmp_path, CASES[case])
    assert second.run_dir == str(tmp_path)  # the resumed run writes into the run it continues
    assert second.env_steps >= 4000 and second.updates > first.updates
    bm = json.loads((tmp_path / "benchmark_metrics.json").read_text())
    assert bm["resumed_from"] == str(tmp_path / "checkpoints" / "final.pt")
    assert bm["total_timesteps"] == second.env_steps
    steps = [r["env_steps"] for r in rows(tmp_path)]
    assert steps == sorted(steps) and steps[0] <= first.env_steps < steps[-1]  # one metrics file, both runs
    resumed_rows = [r for r in rows(tmp_path) if r["env_steps"] > first.env_steps]
    assert resumed_rows[0]["time_s"] > first.train_seconds  # training time continues too
    # the update counter continues from the first run's, not from 0 (the first row of the resumed run may be
    # written before its first update: rows are timed), and goes on past it
    assert resumed_rows[0]["updates"] >= first.updates and resumed_rows[-1]["updates"] > first.updates
    # the learner's state came back: the final policy version continues from the first run's
    assert bm["eval_newest"]["policy_version"] > (saved["policy"]["version"] if "policy" in saved else 0)
    assert not (tmp_path / "ignored" / "checkpoints").exists()


def test_a_resumed_run_keeps_the_best_policy_of_its_first_part(tmp_path):
    """The first part evaluates and keeps best.pt; the resumed part evaluates nothing (no periodic, no final
    evaluation), so the first part's best stays the run's best.pt."""
    evaluated = ("topology=local", "eval.every_env_steps=500", "eval.episodes=2")
    run(make_config(tmp_path, *SHORT, *evaluated, "stop.env_steps=2000"))
    first = load_checkpoint(tmp_path / "checkpoints" / "best.pt")
    later = ("topology=local", "stop.env_steps=6000", "eval.final_episodes=0", f"resume={tmp_path}")
    second = run(make_config(tmp_path / "ignored", *SHORT, *later))
    kept = load_checkpoint(tmp_path / "checkpoints" / "best.pt")
    assert kept["best"] == first["best"] and kept["policy"]["version"] == first["policy"]["version"]
    assert second.benchmark["best"] == first["best"]
    assert load_checkpoint(tmp_path / "checkpoints" / "final.pt")["policy"]["version"] > first["best"]["version"]


def test_a_run_stopped_after_a_periodic_checkpoint_resumes_with_its_history(tmp_path):
    """A run killed after a periodic checkpoint (no final.pt, no benchmark_metrics.json, metrics rows written past
    the checkpoint) resumes from it: its report holds the evaluations and episodes from before the resume as well
    as after, the rows past the checkpoint are kept beside metrics.jsonl, and metrics.jsonl reads as one run. The
    stopped run is made so whatever the machine's speed: its final.pt becomes its last periodic checkpoint."""
    evaluated = ("topology=local", "eval.every_env_steps=400", "eval.episodes=2")
    first = run(make_config(tmp_path, *SHORT, *evaluated, "stop.env_steps=2000"))
    ckpts = tmp_path / "checkpoints"
    saved = load_checkpoint(ckpts / "final.pt")
    steps = saved["counters"]["env_steps"]
    assert saved["history"]["evals"] and steps == first.env_steps
    path = ckpts / f"step_{steps:012d}.pt"
    for old in ckpts.glob("*.pt"):
        if old.name != "final.pt":
            old.unlink()
    (ckpts / "final.pt").rename(path)
    (tmp_path / "benchmark_metrics.json").unlink()
    with (tmp_path / "metrics.jsonl").open("a") as f:  # what the stopped run wrote after its checkpoint
        f.write(json.dumps({"time_s": 1e6, "env_steps": steps + 700}) + "\n")
    later = ("topology=local", "eval.every_env_steps=400", "eval.episodes=2", "stop.env_steps=4000")
    run(make_config(tmp_path / "ignored", *SHORT, *later, f"resume={tmp_path}"))
    bm = json.loads((tmp_path / "benchmark_metrics.json").read_text())
    assert bm["resumed_from"] == str(path)
    before = [e for e in bm["evals"] if e["env_steps"] <= steps]
    assert before == saved["history"]["evals"] and len(bm["evals"]) > len(before)  # both parts' evaluations
    assert bm["performance"]["initial_reward"] == pytest.approx(np.mean(saved["history"]["first_returns"]))
    (aside,) = tmp_path.glob("metrics.after-*.jsonl")
    assert aside.name == f"metrics.after-{path.stem}.jsonl"
    assert [json.loads(line)["env_steps"] for line in aside.read_text().splitlines()] == [steps + 700]
    row_steps = [r["env_steps"] for r in rows(tmp_path)]
    assert row_steps == sorted(row_steps) and row_steps[-1] >= 4000


def test_resumed_exploration_continues_where_it_was(tmp_path):
    first, _, _ = resume_pair(tmp_path, CASES["dqn_local"])
    first_rows = [r for r in rows(tmp_path) if r["env_steps"] <= first.env_steps]
    resumed = [r for r in rows(tmp_path) if r["env_steps"] > first.env_steps]
    eps_before, eps_after = first_rows[-1]["rollout/epsilon_mean"], resumed[0]["rollout/epsilon_mean"]
    assert eps_after <= eps_before + 1e-6  # annealing goes on; a fresh worker would be back near 1.0


RAY_CASES = {  # PPO and A3C on Ray run in make test-all (their serial resumes above are in the default tier);
    # apex_dqn's learner resume is checked with its replay's, in test_replay_snapshots_resume_... below
    "apex_dqn": pytest.param(
        ("topology=apex_dqn", "replay.min_size=200", "topology.rollout_length=16"), marks=pytest.mark.slow
    ),
    "ppo": pytest.param(("topology=ppo", "algo=ppo", "model.hidden_sizes=[16]"), marks=pytest.mark.slow),
    "a3c": pytest.param(("topology=a3c", "algo=a3c", "model.hidden_sizes=[16]"), marks=pytest.mark.slow),
}


@pytest.mark.distributed
@pytest.mark.usefixtures("ray_session")
@pytest.mark.parametrize("overrides", list(RAY_CASES.values()), ids=list(RAY_CASES))
def test_ray_topologies_resume_their_learner(overrides, tmp_path):
    _, saved, second = resume_pair(tmp_path, overrides)
    bm = json.loads((tmp_path / "benchmark_metrics.json").read_text())
    assert bm["resumed_from"] and second.env_steps >= 4000
    assert bm["eval_newest"]["policy_version"] > saved["policy"]["version"]  # the learner (or server) state came back


SNAPSHOT_CASES = {
    "dqn_local": (*CASES["dqn_local"], "replay.min_size=1500"),
    "apex_dqn": pytest.param(  # 39 s: the slow tier; dqn_local covers the snapshot in the default one
        ("topology=apex_dqn", "topology.rollout_length=16", "replay.min_size=1500"),
        marks=[pytest.mark.distributed, pytest.mark.slow],
    ),
}


@pytest.mark.parametrize("overrides", list(SNAPSHOT_CASES.values()), ids=list(SNAPSHOT_CASES))
def test_replay_snapshots_resume_with_the_replay_and_learn_at_once(overrides, tmp_path, request):
    """checkpoint.replay=true: the resumed run loads the replay saved beside final.pt, so it learns before
    inserting replay.min_size new steps, and its replay counts continue.

    The resumed run stops 1,000 env steps on, fewer than replay.min_size=1500: without the replay it could not
    make one update by then, and with it the rate limiter (8 samples per insert, an error buffer of at most
    6,144 samples) lets the actors insert at most 768 steps before the learner has sampled. So updates past
    the first run's count are the event that shows the replay came back, whatever the machine's speed."""
    if "topology=apex_dqn" in overrides:
        request.getfixturevalue("ray_session")
    overrides = (*overrides, "checkpoint.replay=true")
    first = run(make_config(tmp_path, *SHORT, *overrides, "stop.env_steps=2000"))
    saved = load_checkpoint(newest_checkpoint(tmp_path))
    target = first.env_steps + 1000
    resumed = (*SHORT, *overrides, f"stop.env_steps={target}", f"resume={tmp_path}")
    second = run(make_config(tmp_path / "ignored", *resumed))
    assert second.stop_reason.startswith("env steps") and second.env_steps >= target
    assert second.updates > first.updates  # learned within 1,000 new steps: the replay came back
    bm = json.loads((tmp_path / "benchmark_metrics.json").read_text())
    assert bm["eval_newest"]["policy_version"] > saved["policy"]["version"]  # the learner state came back too
    ckpts = tmp_path / "checkpoints"
    periodic = sorted(p.stem for p in ckpts.glob("step_*.pt"))
    assert (ckpts / "replay_0_final.npz").is_file()
    # one snapshot per kept periodic checkpoint: rotated with them
    assert sorted(p.stem.removeprefix("replay_0_") for p in ckpts.glob("replay_0_step_*.npz")) == periodic
    assert len(periodic) <= 3
    replay_before, replay_after = first.benchmark["replay"], second.benchmark["replay"]
    assert replay_after["inserted"] > replay_before["inserted"] == replay_before["size"] >= 1500
    assert any(r.get("timing/replay/snapshot_s", 0) > 0 for r in rows(tmp_path))  # its cost is reported


def test_a_replay_snapshot_that_does_not_fit_is_one_line_and_writes_nothing(tmp_path):
    run(make_config(tmp_path, *SHORT, *CASES["dqn_local"], "stop.env_steps=1000", "checkpoint.replay=true"))
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    cfg = make_config(
        tmp_path / "new", *SHORT, *CASES["dqn_local"], "checkpoint.replay=true", "replay.capacity=5000",
        f"resume={tmp_path}",
    )  # fmt: skip
    with pytest.raises(ConfigError, match=r"replay_0_final.npz holds a shard of capacity \d+, this run's is 5000"):
        run(cfg)
    assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file() and "new" not in p.parts} == before


def test_mismatched_config_is_one_line_and_writes_nothing(tmp_path):
    run(make_config(tmp_path, *SHORT, *CASES["dqn_local"], "stop.env_steps=1000"))
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    cfg = make_config(tmp_path / "new", *SHORT, *CASES["dqn_local"], "model.hidden_sizes=[7]", f"resume={tmp_path}")
    with pytest.raises(
        ConfigError, match=r"cannot resume from .*final.pt: model.hidden_sizes was \[256, 256\], now \[7\]"
    ):
        run(cfg)
    assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file() and "new" not in p.parts} == before


def test_corrupt_checkpoint_is_one_line_and_writes_nothing(tmp_path):
    run(make_config(tmp_path, *SHORT, *CASES["dqn_local"], "stop.env_steps=1000"))
    (tmp_path / "checkpoints" / "final.pt").write_bytes(b"truncated")
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    with pytest.raises(RaylabError, match="is corrupt or not a raylab checkpoint"):
        run(make_config(tmp_path / "new", *SHORT, *CASES["dqn_local"], f"resume={tmp_path}"))
    assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file() and "new" not in p.parts} == before


def test_resume_without_checkpoints_names_the_fix(tmp_path):
    (tmp_path / "old").mkdir()
    with pytest.raises(RaylabError, match="no checkpoints in"):
        run(make_config(tmp_path / "new", *SHORT, *CASES["dqn_local"], f"resume={tmp_path / 'old'}"))


def test_driver_rng_state_round_trips():
    state = rng_state()
    expected = (random.random(), np.random.rand(), torch.rand(1).item())
    random.random(), np.random.rand(), torch.rand(3)
    set_rng_state(state)
    assert (random.random(), np.random.rand(), torch.rand(1).item()) == expected


def test_a_run_holds_its_dir_while_it_trains_and_a_resume_or_overwrite_there_meanwhile_is_refused(
    tmp_path, monkeypatch
):
    """raylab.train holds its run dir while it trains (a second process finds it in use), and lets it go when it
    ends; a resume of a dir another process trains in, or an overwrite of it, is one line and changes nothing."""
    import raylab.builders.run as builders
    from raylab.driver.outputs import hold_run_dir, in_use

    real, seen = builders.build_run, []

    def watched(cfg, *args, **kwargs):
        built = real(cfg, *args, **kwargs)
        train = built.run

        def run_and_look():
            seen.append(in_use(Path(cfg.run_dir)))
            return train()

        built.run = run_and_look
        return built

    monkeypatch.setattr(builders, "build_run", watched)
    run(make_config(tmp_path, *SHORT, *CASES["dqn_local"], "stop.env_steps=1000"))
    assert seen == [True] and not in_use(tmp_path)
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    with hold_run_dir(tmp_path):  # another process's run, training there now
        with pytest.raises(ConfigError, match=r"is in use: a run is training in it now: wait .* then resume it"):
            run(make_config(tmp_path / "new", *SHORT, *CASES["dqn_local"], f"resume={tmp_path}"))
        with pytest.raises(ConfigError, match=r"is in use: .*choose another hydra.run.dir \(nothing was changed\)"):
            run(make_config(tmp_path, *SHORT, *CASES["dqn_local"], "overwrite=true"))
    assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file() and "new" not in p.parts} == before

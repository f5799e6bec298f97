"""``bench learn --reuse`` resumes a long table from its own JSON: a finished run whose directory is gone is kept
from the output, a variant left out of this invocation stays in it, and the JSON is written after every run, so a
table stopped part-way keeps what it finished."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any

import pytest

from raylab.bench import learn
from raylab.bench.same_settings import settings_for
from raylab.errors import ConfigError
from raylab.learner.checkpoint import save_checkpoint

OVERRIDES = ["+experiment=atari_appo"]


def finished(run_dir: Path, score: float, overrides: list[str], seed: int) -> None:
    """A finished run's benchmark_metrics.json, greedy score ``score``, its config the one ``overrides`` resolve to
    (as ``raylab.train`` writes it)."""
    run_dir.mkdir(parents=True, exist_ok=True)  # a resumed run finishes in its own directory
    config = json.loads(json.dumps({**settings_for(overrides, seed).values, "run_dir": str(run_dir)}))
    report = {
        "config": config, "evals": [{"time_s": 5.0, "env_steps": 100, "return_mean": score}],
        "duration_hours": 10 / 3600, "stop_reason": "env steps", "total_timesteps": 1000, "total_updates": 10,
        "throughput": {"agent_steps_per_s": 100.0, "learner_updates_per_s": 1.0},
        "eval": {"return_mean": score, "return_std": 0.5, "episodes": 10},
    }  # fmt: skip
    (run_dir / "benchmark_metrics.json").write_text(json.dumps(report))


def invoke(
    tmp_path: Path,
    games: list[str],
    ran: list[str],
    stop_at: str | None = None,
    seeds: tuple[int, ...] = (0,),
    restart: bool = True,
    resume: bool = False,
    resumed: list[str] | None = None,
) -> int:
    """``make bench-atari-table ATARI_GAMES=<games>`` with a fake trainer that records which games it ran (and in
    ``resumed`` which it continued from a checkpoint), scores each by its name's length, and is stopped
    (KeyboardInterrupt) when it reaches ``stop_at``."""

    def run_one(
        variant: str, overrides: list[str], seed: int, run_dir: Path, source: Any = None, resume: bool = False
    ) -> dict[str, Any]:
        if variant == stop_at:
            raise KeyboardInterrupt
        ran.append(variant)
        if resume:
            assert resumed is not None and (run_dir / "checkpoints").is_dir()  # its files are still in place
            resumed.append(variant)
        else:
            assert not run_dir.exists()  # a fresh run never trains over an earlier one
        finished(run_dir, float(len(variant)), overrides, seed)
        return learn.read_run(variant, seed, run_dir, 1.0)

    args = argparse.Namespace(
        variant=[f"{g}=env.id={g}-v5" for g in games], source=[], seeds=list(seeds),
        output=str(tmp_path / "table.json"), runs_dir=str(tmp_path / "runs"), random_episodes=0,
        against_random=False, reuse=True, restart_unfinished=restart, resume_unfinished=resume,
    )  # fmt: skip
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(learn, "run_one", run_one)
        return learn.run(args, list(OVERRIDES))


def scores(tmp_path: Path) -> dict[str, float]:
    report = json.loads((tmp_path / "table.json").read_text())
    return {r["variant"]: r["final_eval_return"] for r in report["runs"]}


def test_a_table_stopped_part_way_keeps_what_it_finished_and_resumes_from_its_json(tmp_path):
    ran: list[str] = []
    with pytest.raises(KeyboardInterrupt):
        invoke(tmp_path, ["Breakout", "BeamRider"], ran, stop_at="BeamRider")
    assert ran == ["Breakout"] and scores(tmp_path) == {"Breakout": 8.0}  # written before the stop
    # the machine that ran it is gone with its outputs/: the JSON alone carries Breakout
    (tmp_path / "runs" / "Breakout_seed0").rename(tmp_path / "elsewhere")
    assert invoke(tmp_path, ["Breakout", "BeamRider"], ran) == 0
    assert ran == ["Breakout", "BeamRider"] and scores(tmp_path) == {"Breakout": 8.0, "BeamRider": 9.0}
    (breakout,) = (r for r in json.loads((tmp_path / "table.json").read_text())["runs"] if r["variant"] == "Breakout")
    assert breakout["recorded"]["cores"] >= 1  # the machine it ran on, kept when it is carried over again


def test_a_game_this_invocation_leaves_out_stays_in_the_table(tmp_path):
    ran: list[str] = []
    invoke(tmp_path, ["Breakout"], ran)
    invoke(tmp_path, ["SpaceInvaders"], ran)
    assert ran == ["Breakout", "SpaceInvaders"]
    report = json.loads((tmp_path / "table.json").read_text())
    assert report["variants"] == {"Breakout": ["env.id=Breakout-v5"], "SpaceInvaders": ["env.id=SpaceInvaders-v5"]}
    assert scores(tmp_path) == {"Breakout": 8.0, "SpaceInvaders": 13.0}
    assert set(report["summary"]) == {"Breakout", "SpaceInvaders"}


def test_a_recorded_run_of_other_settings_is_run_again_and_a_table_of_other_overrides_is_refused(tmp_path):
    ran: list[str] = []
    invoke(tmp_path, ["Breakout"], ran)
    (tmp_path / "runs" / "Breakout_seed0").rename(tmp_path / "elsewhere")
    report = json.loads((tmp_path / "table.json").read_text())
    report["variants"]["Breakout"] = ["env.id=Breakout-v5", "algo.lr=0.001"]  # recorded with another setting
    (tmp_path / "table.json").write_text(json.dumps(report))
    invoke(tmp_path, ["Breakout"], ran)
    assert ran == ["Breakout", "Breakout"]
    report = json.loads((tmp_path / "table.json").read_text())
    report["overrides"] = ["+experiment=pong_appo"]  # or another recipe altogether: it would be written over
    (tmp_path / "table.json").write_text(json.dumps(report))
    with pytest.raises(
        ConfigError, match=r"holds runs of other overrides \(\+experiment=pong_appo\).*another --output"
    ):
        invoke(tmp_path, ["Breakout"], ran)
    assert ran == ["Breakout", "Breakout"] and json.loads((tmp_path / "table.json").read_text()) == report


def test_a_seed_this_invocation_leaves_out_and_the_random_baselines_stay(tmp_path):
    ran: list[str] = []
    args = {"seeds": [0, 1]}
    invoke(tmp_path, ["Breakout"], ran, **args)
    report = json.loads((tmp_path / "table.json").read_text())
    report["random_policy"] = {"Breakout": {"episodes": 10, "return_mean": 1.2}}
    (tmp_path / "table.json").write_text(json.dumps(report))
    invoke(tmp_path, ["Breakout", "BeamRider"], ran)  # seed 0 only: seed 1's Breakout stays
    report = json.loads((tmp_path / "table.json").read_text())
    assert ran == ["Breakout", "Breakout", "BeamRider"]
    assert sorted((r["variant"], r["seed"]) for r in report["runs"]) == [
        ("BeamRider", 0),
        ("Breakout", 0),
        ("Breakout", 1),
    ]
    assert report["seeds"] == [0, 1] and report["summary"]["Breakout"]["runs"] == 2
    assert report["random_policy"] == {"Breakout": {"episodes": 10, "return_mean": 1.2}}


def test_a_finished_run_of_another_recipe_under_the_same_overrides_is_not_read_back(tmp_path):
    """The recipe a table names changed since a game ran (a new default in conf/experiment/atari_appo.yaml): the
    table's overrides read the same, the run's own settings do not. Its directory is moved aside and the game run
    again with --restart-unfinished, refused in one line without it; its record in the JSON is run again."""
    ran: list[str] = []
    invoke(tmp_path, ["Breakout", "BeamRider"], ran)
    old = tmp_path / "runs" / "Breakout_seed0"
    metrics = json.loads((old / "benchmark_metrics.json").read_text())
    metrics["config"]["algo"] = {"vtrace_lambda": 0.5}  # what the recipe said when it ran
    (old / "benchmark_metrics.json").write_text(json.dumps(metrics))
    args = {"restart": False}
    now = re.escape(repr(settings_for(OVERRIDES, 0).values["algo"]["vtrace_lambda"]))  # the recipe's λ today
    with pytest.raises(ConfigError, match=rf"ran with other settings .*algo\.vtrace_lambda was 0\.5, now {now}\b"):
        invoke(tmp_path, ["Breakout", "BeamRider"], ran, **args)
    assert ran == ["Breakout", "BeamRider"] and sorted(p.name for p in (tmp_path / "runs").iterdir()) == [
        "BeamRider_seed0", "Breakout_seed0",
    ]  # fmt: skip
    invoke(tmp_path, ["Breakout", "BeamRider"], ran)
    assert ran == ["Breakout", "BeamRider", "Breakout"]  # BeamRider read back, Breakout run again
    (aside,) = (tmp_path / "runs").glob("Breakout_seed0.other-settings-*")
    assert json.loads((aside / "benchmark_metrics.json").read_text()) == metrics  # nothing lost
    report = json.loads((tmp_path / "table.json").read_text())
    assert all(r["config"]["env"]["id"] == f"{r['variant']}-v5" for r in report["runs"])  # kept for the next check
    # the machine that ran them is gone: the JSON's records alone, one of them of the old recipe
    for run_dir in (tmp_path / "runs").iterdir():
        run_dir.rename(tmp_path / f"elsewhere-{run_dir.name}")
    report = json.loads((tmp_path / "table.json").read_text())
    (beamrider,) = (r for r in report["runs"] if r["variant"] == "BeamRider")
    beamrider["config"]["algo"] = {"vtrace_lambda": 0.5}
    (tmp_path / "table.json").write_text(json.dumps(report))
    invoke(tmp_path, ["Breakout", "BeamRider"], ran)
    assert ran == ["Breakout", "BeamRider", "Breakout", "BeamRider"]


def test_a_record_from_before_records_kept_their_settings_is_kept_unchecked(tmp_path, capsys):
    ran: list[str] = []
    invoke(tmp_path, ["Breakout"], ran)
    (tmp_path / "runs" / "Breakout_seed0").rename(tmp_path / "elsewhere")
    report = json.loads((tmp_path / "table.json").read_text())
    del report["runs"][0]["config"]
    (tmp_path / "table.json").write_text(json.dumps(report))
    invoke(tmp_path, ["Breakout"], ran)
    assert ran == ["Breakout"] and "Breakout seed 0: recorded without its settings, kept unchecked" in (
        capsys.readouterr().out
    )


def test_a_seed_this_invocation_does_not_run_is_kept_and_a_moved_runs_record_is_not(tmp_path, capsys):
    ran: list[str] = []
    invoke(tmp_path, ["Breakout"], ran, seeds=(0, 1))
    report = json.loads((tmp_path / "table.json").read_text())
    for record in report["runs"]:
        del record["config"]  # recorded before records kept their settings
    (tmp_path / "table.json").write_text(json.dumps(report))
    metrics = tmp_path / "runs" / "Breakout_seed0" / "benchmark_metrics.json"
    stale = json.loads(metrics.read_text())
    stale["config"]["algo"]["epochs"] = 9  # seed 0's directory says so
    metrics.write_text(json.dumps(stale))
    invoke(tmp_path, ["Breakout"], ran)  # seed 0 only
    assert ran == ["Breakout", "Breakout", "Breakout"]  # seed 0 again, though its record had no settings
    assert "Breakout seed 0: recorded without its settings" not in capsys.readouterr().out  # not said kept
    report = json.loads((tmp_path / "table.json").read_text())
    assert sorted(r["seed"] for r in report["runs"]) == [0, 1]  # seed 1 is not this invocation's to judge


def unfinished(run_dir: Path, overrides: list[str], seed: int, checkpoint: bool = True, **setting: Any) -> None:
    """What a stopped run leaves: its config.yaml and metrics.jsonl, and a periodic checkpoint at 1,000 env steps
    holding the config ``overrides`` resolve to (``setting``: algo keys changed in it)."""
    run_dir.mkdir(parents=True)
    (run_dir / "config.yaml").write_text("{}")
    (run_dir / "metrics.jsonl").write_text('{"env_steps": 1000}\n')
    if checkpoint:
        config = json.loads(json.dumps({**settings_for(overrides, seed).values, "run_dir": str(run_dir)}))
        config["algo"].update(setting)
        state = {"learner": {}, "counters": {"env_steps": 1000, "updates": 4, "episodes": 2}, "config": config}
        save_checkpoint(run_dir / "checkpoints" / "step_000000001000.pt", state)


def test_resume_unfinished_continues_a_stopped_run_from_its_checkpoint(tmp_path, capsys):
    """--resume-unfinished: a game stopped part-way continues from its newest checkpoint instead of starting
    over; one without a checkpoint, or whose checkpoint ran with other settings, starts over as with
    --restart-unfinished (moved aside, nothing deleted), each said in one line."""
    runs = tmp_path / "runs"
    unfinished(runs / "Breakout_seed0", [*OVERRIDES, "env.id=Breakout-v5"], 0)
    unfinished(runs / "BeamRider_seed0", [*OVERRIDES, "env.id=BeamRider-v5"], 0, checkpoint=False)
    unfinished(runs / "Asterix_seed0", [*OVERRIDES, "env.id=Asterix-v5"], 0, vtrace_lambda=0.5)
    ran: list[str] = []
    resumed: list[str] = []
    assert invoke(tmp_path, ["Breakout", "BeamRider", "Asterix"], ran, restart=False, resume=True, resumed=resumed) == 0
    assert ran == ["Breakout", "BeamRider", "Asterix"] and resumed == ["Breakout"]
    out = capsys.readouterr().out
    assert f"{runs / 'Breakout_seed0'} was not finished: resuming it from step_000000001000.pt at 1,000 env" in out
    assert f"{runs / 'BeamRider_seed0'} cannot be resumed (resume=" in out and "no checkpoints in" in out
    assert f"{runs / 'Asterix_seed0'} ran with other settings (algo.vtrace_lambda was 0.5, now " in out
    assert (runs / "Breakout_seed0" / "checkpoints" / "step_000000001000.pt").is_file()  # continued in place
    for game in ("BeamRider", "Asterix"):  # started over, the stopped run kept
        (aside,) = runs.glob(f"{game}_seed0.unfinished-*")
        assert (aside / "metrics.jsonl").read_text() == '{"env_steps": 1000}\n'
    assert scores(tmp_path) == {"Breakout": 8.0, "BeamRider": 9.0, "Asterix": 7.0}
    with pytest.raises(ConfigError, match="--resume-unfinished goes with --reuse"):
        args = argparse.Namespace(
            variant=["Pong=env.id=Pong-v5"], source=[], seeds=[0], output=str(tmp_path / "t.json"),
            runs_dir=str(runs), random_episodes=0, against_random=False, reuse=False, restart_unfinished=False,
            resume_unfinished=True,
        )  # fmt: skip
        learn.run(args, list(OVERRIDES))


def test_a_run_stopped_by_sigterm_is_resumed_not_read_back_and_restart_wins(tmp_path, capsys):
    """A run stopped by SIGTERM or Ctrl-C wrote final.pt and a report of its part (stop reason ``terminated``):
    --reuse does not read it back as a finished game; --resume-unfinished continues it, its partial report kept
    beside; --restart-unfinished given as well starts it over instead."""
    runs = tmp_path / "runs"
    for game in ("Breakout", "BeamRider"):
        unfinished(runs / f"{game}_seed0", [*OVERRIDES, f"env.id={game}-v5"], 0)
        finished(runs / f"{game}_seed0", 1.0, [*OVERRIDES, f"env.id={game}-v5"], 0)
        report = json.loads((runs / f"{game}_seed0" / "benchmark_metrics.json").read_text())
        (runs / f"{game}_seed0" / "benchmark_metrics.json").write_text(
            json.dumps({**report, "stop_reason": "terminated"})
        )
    ran: list[str] = []
    with pytest.raises(ConfigError, match=r"Breakout_seed0 already holds a run .*continue it with --resume-unfinished"):
        invoke(tmp_path, ["Breakout"], ran, restart=False)
    resumed: list[str] = []
    assert invoke(tmp_path, ["Breakout"], ran, restart=False, resume=True, resumed=resumed) == 0
    assert ran == resumed == ["Breakout"] and scores(tmp_path) == {"Breakout": 8.0}
    (partial,) = (runs / "Breakout_seed0").glob("benchmark_metrics.terminated-*.json")
    assert json.loads(partial.read_text())["stop_reason"] == "terminated"  # kept beside the finished report
    assert invoke(tmp_path, ["BeamRider"], ran, restart=True, resume=True, resumed=resumed) == 0
    assert ran == ["Breakout", "BeamRider"] and resumed == ["Breakout"]  # started over, moved aside
    (aside,) = runs.glob("BeamRider_seed0.unfinished-*")
    assert json.loads((aside / "benchmark_metrics.json").read_text())["stop_reason"] == "terminated"
    assert "BeamRider_seed0 was not finished: resuming" not in capsys.readouterr().out


def test_a_resumed_run_is_trained_with_resume_into_its_own_directory(tmp_path, monkeypatch):
    """run_one(resume=True) runs ``raylab.train <overrides> seed=N hydra.run.dir=D resume=D``."""
    calls: list[list[str]] = []

    def train(cmd: list[str], **kwargs: Any) -> Any:
        calls.append(cmd)
        return argparse.Namespace(returncode=1, stdout="", stderr="stopped")

    monkeypatch.setattr(learn.subprocess, "run", train)
    run_dir = tmp_path / "Breakout_seed0"
    result = learn.run_one("Breakout", ["env.id=Breakout-v5"], 3, run_dir, resume=True)
    assert not result["ok"] and calls[0][-4:] == [
        "env.id=Breakout-v5", "seed=3", f"hydra.run.dir={run_dir.resolve()}", f"resume={run_dir.resolve()}",
    ]  # fmt: skip
    learn.run_one("Breakout", ["env.id=Breakout-v5"], 3, run_dir)
    assert not any(arg.startswith("resume=") for arg in calls[1])

"""``python -m raylab.evaluate``: scores a run's checkpoint with the greedy policy and writes a playable video."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from raylab.errors import ConfigError
from raylab.evaluate import EvaluateArgs, evaluate, main, parse_args
from raylab.train import run
from tests.conftest import FAKE, make_config, metrics_rows

ENV = {**os.environ, "WANDB_MODE": "disabled"}
SHORT = (
    "logger.console=false", "eval.every_seconds=null", "stop.mean_return=null", "eval.final_episodes=2",
    "checkpoint.every_seconds=1",
)  # fmt: skip


def evaluate_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "raylab.evaluate", *args], capture_output=True, text=True, env=ENV, timeout=300
    )


@pytest.fixture(scope="module")
def dqn_run(tmp_path_factory) -> Path:
    run_dir = tmp_path_factory.mktemp("dqn")
    run(make_config(run_dir, "+experiment=cartpole_dqn", "topology=local", "stop.seconds=3", *SHORT))
    return run_dir


def test_cli_prints_the_score_and_writes_a_playable_mp4(dqn_run):
    import imageio.v2 as imageio

    proc = evaluate_cli(f"run_dir={dqn_run}", "episodes=3", "video=true")
    assert proc.returncode == 0, proc.stderr
    assert "return" in proc.stdout and "over 3 episodes" in proc.stdout
    out = json.loads((dqn_run / "eval" / "final.json").read_text())
    assert out["episodes"] == 3 and len(out["returns"]) == 3
    assert np.isclose(out["return_mean"], np.mean(out["returns"]))
    video = Path(out["video"]["path"])
    assert video == dqn_run / "videos" / "final.mp4" and str(video) in proc.stdout
    reader = imageio.get_reader(video)  # decodes: the file plays
    assert reader.count_frames() == out["video"]["frames"] == out["video"]["episode_length"] + 1
    frame = reader.get_data(0)
    assert frame.shape == (400, 600, 3) and frame.std() > 0  # CartPole drawn off screen, not a blank frame


def test_periodic_checkpoint_and_gif(dqn_run, tmp_path):
    from PIL import Image

    steps = sorted((dqn_run / "checkpoints").glob("step_*.pt"))
    assert steps, "checkpoint.every_seconds=1 wrote periodic checkpoints"
    args = EvaluateArgs(
        run_dir=str(dqn_run), checkpoint=steps[0].name, episodes=2, video=True, video_format="gif",
        video_path=str(tmp_path / "ep.gif"), max_video_steps=40,
    )  # fmt: skip
    out = evaluate(args)
    assert out["episodes"] == 2 and out["checkpoint"] == str(steps[0])
    gif = Image.open(tmp_path / "ep.gif")
    assert out["video"]["frames"] <= 41 and gif.n_frames > 1
    durations = []
    for i in range(gif.n_frames):  # Pillow merges repeated frames into longer ones: the total time is kept
        gif.seek(i)
        durations.append(gif.info["duration"])
    assert sum(durations) == out["video"]["frames"] * round(1000 / out["video"]["fps"])


def test_a3c_checkpoints_hold_the_policy_too(tmp_path):
    run(make_config(tmp_path, "+experiment=cartpole_a3c", "topology=local", "stop.seconds=2", *SHORT))
    for name in ("final.pt", "latest"):
        out = evaluate(EvaluateArgs(run_dir=str(tmp_path), checkpoint=name, episodes=2))
        assert out["episodes"] == 2 and out["policy_version"] > 0


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["episodes=3"], "run_dir is required"),
        (["run_dir=/nonexistent/run"], "run_dir /nonexistent/run does not exist"),
        (["run_dir=.", "epsiodes=3"], "unknown option 'epsiodes': valid options are run_dir, checkpoint, episodes"),
        (["run_dir=.", "video=maybe"], "video must be true or false"),
        (["run_dir=.", "video_format=avi"], "choose mp4 or gif"),
        (["run_dir=."], "config.yaml not found: run_dir must be a raylab run directory"),
    ],
)
def test_bad_input_is_one_line(args, expected, tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "raylab.evaluate", *args], capture_output=True, text=True, env=ENV, timeout=120,
        cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 2
    assert proc.stderr.startswith("raylab: error: ") and expected in proc.stderr, proc.stderr
    assert proc.stderr.count("\n") == 1


def test_missing_or_corrupt_checkpoint_is_one_line(dqn_run, tmp_path):
    proc = evaluate_cli(f"run_dir={dqn_run}", "checkpoint=step_9.pt")
    assert proc.returncode == 2 and "checkpoint 'step_9.pt' not found" in proc.stderr and "final.pt" in proc.stderr
    bad = tmp_path / "bad.pt"
    bad.write_bytes(b"not a checkpoint")
    proc = evaluate_cli(f"run_dir={dqn_run}", f"checkpoint={bad}")
    assert proc.returncode == 2 and "is corrupt or not a raylab checkpoint" in proc.stderr
    assert proc.stderr.count("\n") == 1


def test_parse_args_types():
    args = parse_args(["+run_dir=x", "episodes=4", "video=true", "fps=12", "seed=null"])
    assert args == EvaluateArgs(run_dir="x", episodes=4, video=True, fps=12, seed=None)


def test_env_options_change_the_evaluation_envs_only_are_recorded_and_write_over_nothing(tmp_path):
    """``env_options.<name>=<value>`` (Mario's env_options.repress_jump=true): the evaluation envs take them over
    the run's, the JSON records them beside the seed, an option that changes the policy's spaces is refused in
    one line, and each evaluation gets a file of its own."""
    run_dir = tmp_path / "fake"
    run(make_config(run_dir, *FAKE, "topology=local", "stop.env_steps=600", "replay.min_size=100",
                    "learner.batch_size=16", *SHORT))  # fmt: skip
    plain = evaluate(EvaluateArgs(run_dir=str(run_dir), episodes=2))
    short = evaluate(parse_args([f"run_dir={run_dir}", "episodes=2", "env_options.episode_length=5"]))
    assert plain["lengths"] == [20, 20] and short["lengths"] == [5, 5]
    assert (plain["env_options"], short["env_options"]) == ({}, {"episode_length": 5})
    assert short["eval_env_options"] == {"episode_length": 5}
    assert plain["seed"] == short["seed"] == 0
    assert sorted(p.name for p in (run_dir / "eval").iterdir()) == ["final-2.json", "final.json"]
    refused = r"^env_options\.num_actions=3: eval\.env_options=\{'num_actions': 3\} change the env's observation or"
    with pytest.raises(ConfigError, match=refused):
        evaluate(parse_args([f"run_dir={run_dir}", "env_options.num_actions=3"]))
    with pytest.raises(ConfigError, match=r"'env_options\.' names no env option: write env_options\.<name>=<value>"):
        parse_args([f"run_dir={run_dir}", "env_options.=3"])
    with pytest.raises(ConfigError, match=r"^env_options takes one option per argument: write env_options\.<name>="):
        parse_args([f"run_dir={run_dir}", "env_options={episode_length: 5}"])
    parsed = parse_args(["run_dir=x", "env_options.a=1e-5", "env_options.b=yes", "env_options.c=[84,84]"]).env_options
    assert parsed == {"a": 1e-5, "b": "yes", "c": [84, 84]}  # as raylab.train reads them (Hydra's grammar)


def test_a_dict_observation_run_is_scored_and_filmed(tmp_path):
    """MiniGrid's own id (an image, a direction, a mission): the checkpoint loads with its KeyedEncoder, the
    greedy policy is scored and the raw game is filmed."""
    pytest.importorskip("minigrid")
    run_dir = tmp_path / "doorkey"
    run(make_config(run_dir, "+experiment=minigrid_doorkey_ppo", "topology=local", "stop.env_steps=4096", *SHORT))
    out = evaluate(EvaluateArgs(run_dir=str(run_dir), episodes=2, video=True, video_format="gif",
                                video_path=str(tmp_path / "doorkey.gif"), max_video_steps=30))  # fmt: skip
    assert out["episodes"] == 2 and len(out["returns"]) == 2
    assert out["video"]["frames"] >= 2 and (tmp_path / "doorkey.gif").stat().st_size > 0


def test_a_run_stops_on_an_episode_value_and_each_episode_s_value_is_reported(tmp_path, capsys):
    """Snake's episodes report snake_length (Mario's flag_get, the same way): stop.eval_extras stops the run
    on a greedy evaluation's mean of it (a snake starts 3 long, so the first evaluation meets 3), the metrics
    rows carry it, and raylab.evaluate prints and writes each episode's value."""
    run_dir = tmp_path / "snake"
    summary = run(make_config(
        run_dir, "+experiment=snake_dqn", "topology=local", "env.options.hunger_limit=15", *SHORT,
        "eval.every_seconds=1", "eval.episodes=2", "eval.confirm_episodes=2", "stop.seconds=120",
        "stop.eval_extras={snake_length: 3}",
    ))  # fmt: skip
    assert summary.stop_reason.startswith("eval snake_length mean "), summary.stop_reason
    assert summary.stop_reason.endswith(" >= stop.eval_extras.snake_length=3")
    assert summary.benchmark["evals"][-1]["snake_length_mean"] >= 3
    assert any("eval/snake_length_mean" in row for row in metrics_rows(run_dir))
    main([f"run_dir={run_dir}", "episodes=3"])
    printed = capsys.readouterr().out
    out = json.loads((run_dir / "eval" / "final.json").read_text())
    assert set(out["extras"]) == {"snake_length", "score"} and all(len(v) == 3 for v in out["extras"].values())
    assert out["extras_mean"]["snake_length"] == pytest.approx(np.mean(out["extras"]["snake_length"]))
    shown = ", ".join(f"{v:g}" for v in out["extras"]["snake_length"])
    assert f"raylab: snake_length: mean {out['extras_mean']['snake_length']:.3g} ({shown})" in printed


def test_starts_every_scores_each_noop_start_once_and_says_which_each_episode_played(tmp_path, capsys):
    """A run trained with eval.starts=every evaluates every no-op start in its final evaluation;
    raylab.evaluate does the same by default for it (starts=random draws them), prints and writes which start
    each episode played, and refuses in one line an episode count that is not whole rounds of the starts."""
    run_dir = tmp_path / "fake"
    summary = run(make_config(run_dir, *FAKE, "topology=local", "stop.env_steps=600", "replay.min_size=100",
                              "learner.batch_size=16", *SHORT, "env.noop_max=3", "eval.starts=every",
                              "eval.episodes=4", "eval.confirm_episodes=0", "eval.final_episodes=4"))  # fmt: skip
    assert summary.benchmark["eval"]["episodes"] == 4 and sorted(summary.benchmark["eval"]["starts"]) == [0, 1, 2, 3]
    main([f"run_dir={run_dir}", "episodes=8"])
    out = json.loads((run_dir / "eval" / "final.json").read_text())
    assert sorted(out["starts"]) == [0, 0, 1, 1, 2, 2, 3, 3] and len(out["returns"]) == 8
    assert f"raylab: no-op starts: {', '.join(str(k) for k in out['starts'])}" in capsys.readouterr().out
    assert evaluate(parse_args([f"run_dir={run_dir}", "episodes=3", "starts=random"]))["starts"] is None
    with pytest.raises(ConfigError, match=r"^starts=every \(the run's eval\.starts\) plays each of the 4 no-op starts"
                                          r" \(env\.noop_max=3\) once per 4 episodes: pass episodes=4"):  # fmt: skip
        evaluate(parse_args([f"run_dir={run_dir}", "episodes=3"]))
    with pytest.raises(ConfigError, match=r"^unknown starts 'all': choose random or every"):
        parse_args([f"run_dir={run_dir}", "starts=all"])

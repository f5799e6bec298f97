"""Mario learns (slow tier): a short ``mario_dqn`` run carries the greedy policy well past where it starts.

The run is the project's own command with a nearer stop: a confirmed greedy evaluation whose mean x-position
reaches 900 (past the four pipes of World 1-1; the flag is at about 3,160). Greedy evaluations every 2 minutes,
5 episodes confirmed by 5 more, so the test waits for the event it checks; ``stop.seconds`` is only a guard
against a run that never learns."""

import pytest

from raylab.train import run
from tests.conftest import make_config

X_POS = 900
GUARD_SECONDS = 5400  # stop.seconds: the run's own guard; pytest-timeout's 900 s default would end it first

pytestmark = [
    pytest.mark.slow, pytest.mark.distributed, pytest.mark.usefixtures("ray_session"),
    pytest.mark.timeout(GUARD_SECONDS + 600),  # the guard, then start-up, the final checkpoint and Ray's teardown
]  # fmt: skip


def test_a_short_mario_run_carries_the_greedy_policy_past_its_start(tmp_path):
    summary = run(
        make_config(
            tmp_path, "+experiment=mario_dqn", "logger.console=false", "seed=0", "stop.env_steps=null",
            f"stop.seconds={GUARD_SECONDS}", "stop.eval_extras=null", f"+stop.eval_extras.x_pos={X_POS}",
            "eval.every_seconds=120", "eval.episodes=5", "eval.confirm_episodes=5", "eval.final_episodes=0",
        )
    )  # fmt: skip
    assert summary.stop_reason.endswith(f">= stop.eval_extras.x_pos={X_POS}"), summary.stop_reason
    evals = summary.benchmark["evals"]
    first, last = evals[0]["x_pos_mean"], evals[-1]["x_pos_mean"]
    assert last >= X_POS and last >= first + 300, (first, last)  # it moved on from where the greedy policy began

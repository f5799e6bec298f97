"""The console summary line."""

from raylab.metrics.loggers import format_row
from raylab.metrics.numbers import fmt_return


def test_console_summary_line():
    base = {"time_s": 5.0, "env_steps": 1000, "throughput/env_steps_per_s": 200.0, "updates": 10,
            "throughput/updates_per_s": 2.0}  # fmt: skip
    line = format_row({**base, "eval/return_mean": 0.0, "lag/mean": 0.0, "rollout/env_restarts": 0})
    assert line.endswith("eval 0.000 | lag 0") and "restarts" not in line
    line = format_row({**base, "episode/x_pos_mean": 700.4, "rollout/env_restarts": 3})
    assert "x_pos 700" in line and "env restarts 3" in line


def test_console_line_carries_seed_001s_fields():
    """processed, batches (updates), drops, buffer, queue, loss, TD error, reward, x_pos, epsilon."""
    row = {
        "time_s": 5.0, "env_steps": 1000, "throughput/env_steps_per_s": 200.0, "updates": 10,
        "throughput/updates_per_s": 2.0, "replay/inserted": 50_000, "replay/size": 45_000,
        "queue/rollouts_in_flight": 2, "queue/parked_workers": 1, "learner/dropped_chunks": 0,
        "episode/return_mean": 125.5, "episode/x_pos_mean": 1523.4, "learner/loss": 0.0234,
        "learner/td_error": 0.0156, "rollout/epsilon_mean": 0.75,
    }  # fmt: skip
    line = format_row(row)
    for part in ("processed 50,000", "buffer 45,000", "queue 2", "parked 1", "return 125.5", "x_pos 1523",
                 "loss 0.0234", "TD error 0.0156", "epsilon 0.750", "updates 10"):  # fmt: skip
        assert part in line, (part, line)
    assert "drops" not in line  # hidden while nothing was dropped
    assert "drops 3" in format_row({**row, "learner/dropped_chunks": 3})


def test_returns_keep_the_decimals_their_scale_needs():
    """A FrozenLake success rate or a Blackjack mean is not rounded to "0.7" or "-0.0"; Pong's stays short."""
    assert [fmt_return(x) for x in (475.0, -20.24, 1.25, 0.718, -0.0408, 0.0)] == [
        "475.0", "-20.2", "1.25", "0.718", "-0.041", "0.000"]  # fmt: skip
    row = {"time_s": 1.0, "env_steps": 1, "throughput/env_steps_per_s": 1.0, "updates": 1,
           "throughput/updates_per_s": 1.0, "episode/return_mean": -0.0408, "eval/return_mean": 0.718}  # fmt: skip
    line = format_row(row)
    assert "return -0.041" in line and "eval 0.718" in line, line

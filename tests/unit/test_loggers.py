"""The console summary line."""

from raylab.metrics.loggers import format_row


def test_console_summary_line():
    base = {"time_s": 5.0, "env_steps": 1000, "throughput/env_steps_per_s": 200.0, "updates": 10,
            "throughput/updates_per_s": 2.0}  # fmt: skip
    line = format_row({**base, "eval/return_mean": 0.0, "lag/mean": 0.0, "rollout/env_restarts": 0})
    assert line.endswith("eval 0.0 | lag 0") and "restarts" not in line
    line = format_row({**base, "episode/x_pos_mean": 700.4, "rollout/env_restarts": 3})
    assert "x_pos 700" in line and "env restarts 3" in line

"""Learning where memory is needed (slow tier, `make test-all`): each memory experiment reaches its task's bar on
one seed, a bar that the same experiment without its core does not reach (benchmarks/memory_tasks.py runs both
side by side: make bench-memory). The bars sit at or under what the benchmark runs of 2026-11-26 reached on a
2-core CPU, the budgets well over their times:

- StatelessCartPole-v1, a training return of 350 (RLlib's bar): APPO-LSTM 17 s, PPO-LSTM 48 s (medians of 2
  seeds; the MLP control never passes in 2M env steps);
- POPGym RepeatPreviousEasy, 0.9 (the task's maximum is 1): PPO-GRU at 86 s / 0.39M env steps (the MLP control's
  best in 300 s: -0.39);
- POPGym CountRecallEasy, -0.6 (uniform random play: -0.93): PPO-LSTM at 106 s / 0.37M (the MLP's best: -0.87);
- MiniGrid Memory S7 through a 3x3 one-hot view, 0.8 (a memoryless policy picks the right end half the time,
  about 0.5): PPO-LSTM at 621 s / 3.6M, after 3.5M env steps at the memoryless level.
"""

import pytest

from raylab.train import run
from tests.conftest import make_config

pytestmark = [pytest.mark.slow, pytest.mark.distributed, pytest.mark.usefixtures("ray_session")]


@pytest.mark.parametrize(
    ("experiment", "bar", "seconds"),
    [
        ("stateless_cartpole_appo_lstm", 350, 600),
        ("stateless_cartpole_ppo_lstm", 350, 600),
        ("popgym_repeat_previous_ppo_gru", 0.9, 600),
        ("popgym_count_recall_ppo_lstm", -0.6, 600),
        ("minigrid_memory_onehot_ppo_lstm", 0.8, 1800),
    ],
)
def test_a_recurrent_policy_reaches_its_memory_tasks_bar(tmp_path, experiment, bar, seconds):
    """The mean return of the last 100 training episodes reaches ``bar`` within ``seconds`` of training."""
    cfg = make_config(
        tmp_path,
        f"+experiment={experiment}",
        "logger.console=false",
        "seed=0",
        f"stop.train_return={bar}",
        "stop.mean_return=null",
        "stop.env_steps=null",
        f"stop.seconds={seconds}",
        "eval.every_seconds=null",
        "eval.final_episodes=10",
    )
    assert cfg.model.recurrent != "none"
    summary = run(cfg)
    assert summary.stop_reason.startswith("training return"), summary.stop_reason
    assert summary.train_seconds < seconds

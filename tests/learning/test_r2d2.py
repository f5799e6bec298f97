"""R2D2 learning on StatelessCartPole-v1 (CartPole without the velocities: memory is needed): the
stateless_cartpole_r2d2 experiment reaches a confirmed greedy mean return of 350, the RLlib memory examples'
pass mark, in one process (about a minute and 0.3-0.5M env steps on a 2-core CPU)."""

import pytest

from raylab.train import run
from tests.conftest import make_config


@pytest.mark.slow
def test_r2d2_solves_stateless_cartpole(tmp_path):
    summary = run(
        make_config(tmp_path, "+experiment=stateless_cartpole_r2d2", "topology=local", "logger.console=false", "seed=0")
    )
    assert summary.stop_reason.startswith("eval return")
    assert summary.benchmark["evals"][-1]["return_mean"] >= 350
    assert summary.eval_return_mean is not None and summary.eval_return_mean >= 300
    assert summary.env_steps <= 1_000_000

"""snake_a3c learns: the greedy policy eats far more food than a random one (which dies with score ~0)."""

import pytest

from raylab.train import run
from tests.conftest import make_config


@pytest.mark.slow
@pytest.mark.distributed
@pytest.mark.usefixtures("ray_session")
def test_snake_a3c_eats(tmp_path):
    summary = run(make_config(tmp_path, "+experiment=snake_a3c", "logger.console=false", "stop.seconds=60"))
    assert summary.eval_return_mean is not None and summary.eval_return_mean >= 10  # foods per episode
    assert summary.benchmark["episode_extras"]["snake_length"] >= 10  # starts at 3

"""learner.lr_schedule: the schedule's math, a new lr reaching every update path on the next step (and a
compiled step taking it without recompiling), the learner host applying it per call from the run's env steps,
a resumed learner keeping its own lr, and the config refusing what cannot work."""

from __future__ import annotations

import pytest
import torch

from raylab.errors import ConfigError
from raylab.hosts import LearnerHost
from raylab.learner.schedule import LrSchedule
from tests.conftest import FAKE, make_config
from tests.unit.test_learner_objectives import inputs, make, params


def test_linear_moves_from_lr_to_final_over_the_horizon_then_holds():
    s = LrSchedule("linear", 1e-3, 1e-4, horizon=1000)
    assert s.at(0) == pytest.approx(1e-3)
    assert s.at(500) == pytest.approx(5.5e-4)
    assert s.at(1000) == pytest.approx(1e-4)
    assert s.at(5000) == pytest.approx(1e-4)
    assert LrSchedule("constant", 3e-4).at(10**9) == 3e-4
    with pytest.raises(ValueError, match="horizon"):
        LrSchedule("linear", 1e-3)


PATHS = {
    "autograd": ("appo", {"fused": False}),
    "fused_ppo": ("appo", {"fused": "auto"}),
    "fused_dqn": ("dqn", {"fused": "auto"}),
    "compiled": ("appo", {"compile": True}),
}


@pytest.mark.parametrize("path", list(PATHS))
def test_a_new_lr_reaches_the_next_step_on_every_update_path(path):
    """lr 0 freezes the parameters exactly (Adam's step is lr times the rest); back at 1e-3 they move again. A
    compiled step reads the lr as a tensor: no recompile for a new one."""
    algo, opts = PATHS[path]
    learner = make(algo, **opts)
    assert learner.fused == (opts.get("fused") == "auto")
    first, second, third = inputs(algo, calls=3)
    learner.update_many(first)
    learner.set_lr(0.0)
    frozen = params(learner).clone()
    with torch._dynamo.config.patch(error_on_recompile=True):
        learner.update_many(second)
        assert torch.equal(params(learner), frozen)
        learner.set_lr(1e-3)
        learner.update_many(third)
    assert not torch.equal(params(learner), frozen)
    assert learner.lr == 1e-3


def test_the_learner_host_sets_each_calls_lr_from_the_runs_env_steps_and_reports_it():
    host = LearnerHost(lambda: make("appo"), LrSchedule("linear", 1e-3, 0.0, horizon=1000))
    calls = inputs("appo", calls=3)
    lrs = []
    for env_steps, chunks in zip((0, 750, 4000), calls, strict=True):
        stats, _, _ = host.update(*chunks, env_steps=env_steps)
        lrs.append(stats.metrics["lr"])
        assert host.learner.lr == lrs[-1]
    assert lrs == pytest.approx([1e-3, 2.5e-4, 0.0])
    constant = LearnerHost(lambda: make("appo"))
    stats, _, _ = constant.update(*calls[0], env_steps=500)
    assert "lr" not in stats.metrics and constant.learner.lr == 1e-3


def test_a_resumed_learner_keeps_its_own_lr_not_the_checkpoints():
    saved = make("appo")
    saved.set_lr(5e-5)
    saved.update_many(inputs("appo", calls=1)[0])
    resumed = make("appo")  # made with learner.lr=1e-3, as a resumed run with a new learner.lr would be
    resumed.load_state_dict(saved.state_dict())
    assert resumed.lr == 1e-3
    torch.testing.assert_close(params(resumed), params(saved), rtol=0, atol=0)


def test_the_config_refuses_a_schedule_that_cannot_work(tmp_path):
    with pytest.raises(ConfigError, match=r"moves the lr over stop\.env_steps, which is not set: set stop\.env_steps"):
        make_config(tmp_path, *FAKE, "learner.lr_schedule=linear", "stop.env_steps=null", "stop.seconds=10")
    with pytest.raises(ConfigError, match=r"learner\.lr_final must be >= 0"):
        make_config(tmp_path, *FAKE, "learner.lr_schedule=linear", "learner.lr_final=-1e-4")
    with pytest.raises(ConfigError, match=r"add learner\.lr_schedule=linear or remove learner\.lr_final"):
        make_config(tmp_path, *FAKE, "learner.lr_final=1e-5")
    with pytest.raises(ConfigError, match=r"^learner\.lr_schedule=linear applies to algo=dqn/ppo/appo .*not algo=a3c"):
        make_config(tmp_path, *FAKE, "algo=a3c", "topology=a3c", "learner.lr_schedule=linear")
    cfg = make_config(tmp_path, *FAKE, "learner.lr_schedule=linear", "learner.lr_final=1e-5", "stop.env_steps=500")
    assert (cfg.learner.lr_schedule, cfg.learner.lr_final) == ("linear", 1e-5)

"""topology.num_workers=auto / envs_per_worker=auto: the choice rules, the probe's arithmetic, and the refusals."""

import json

import pytest
import yaml

from raylab.builders import autosize
from raylab.builders.autosize import Sizing, choose_envs, costs_from_rows, overlapped_workers
from raylab.config import resolve
from raylab.errors import ConfigError
from raylab.train import compose


def composed(*overrides: str) -> dict:
    from raylab.config.coerce import to_container

    return to_container(compose(list(overrides)))


def test_fewest_envs_within_the_tolerance_of_the_best_rate():
    assert choose_envs({4: 50.0, 8: 80.0, 16: 95.0, 32: 100.0}) == 16  # 95 >= 0.9 x 100
    assert choose_envs({4: 50.0, 8: 80.0, 16: 85.0, 32: 100.0}) == 32
    assert choose_envs({8: 100.0, 16: 99.0}) == 8


def test_overlapped_workers_split_the_cores_by_cost_plus_a_spare():
    # a learner three times as dear as acting: a quarter of 8 cores acts -> 2 workers, and 1 spare
    assert overlapped_workers(8, 1.0, 3.0) == 3
    assert overlapped_workers(16, 1.0, 1.0) == 9
    # pong_appo's probe on 2 cores at 2 epochs a call (0.51 ms acting, 0.99 ms learning per step): 1 + the spare
    assert overlapped_workers(2, 0.51e-3, 0.99e-3) == 2
    assert overlapped_workers(2, 3.0, 1.0) == 2  # never more than the cores
    assert overlapped_workers(16, 1.0, 0.0) == 16  # nothing to learn: every core acts
    assert overlapped_workers(4, 0.0, 1.0) == 1  # nothing to act: one


def test_step_costs_sum_the_timers_after_the_first_report():
    rows = [
        {"env_steps": 100, "timing/rollout/env_s": 9.0, "timing/learner/update_s": 9.0},  # warm-up: left out
        {"env_steps": 1100, "timing/rollout/env_s": 1.0, "timing/rollout/inference_s": 0.5,
         "timing/rollout/wait_s": 7.0, "timing/learner/update_s": 2.0, "timing/learner/wait_s": 5.0},
        {"env_steps": 2100, "timing/rollout/env_s": 1.0, "timing/rollout/inference_s": 0.5,
         "timing/replay/add_s": 0.5, "timing/replay/sample_s": 0.5, "timing/learner/update_s": 1.0,
         "timing/driver/wait_s": 3.0},
    ]  # fmt: skip
    t_r, t_l = costs_from_rows(rows)
    assert t_r == pytest.approx(3.0 / 2000) and t_l == pytest.approx(4.0 / 2000)
    with pytest.raises(ConfigError, match="too little"):
        costs_from_rows(rows[:1])


def test_nothing_auto_is_left_as_it_is():
    data = composed("+experiment=cartpole_appo")
    filled, sizing = autosize.fill(data)
    assert sizing is None and filled == data


def test_resolve_refuses_auto_in_one_line_naming_the_probe():
    with pytest.raises(ConfigError, match=r"topology.num_workers=auto is sized by python -m raylab.train's probe"):
        resolve(composed("topology.num_workers=auto"))


def test_a_cluster_is_not_probed(monkeypatch):
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    with pytest.raises(ConfigError, match=r"probes this machine, not a cluster's nodes .*give topology.num_workers"):
        autosize.fill(composed("topology.num_workers=auto", "ray.address=10.0.0.1:6379"))


def test_other_mistakes_fail_before_any_probe(monkeypatch):
    monkeypatch.setattr(autosize, "probe", lambda *a: pytest.fail("probed a config that does not resolve"))
    with pytest.raises(ConfigError, match=r"learner\.batch_size must be an integer"):
        autosize.fill(composed("topology.num_workers=auto", "learner.batch_size=many"))


def test_resume_keeps_the_resumed_runs_sizes(tmp_path, monkeypatch):
    monkeypatch.setattr(autosize, "probe", lambda *a: pytest.fail("probed a resumed run"))
    (tmp_path / "config.yaml").write_text(yaml.safe_dump({"topology": {"num_workers": 3, "envs_per_worker": 12}}))
    data = composed("topology.num_workers=auto", "topology.envs_per_worker=auto", f"resume={tmp_path}")
    filled, sizing = autosize.fill(data)
    assert (filled["topology"]["num_workers"], filled["topology"]["envs_per_worker"]) == (3, 12)
    assert sizing is not None and "resumed run" in sizing.reason
    with pytest.raises(ConfigError, match="does not exist: pass the run dir"):
        autosize.fill(composed("topology.num_workers=auto", f"resume={tmp_path / 'nope'}"))


@pytest.mark.parametrize(
    ("experiment", "alternating"), [("cartpole_ppo", True), ("cartpole_a3c", True), ("cartpole_appo", False)]
)
def test_the_topologys_dataflow_decides_the_workers(monkeypatch, experiment, alternating):
    monkeypatch.setattr(autosize, "step_costs", lambda cfg, envs: (1.0, 3.0))  # the learner 3x acting's cost
    data = composed(f"+experiment={experiment}", "topology.num_workers=auto", "ray.num_cpus=8")
    filled, sizing = autosize.fill(data)
    assert sizing is not None
    # alternating: one worker per core; overlapping: ceil(8 x 1/4) + 1 = 3
    assert filled["topology"]["num_workers"] == sizing.num_workers == (8 if alternating else 3)
    assert filled["topology"]["envs_per_worker"] == data["topology"]["envs_per_worker"]  # not auto: kept
    resolve(filled)  # what the probe filled in resolves


def test_a_real_probe_on_cartpole_appo(tmp_path, monkeypatch):
    """The probe end to end in this process (no Ray): envs measured at every candidate, the local topology's
    timers read, the choice written as autosize.json."""
    monkeypatch.setattr(autosize, "ENV_PROBE_S", 0.2)
    monkeypatch.setattr(autosize, "LEARNER_PROBE_S", 2.5)
    data = composed("+experiment=cartpole_appo", "topology.num_workers=auto", "topology.envs_per_worker=auto",
                    "ray.num_cpus=2")  # fmt: skip
    filled, sizing = autosize.fill(data, run_dir=str(tmp_path))
    assert isinstance(sizing, Sizing)
    assert set(sizing.env_rates) == set(autosize.ENV_CANDIDATES) and all(r > 0 for r in sizing.env_rates.values())
    assert sizing.envs_per_worker == choose_envs(sizing.env_rates)
    assert sizing.rollout_s_per_step and sizing.learner_s_per_step
    assert sizing.num_workers == overlapped_workers(2, sizing.rollout_s_per_step, sizing.learner_s_per_step)
    cfg = resolve(filled, run_dir=str(tmp_path))
    assert cfg.topology.num_workers == sizing.num_workers and cfg.topology.envs_per_worker == sizing.envs_per_worker
    sizing.write(tmp_path)
    written = json.loads((tmp_path / "autosize.json").read_text())
    assert written["num_workers"] == sizing.num_workers and "overlaps acting and learning" in written["reason"]
    assert sizing.line().startswith("raylab: auto: topology.num_workers=")


def test_central_inference_on_cpus_splits_the_cores_three_ways(monkeypatch):
    # env 2, inference 1, learner 1 per step on 8 cores: half the cores step envs (4 + the spare), a quarter act
    monkeypatch.setattr(autosize, "step_costs", lambda cfg, envs, split=False: (2.0, 1.0, 1.0))
    monkeypatch.setattr("torch.cuda.is_available", lambda: False)
    data = composed("+experiment=pong_appo", "topology.inference=central", "topology.num_workers=auto",
                    "topology.inference_actors=auto", "ray.num_cpus=8")  # fmt: skip
    filled, sizing = autosize.fill(data)
    assert (sizing.num_workers, sizing.inference_actors) == (5, 2)
    assert filled["topology"]["num_workers"] == 5 and filled["topology"]["inference_actors"] == 2
    assert "central inference on CPUs" in sizing.line()


def test_central_inference_on_a_gpu_gives_every_core_left_to_the_env_runners(monkeypatch):
    monkeypatch.setattr(autosize, "step_costs", lambda cfg, envs, split=False: (2.0, 1.0, 1.0))
    monkeypatch.setattr("torch.cuda.is_available", lambda: True)
    data = composed("+experiment=pong_appo", "topology.inference=central", "topology.num_workers=auto",
                    "topology.inference_actors=auto", "ray.num_cpus=16")  # fmt: skip
    _, sizing = autosize.fill(data)
    assert (sizing.num_workers, sizing.inference_actors) == (14, 1)  # 16 - the learner's - the inference actor's


def test_auto_inference_actors_need_central_inference():
    with pytest.raises(ConfigError, match=r"topology\.inference_actors=auto sizes the inference actors of"):
        autosize.fill(composed("+experiment=pong_appo", "topology.inference_actors=auto"))

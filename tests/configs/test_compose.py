"""Every experiment file and every group option composes and resolves; experiments only override."""

from pathlib import Path

import pytest
import yaml
from omegaconf import OmegaConf

from raylab.config import resolve
from raylab.train import compose, config_groups

CONF = Path(__file__).resolve().parents[2] / "conf"
EXPERIMENTS = config_groups()["experiment"]


@pytest.mark.parametrize("name", EXPERIMENTS)
@pytest.mark.parametrize("topology", ["", "topology=local"])
def test_experiment_composes_and_resolves(name, topology, tmp_path):
    overrides = [f"+experiment={name}"] + ([topology] if topology else [])
    cfg = resolve(compose(overrides), run_dir=str(tmp_path))
    assert cfg.stop.env_steps or cfg.stop.seconds or cfg.stop.mean_return


@pytest.mark.parametrize("name", EXPERIMENTS)
def test_experiment_files_only_override(name):
    path = CONF / "experiment" / f"{name}.yaml"
    text = path.read_text()
    assert text.startswith("# @package _global_"), f"{path} must start with '# @package _global_'"
    data = yaml.safe_load(text)
    groups = []
    for entry in data.pop("defaults", []):
        assert isinstance(entry, dict) and next(iter(entry)).startswith("override /"), entry
        ((key, option),) = entry.items()
        groups.append(f"{key.removeprefix('override /')}={option}")
    base = OmegaConf.to_container(compose(groups), resolve=False)  # the groups the experiment picks

    def check(node, ref, prefix):
        for key, value in node.items():
            assert key in ref, f"{path}: '{prefix}{key}' is not a key of the base config (experiments only override)"
            # an empty mapping in the base is free-form (policies, policy_mapping): its keys are the user's
            if isinstance(value, dict) and isinstance(ref[key], dict) and value and ref[key]:
                check(value, ref[key], f"{prefix}{key}.")

    check(data, base, "")


@pytest.mark.parametrize(
    ("group", "option"),
    [(g, o) for g, options in config_groups().items() if g != "experiment" for o in options],
)
def test_every_group_option_composes(group, option, tmp_path):
    prefix = "+" if group == "debug" else ""
    partner = {
        ("algo", "a3c"): ["topology=a3c"],
        ("topology", "a3c"): ["algo=a3c"],
        ("algo", "ppo"): ["topology=ppo"],
        ("topology", "ppo"): ["algo=ppo"],
        ("algo", "appo"): ["topology=appo"],
        ("topology", "appo"): ["algo=appo"],
        ("env", "custom"): ["env.factory=raylab.envs.fake:FakeEnv"],
        ("model", "custom"): ["model.factory=raylab_corridor.models:make_model"],
    }.get((group, option), [])
    resolve(compose([f"{prefix}{group}={option}", *partner]), run_dir=str(tmp_path))


def test_a_mismatched_topology_and_algo_names_the_fix(tmp_path):
    from raylab.errors import ConfigError

    with pytest.raises(ConfigError, match=r"topology=a3c runs a3c, not algo=dqn: add algo=a3c"):
        resolve(compose(["topology=a3c"]), run_dir=str(tmp_path))
    with pytest.raises(ConfigError, match=r"not algo=a3c: add algo=dqn, or topology=a3c for algo=a3c"):
        resolve(compose(["algo=a3c"]), run_dir=str(tmp_path))


def test_plain_and_plus_experiment_spellings_agree():
    assert compose(["+experiment=cartpole_dqn"]) == compose(["experiment=cartpole_dqn"])


def test_command_line_group_choice_beats_the_experiment():
    assert compose(["+experiment=cartpole_dqn", "topology=local"]).topology.name == "local"

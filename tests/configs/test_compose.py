"""Every experiment file and every group option composes and resolves; experiments only override."""

from pathlib import Path

import pytest
import yaml
from omegaconf import OmegaConf

from raylab.config import resolve
from raylab.train import compose, config_groups

CONF = Path(__file__).resolve().parents[2] / "conf"
EXPERIMENTS = config_groups()["experiment"]


def leaves(node: dict, path: tuple[str, ...] = ()):
    """``(path, value)`` of every leaf of a YAML mapping (an empty mapping sets nothing: it only names a key)."""
    for key, value in node.items():
        if isinstance(value, dict):
            yield from leaves(value, (*path, key))
        else:
            yield (*path, key), value


def plain(value):
    return [plain(v) for v in value] if isinstance(value, list | tuple) else value


def assert_values_arrive(settings: dict, resolved: dict, where: str, skip: tuple[str, ...] = ()) -> int:
    """Every value a config file sets is the resolved config's value there (interpolations and the ``skip``ped
    sections aside); the number of values checked."""
    checked = 0
    for path, value in leaves(settings):
        if path[0] in skip or (isinstance(value, str) and "${" in value):
            continue
        got = resolved
        for key in path:
            got = got[key]
        assert plain(got) == plain(value) or got == pytest.approx(value), f"{where}: {'.'.join(path)} is {got!r}"
        checked += 1
    return checked


@pytest.mark.parametrize("name", EXPERIMENTS)
@pytest.mark.parametrize("topology", ["", "topology=local"])
def test_experiment_composes_and_resolves_to_its_own_settings(name, topology, tmp_path):
    overrides = [f"+experiment={name}"] + ([topology] if topology else [])
    cfg = resolve(compose(overrides), run_dir=str(tmp_path))
    settings = yaml.safe_load((CONF / "experiment" / f"{name}.yaml").read_text())
    settings.pop("defaults", None)
    # topology=local replaces the experiment's topology: its topology keys are the command line's to drop
    skip = ("topology",) if topology else ()
    assert assert_values_arrive(settings, cfg.to_dict(), f"+experiment={name} {topology}", skip) > 0


def _picked_groups(name: str) -> list[str]:
    """The config groups an experiment picks: its own ``override /group: option`` entries, and those of the
    experiments it builds on (a plain entry of its defaults list names one; ``_self_`` places its own keys)."""
    groups = []
    for entry in yaml.safe_load((CONF / "experiment" / f"{name}.yaml").read_text()).get("defaults", []):
        if isinstance(entry, str):
            assert entry == "_self_" or entry in EXPERIMENTS, f"{name}: '{entry}' is not an experiment to build on"
            groups += [] if entry == "_self_" else _picked_groups(entry)
            continue
        assert isinstance(entry, dict) and next(iter(entry)).startswith("override /"), entry
        ((key, option),) = entry.items()
        groups.append(f"{key.removeprefix('override /')}={option}")
    return groups


@pytest.mark.parametrize("name", EXPERIMENTS)
def test_experiment_files_only_override(name):
    path = CONF / "experiment" / f"{name}.yaml"
    text = path.read_text()
    assert text.startswith("# @package _global_"), f"{path} must start with '# @package _global_'"
    data = yaml.safe_load(text)
    data.pop("defaults", None)
    base = OmegaConf.to_container(compose(_picked_groups(name)), resolve=False)  # the groups the experiment picks

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
    cfg = resolve(compose([f"{prefix}{group}={option}", *partner]), run_dir=str(tmp_path))
    text = (CONF / group / f"{option}.yaml").read_text()
    settings = yaml.safe_load(text) or {}
    settings.pop("defaults", None)
    if "@package _global_" not in text:  # a group's option sets keys under its group's name
        settings = {group: settings}
    assert_values_arrive(settings, cfg.to_dict(), f"{group}={option}")


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


ATARI_RUN_KEYS = {"stop", "eval"}
"""What an Atari experiment may set beside atari_appo's recipe: how long it runs and how it is evaluated."""


@pytest.mark.parametrize("name", ["pong_appo", "breakout_appo"])
def test_the_atari_experiments_are_the_one_recipe_plus_the_game(name, tmp_path):
    """pong_appo and breakout_appo train with atari_appo's settings: only the game, the stop and the evaluation
    may differ (issue: one Atari recipe for any game)."""
    recipe = resolve(compose(["+experiment=atari_appo"]), run_dir=str(tmp_path)).to_dict()
    game = resolve(compose([f"+experiment={name}"]), run_dir=str(tmp_path)).to_dict()
    for section in set(recipe) - ATARI_RUN_KEYS - {"run_dir"}:
        mine, theirs = game[section], recipe[section]
        if section == "env":
            mine, theirs = {**mine, "id": None}, {**theirs, "id": None}
        assert mine == theirs, f"{name}'s {section} differs from atari_appo's"


def test_a_tilde_deletes_a_key_as_in_hydras_grammar():
    """``~policy_mapping`` (Hydra's delete) passes raylab's grammar check and composes without the key; a bare word
    without the tilde is still refused in one line."""
    from raylab.errors import ConfigError
    from raylab.train import check_overrides

    overrides = ["+experiment=simple_tag_mixed_ppo", "~policies", "~policy_mapping", "~env.options.continuous_actions"]
    check_overrides(overrides)
    cfg = compose(overrides)
    assert not cfg.get("policies") and not cfg.get("policy_mapping"), OmegaConf.to_yaml(cfg)
    assert "continuous_actions" not in cfg.env.options and cfg.env.id == "mpe2.simple_tag_v3"
    with pytest.raises(ConfigError, match="'policy_mapping' is not key=value"):
        check_overrides(["+experiment=simple_tag_mixed_ppo", "policy_mapping"])

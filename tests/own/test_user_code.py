"""Your own env and model by import path, without Ray: loading, the checks, and every mistake as one line."""

from __future__ import annotations

import dataclasses
import sys
import textwrap

import gymnasium as gym
import numpy as np
import pytest
import torch

from raylab import user_code
from raylab.builders.algorithms import algorithm
from raylab.config import EnvConfig, ModelConfig, resolve
from raylab.envs.registry import check_env_config, env_spaces, make_render_env, make_vector_env
from raylab.errors import ConfigError
from raylab.models import build_actor_critic, build_q_network
from raylab.types import EnvSpaces
from tests.conftest import make_config

ENV_ID = "raylab_corridor.envs:Corridor-v0"
ENV_FACTORY = "raylab_corridor.envs:make_corridor"
MODEL = "raylab_corridor.models:make_model"
SPACES = EnvSpaces(obs_shape=(4,), obs_dtype=np.dtype(np.float32), num_actions=2, action_space="Discrete(2)")


@pytest.fixture
def user_module(tmp_path, monkeypatch):
    """Write ``name.py`` with ``source`` into a directory on sys.path; returns a writer."""
    monkeypatch.syspath_prepend(str(tmp_path))

    def write(name: str, source: str) -> str:
        (tmp_path / f"{name}.py").write_text(textwrap.dedent(source))
        sys.modules.pop(name, None)
        return name

    yield write


# -- environments ---------------------------------------------------------------------------------------------
def test_module_id_imports_the_module_that_registers_it():
    cfg = EnvConfig(id=ENV_ID)
    check_env_config(cfg)
    assert env_spaces(cfg).obs_shape == (4,)
    with make_vector_env(cfg, num_envs=3, seed=0) as envs:
        obs = envs.reset()
        assert obs.shape == (3, 4) and envs.step(np.ones(3, np.int64)).rewards.shape == (3,)


def test_factory_env_gets_the_options_and_the_shared_preprocessing():
    cfg = EnvConfig(family="custom", id="corridor", factory=ENV_FACTORY, options={"length": 3}, max_episode_steps=4)
    check_env_config(cfg)
    with make_vector_env(cfg, num_envs=1, seed=0) as envs:
        envs.reset()
        step = envs.step(np.array([1]))
        step = envs.step(np.array([1]))  # length 3: two steps right reach the exit
        assert step.terminated[0] and step.episodes[0][1]["return"] == pytest.approx(-0.01 + 1.0)
        for _ in range(4):  # always left: env.max_episode_steps=4 truncates, in agent steps
            step = envs.step(np.array([0]))
        assert step.truncated[0] and not step.terminated[0] and step.final_obs


@pytest.mark.parametrize(
    ("cfg", "expected"),
    [
        (EnvConfig(id="nosuchpkg_xyz.envs:Thing-v0"), "module 'nosuchpkg_xyz.envs' is not importable in the driver"),
        (EnvConfig(id="raylab_corridor.envs:Korridor-v0"), "importing raylab_corridor.envs did not register it"),
        (EnvConfig(id="raylab_corridor.envs:"), "env.id must be 'package.module:name'"),
        (EnvConfig(family="custom"), "env=custom needs env.factory=<package.module:function>"),
        (EnvConfig(family="custom", factory="make_corridor"), "env.factory must be 'package.module:name'"),
        (EnvConfig(family="custom", factory="raylab_corridor.envs:nope"), "has no attribute 'nope'"),
        (EnvConfig(family="custom", factory="raylab_corridor.envs:STEP_REWARD"), "is a float, not a callable"),
    ],
)
def test_bad_env_paths_are_one_line(cfg, expected):
    with pytest.raises(ConfigError, match=expected) as info:
        check_env_config(cfg)
    assert "\n" not in str(info.value)


def test_factory_that_returns_no_env_or_rejects_options(user_module):
    name = user_module(
        "bad_factories",
        """
        import gymnasium as gym
        def not_env(**kw):
            return 42
        def vector(**kw):
            return gym.make_vec("CartPole-v1", num_envs=2)
        def strict(size=3):
            return gym.make("CartPole-v1")
        """,
    )
    for fn, options, expected in [
        ("not_env", {}, "returned a int, not a gymnasium.Env"),
        ("vector", {}, "returned a gymnasium VectorEnv of 2 envs without taking num_envs: add a num_envs parameter"),
        ("strict", {"width": 2}, r"rejected env.options \{'width': 2\}"),
    ]:
        with pytest.raises(ConfigError, match=expected):
            env_spaces(EnvConfig(family="custom", factory=f"{name}:{fn}", options=options))


def test_a_vector_factory_is_called_once_per_worker_with_num_envs(user_module):
    name = user_module(
        "counted_corridors",
        """
        from raylab_corridor.envs import make_corridors
        CALLS = []
        def make(num_envs, **options):
            CALLS.append((num_envs, options))
            return make_corridors(num_envs, **options)
        """,
    )
    cfg = EnvConfig(family="custom", factory=f"{name}:make", options={"length": 3})
    check_env_config(cfg)
    spaces = env_spaces(cfg)
    assert spaces.obs_shape == (4,) and spaces.num_actions == 2 and spaces.agents == 1 and spaces.agent_ids == ()
    calls = sys.modules[name].CALLS
    assert calls == [(1, {"length": 3})]
    with make_vector_env(cfg, num_envs=3, seed=0) as envs:
        assert calls[1:] == [(3, {"length": 3})] and envs.num_envs == 3 and envs.reset().shape == (3, 4)
        envs.step(np.array([1, 1, 0]))
        step = envs.step(np.array([1, 1, 0]))  # length 3: two steps right reach the exit; env 2 walked into the wall
        assert step.terminated.tolist() == [True, True, False]
        assert step.obs[:, 3].tolist() == pytest.approx([1.0, 1.0, 0.98])  # only the two that ended start again
        assert [i for i, _ in step.episodes] == [0, 1] and step.episodes[0][1]["return"] == pytest.approx(0.99)
    assert len(calls) == 2


def test_vector_factory_mistakes_are_one_line(user_module):
    name = user_module(
        "bad_vector_factories",
        """
        import gymnasium as gym
        def too_few(num_envs):
            return gym.make_vec("CartPole-v1", num_envs=1)
        def single(num_envs):
            return gym.make("CartPole-v1")
        """,
    )
    for fn, expected in [
        ("too_few", "was asked for num_envs=2 and returned a VectorEnv of 1: build num_envs envs"),
        ("single", "takes num_envs but returned a TimeLimit: return a gymnasium.vector.VectorEnv"),
    ]:
        with pytest.raises(ConfigError, match=expected):
            make_vector_env(
                EnvConfig(family="custom", factory=f"{name}:{fn}"), num_envs=2 if fn == "too_few" else 1, seed=0
            )
    corridors = EnvConfig(family="custom", factory="raylab_corridor.envs:make_corridors", frame_stack=4)
    with pytest.raises(ConfigError, match=r"do it inside your vector env, and set env\.frame_skip=1"):
        check_env_config(corridors)
    with pytest.raises(ConfigError, match=r"env=custom steps its envs as one batch: set env\.normalize_reward"):
        check_env_config(dataclasses.replace(corridors, frame_stack=1, normalize_reward=True))
    with pytest.raises(ConfigError, match="a video needs one env: leave out video=true"):
        make_render_env(EnvConfig(family="custom", factory="raylab_corridor.envs:make_corridors"), seed=0)


def test_a_missing_dependency_of_the_users_module_names_it(user_module):
    name = user_module("needs_missing", "import nosuchdep_abc  # noqa\n")
    with pytest.raises(ConfigError, match=r"needs 'nosuchdep_abc', which is not installed .*pip install nosuchdep_abc"):
        check_env_config(EnvConfig(family="custom", factory=f"{name}:make"))


def test_an_error_while_importing_the_users_module_says_where(user_module):
    name = user_module("raises_on_import", "x = 1\nraise ValueError('bad  size')\n")
    with pytest.raises(
        ConfigError, match=r"raised ValueError\('bad size'\) at .*raises_on_import.py:2: fix the module"
    ):
        user_code.load(f"{name}:x", "env.factory", "m:f")


@pytest.mark.parametrize(
    ("env_id", "module", "install"),
    [
        ("LunarLander-v3", "Box2D", 'pip install "gymnasium[box2d]"'),
        ("HalfCheetah-v5", "mujoco", 'pip install "gymnasium[mujoco]"'),
    ],
)
def test_missing_optional_env_packages_name_the_install(env_id, module, install, monkeypatch):
    """The package is made missing here whether or not it is installed: an import of it fails, and gymnasium's
    env modules that imported it are imported afresh."""
    monkeypatch.setitem(sys.modules, module, None)  # `import <module>` raises ImportError
    for name in [n for n in sys.modules if n.startswith(("gymnasium.envs.box2d", "gymnasium.envs.mujoco"))]:
        monkeypatch.delitem(sys.modules, name)
    with pytest.raises(gym.error.DependencyNotInstalled):
        gym.make(env_id)
    with pytest.raises(ConfigError, match=f"env.id={env_id} in the driver on .*{install}".replace("[", r"\[")) as info:
        env_spaces(EnvConfig(id=env_id))
    assert "\n" not in str(info.value)


# -- models ---------------------------------------------------------------------------------------------------
def test_custom_model_serves_both_heads():
    cfg = ModelConfig(encoder="custom", factory=MODEL, options={"hidden": 16})
    q = build_q_network(cfg, SPACES)
    obs = torch.rand(5, 4)
    assert q(obs).shape == (5, 2) and q.atoms(obs).shape == (5, 2, 1) and q.num_atoms == 1
    ac = build_actor_critic(cfg, SPACES)
    logits, value = ac(obs)
    assert logits.shape == (5, 2) and value.shape == (5,)
    assert ac.net.trunk.layers[0].out_features == 16  # model.options reach the factory


def test_custom_model_receives_scaled_frames(user_module):
    name = user_module(
        "spy_model",
        """
        import torch
        from torch import nn
        SEEN = []
        class Spy(nn.Module):
            def __init__(self, n):
                super().__init__()
                self.lin = nn.Linear(4, n)
            def forward(self, obs):
                SEEN.append(obs)
                return self.lin(obs)
        def make(spaces, head):
            return Spy(spaces.num_actions)
        """,
    )
    frames = EnvSpaces(obs_shape=(4,), obs_dtype=np.dtype(np.uint8), num_actions=3, action_space="Discrete(3)")
    q = build_q_network(ModelConfig(encoder="custom", factory=f"{name}:make"), frames)
    q(torch.full((1, 4), 255, dtype=torch.uint8))
    seen = sys.modules[name].SEEN[-1]
    assert seen.dtype == torch.float32 and torch.equal(seen, torch.ones(1, 4))


def test_custom_model_mistakes_are_one_line(user_module):
    name = user_module(
        "bad_models",
        """
        import torch
        from torch import nn
        def wrong_shape(spaces, head):
            return nn.Linear(4, 5)
        def not_module(spaces, head):
            return "model"
        def raises(spaces, head, width=3):
            raise RuntimeError("no such head " + head)
        def q_only(spaces, head):
            return nn.Linear(4, spaces.num_actions)
        """,
    )
    cases = [
        (
            "wrong_shape",
            build_q_network,
            r"head 'q' must return Q values of shape \[B, 2\], got a tensor of shape \[2, 5\]",
        ),
        ("not_module", build_q_network, "returned a str, not a torch.nn.Module"),
        ("raises", build_actor_critic, r"raised RuntimeError\('no such head actor_critic'\) at .*bad_models.py:9"),
        (
            "q_only",
            build_actor_critic,
            r"head 'actor_critic' must return \(logits \[B, 2\], value \[B\]\), got a tensor",
        ),
    ]
    for fn, build, expected in cases:
        with pytest.raises(ConfigError, match=expected) as info:
            build(ModelConfig(encoder="custom", factory=f"{name}:{fn}"), SPACES)
        assert "\n" not in str(info.value)


def test_custom_model_refuses_what_a_built_in_head_does():
    with pytest.raises(ConfigError, match=r"model\.dueling=true applies to model=mlp/nature_cnn/impala_cnn"):
        resolve({"model": {"encoder": "custom", "factory": MODEL, "dueling": True}})
    with pytest.raises(ConfigError, match="model=custom returns Q values itself"):
        build_q_network(ModelConfig(encoder="custom", factory=MODEL), SPACES, atoms=8)


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({"encoder": "custom"}, "model=custom needs model.factory"),
        ({"factory": MODEL}, "model.factory=.* applies to model=custom .*: remove it, or add model=custom"),
        ({"options": {"hidden": 3}}, r"model.options={'hidden': 3} applies to model=custom \(keyword arguments"),
    ],
)
def test_model_config_pairs_factory_and_custom(kwargs, expected):
    with pytest.raises(ConfigError, match=expected):
        resolve({"model": kwargs})


@pytest.mark.parametrize("algo", ["dqn", "ppo", "appo", "a3c"])
def test_every_algorithm_builds_and_checkpoints_a_custom_model(tmp_path, algo):
    topology = {"dqn": "apex_dqn", "ppo": "ppo", "appo": "appo", "a3c": "a3c"}[algo]
    cfg = make_config(
        tmp_path, f"algo={algo}", f"topology={topology}", f"env.id={ENV_ID}", "model=custom", f"model.factory={MODEL}"
    )
    spaces = env_spaces(cfg.env)
    policy = algorithm(algo).eval_policy(cfg, spaces, 2)
    assert policy.act(np.zeros((2, 4), np.float32)).shape == (2,)
    build_objective = algorithm(algo).objective
    if build_objective is not None:  # A3C's workers train their own copy: no Learner objective
        objective = build_objective(cfg, spaces)
        trained = objective.policy_module()
        assert isinstance(trained.net, torch.nn.Module)  # the user's module, wrapped
        state = objective.state_dict()
        objective.load_state_dict(state)  # a checkpoint round trip

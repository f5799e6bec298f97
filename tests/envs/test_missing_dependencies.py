"""A missing extra or system library is a one-line error that names the exact install command."""

import importlib.util

import pytest

from raylab.config import EnvConfig
from raylab.envs import mario, procgen
from raylab.envs.registry import check_env_config
from raylab.errors import ConfigError


def test_missing_mario_extra(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "nes_py" else real(name, *a))
    with pytest.raises(ConfigError, match=r"pip install 'raylab-actor-learner\[mario\]'"):
        check_env_config(EnvConfig(family="mario", id="SuperMarioBros-1-1-v0"))


def test_missing_procgen_extra(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "envpool" else real(name, *a))
    with pytest.raises(ConfigError, match=r"pip install 'raylab-actor-learner\[procgen\]'"):
        check_env_config(EnvConfig(family="procgen", id="coinrun"))


def test_missing_qt5_runtime(monkeypatch):
    class NoQt:
        @staticmethod
        def make(*args, **kwargs):
            raise ImportError("EnvPool Procgen requires the system Qt 5 runtime on Linux.")

    monkeypatch.setattr(procgen, "envpool_module", lambda: NoQt)
    with pytest.raises(ConfigError, match="sudo apt-get install -y libqt5gui5") as info:
        procgen.make_pool(EnvConfig(family="procgen", id="coinrun"), 1, 0)
    assert "\n" not in str(info.value)


def test_import_failure_inside_nes_py_names_the_extra(monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_nes_py(name, *args, **kwargs):
        if name.startswith(("nes_py", "gym_super_mario_bros")):
            raise ImportError("No module named 'nes_py'", name="nes_py")
        return real_import(name, *args, **kwargs)

    mario._nes_modules.cache_clear()
    monkeypatch.setattr(builtins, "__import__", no_nes_py)
    try:
        with pytest.raises(ConfigError, match=r"nes_py is missing\): install the mario extra"):
            mario.MarioEnv("SuperMarioBros-1-1-v0")
    finally:
        monkeypatch.undo()
        mario._nes_modules.cache_clear()

"""The user's own code, named in the config by import path (``env.id=pkg.module:Env-v0``,
``env.factory=pkg.module:make_env``, ``model.factory=pkg.module:make_model``).

Every process that builds an env or a model imports it itself: the driver, every rollout actor, the
evaluator, and ``raylab.evaluate``. So the package must be importable on every Ray node: installed there,
on ``PYTHONPATH`` when Ray starts (the embedded local Ray inherits the driver's environment), or shipped
with the job (``ray.runtime_env``, or ``ray job submit --runtime-env-json``). Whatever goes wrong while
importing is one line naming the fix, raised as ``ConfigError`` in the process that failed (a Ray actor's
reaches the driver as its own one-line error).
"""

from __future__ import annotations

import importlib
import os
import socket
import sys
import traceback
from typing import Any

from raylab.errors import ConfigError

SHIP_HINT = (
    "pip install it (on every Ray node), add its directory to PYTHONPATH before starting Ray, or ship it "
    "with ray.runtime_env (e.g. ray.runtime_env={py_modules: [path/to/pkg]})"
)


def where() -> str:
    """This process, for messages: the driver, or a Ray actor on some host."""
    return f"a Ray actor on {socket.gethostname()}" if _in_ray_actor() else f"the driver on {socket.gethostname()}"


def _in_ray_actor() -> bool:
    ray = sys.modules.get("ray")  # not imported here: an actor's process has it already, the driver may not
    if ray is None:
        return False
    try:
        return bool(ray.is_initialized() and ray.get_runtime_context().get_actor_id() is not None)
    except Exception:  # only decorates a message
        return False


def split(path: str, key: str, example: str) -> tuple[str, str]:
    """``"pkg.module:name"`` -> ("pkg.module", "name"); anything else is a one-line error."""
    module, sep, name = path.partition(":")
    if not sep or not module or not name or " " in path:
        raise ConfigError(f"{key} must be 'package.module:name' (got '{path}'), e.g. {key}={example}")
    return module, name


def import_module(module: str, key: str) -> Any:
    """Import ``module`` for the config key ``key``; a failure is one ConfigError line naming the fix."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as err:
        missing = err.name or module
        if module == missing or module.startswith(missing + "."):
            raise ConfigError(
                f"{key}: module '{module}' is not importable in {where()} (no module named '{missing}'): {SHIP_HINT}"
            ) from None
        raise ConfigError(
            f"{key}: importing '{module}' needs '{missing}', which is not installed in {where()}: "
            f"pip install {missing.split('.')[0]} (on every Ray node)"
        ) from None
    except Exception as err:
        raise ConfigError(f"{key}: importing '{module}' raised {describe(err)}: fix the module") from None


def load(path: str, key: str, example: str) -> Any:
    """The object ``path`` ("pkg.module:name", name may be dotted) names, for the config key ``key``."""
    module_name, name = split(path, key, example)
    obj = import_module(module_name, key)
    for part in name.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise ConfigError(f"{key}: module '{module_name}' has no attribute '{name}': fix {key}") from None
    return obj


def load_callable(path: str, key: str, example: str) -> Any:
    obj = load(path, key, example)
    if not callable(obj):
        raise ConfigError(f"{key}: '{path}' is a {type(obj).__name__}, not a callable: name a function or class")
    return obj


def describe(err: BaseException) -> str:
    """``ValueError('bad size') at mypkg/envs.py:12``: an exception from the user's code, in one line."""
    frames = traceback.extract_tb(err.__traceback__)
    at = ""
    if frames:
        name = frames[-1].filename
        at = f" at {name if name.startswith('<') else os.path.relpath(name)}:{frames[-1].lineno}"
    message = " ".join(str(err).split())[:200]
    return f"{type(err).__name__}({message!r}){at}"

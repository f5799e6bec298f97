"""Your own network: ``model=custom model.factory=pkg.module:make_model [model.options.k=v ...]``.

The contract. raylab calls, in every process that builds the network (the learner, each rollout actor, the
evaluator, ``raylab.evaluate``)::

    make_model(spaces: raylab.types.EnvSpaces, head: str, **model.options) -> torch.nn.Module

- ``spaces`` describes the env *after* raylab's preprocessing: ``obs_shape`` (e.g. ``(4,)``, or ``(C, H, W)``
  for frames), ``obs_dtype``, ``num_actions`` (discrete actions).
- ``head`` says what the algorithm needs the module's ``forward(obs)`` to return, for a float32 batch
  ``obs`` of shape ``[B, *obs_shape]`` (uint8 frames arrive already scaled to [0, 1]):
  - ``"q"`` (DQN, Ape-X): Q values, ``[B, num_actions]``;
  - ``"actor_critic"`` (PPO, APPO, A3C): ``(logits [B, num_actions], value [B])``; for a Box action space
    (``spaces.action_dim`` set) ``(mean [B, action_dim], value [B])``, raylab adding the Gaussian's
    state-independent log-std parameter.
- The module is a plain ``nn.Module``: raylab moves it to the learner's device, may ``torch.compile`` it and
  run it under autocast (learner.precision), copies its ``state_dict`` into every actor as the published
  weights, and saves it in checkpoints. So every parameter and buffer must be in its ``state_dict``, and it
  must build the same ``state_dict`` keys and shapes for the same arguments in every process.

What the built-in heads do that a custom module owns itself: dueling (model.dueling) and quantiles
(algo.loss=quantile) are refused with model=custom, in one line.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from raylab.config import ModelConfig
from raylab.errors import ConfigError
from raylab.types import EnvSpaces
from raylab.user_code import describe, load_callable

HEADS = ("q", "actor_critic")
EXAMPLE = "mypkg.models:make_model"


def build_custom(cfg: ModelConfig, spaces: EnvSpaces, head: str) -> nn.Module:
    """The user's module for ``head``, checked on a batch of two zero observations."""
    factory = load_callable(cfg.factory or "", "model.factory", EXAMPLE)
    try:
        module = factory(spaces, head, **cfg.options)
    except Exception as err:
        raise ConfigError(
            f"model.factory {cfg.factory}(spaces, {head!r}, **model.options) raised {describe(err)}"
        ) from None
    if not isinstance(module, nn.Module):
        raise ConfigError(
            f"model.factory {cfg.factory} returned a {type(module).__name__}, not a torch.nn.Module: return a module"
        )
    check_outputs(cfg, module, spaces, head)
    return module


def check_outputs(cfg: ModelConfig, module: nn.Module, spaces: EnvSpaces, head: str) -> None:
    """One forward pass on zeros, so a wrong output shape is a config error now rather than a crash in an actor."""
    obs = torch.zeros((2, *spaces.obs_shape), dtype=torch.float32)
    try:
        with torch.no_grad():
            out: Any = module(obs)
    except Exception as err:
        raise ConfigError(
            f"model.factory {cfg.factory}: forward on a [2, *{spaces.obs_shape}] batch raised {describe(err)}"
        ) from None
    a = (
        spaces.action_dim
        if spaces.action_dim is not None
        else sum(spaces.action_nvec)
        if spaces.action_nvec is not None
        else spaces.num_actions
    )
    if head == "q":
        ok = isinstance(out, torch.Tensor) and tuple(out.shape) == (2, a)
        want = f"Q values of shape [B, {a}]"
    else:
        ok = (
            isinstance(out, tuple)
            and len(out) == 2
            and all(isinstance(t, torch.Tensor) for t in out)
            and tuple(out[0].shape) == (2, a)
            and tuple(out[1].shape) == (2,)
        )
        want = f"(mean [B, {a}], value [B])" if spaces.continuous else f"(logits [B, {a}], value [B])"
    if not ok:
        raise ConfigError(
            f"model.factory {cfg.factory}: head {head!r} must return {want}, got {shapes(out)}: fix forward"
        )


def shapes(out: Any) -> str:
    if isinstance(out, torch.Tensor):
        return f"a tensor of shape {list(out.shape)}"
    if isinstance(out, tuple | list):
        return "(" + ", ".join(shapes(o) for o in out) + ")"
    return f"a {type(out).__name__}"


def scaled(obs: torch.Tensor) -> torch.Tensor:
    """What a custom module receives: uint8 frames scaled to [0, 1], any other dtype as float32."""
    return obs.float().div_(255.0) if obs.dtype == torch.uint8 else obs.float()

"""How each gymnasium observation space reaches raylab's models: the one place that says it.

A Box reaches them as it is (images as uint8 frames, vectors as float32; raylab/envs/wrappers.py). Every
other space of vectors is *encoded* into one flat float32 Box, as RLlib's preprocessors and SB3's
``preprocess_obs`` do:

    Discrete(n, start)        one-hot of ``x - start``: n floats
    MultiDiscrete(nvec)       one one-hot per entry, concatenated: sum(nvec) floats
    MultiBinary(n)            the bits as floats (any shape, flattened)
    Box (inside Tuple/Dict)   its values as float32, flattened
    Tuple / Dict              each part encoded, concatenated in order (a Dict in its keys' order, which
                              gymnasium keeps sorted)

``encoding(space)`` says how (an ``Encoding``: its parts and its flat size, or why not) and ``encode`` applies
it; ``Encoded`` wraps an env with it (``make_env`` does, before anything else). Text, Graph and Sequence spaces,
and images inside a Tuple or Dict (a space that needs an encoder per key: MiniGrid's native observations), are
refused in one line naming what raylab takes instead.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np

from raylab.errors import ConfigError


@dataclass(frozen=True)
class Encoding:
    """How one space becomes floats: ``size`` floats written by ``write(value, out)`` into a view of that size."""

    size: int
    write: Callable[[Any, np.ndarray], None]
    describe: str


def _discrete(space: gym.spaces.Discrete) -> Encoding:
    n, start = int(space.n), int(space.start)

    def write(value: Any, out: np.ndarray) -> None:
        out[:] = 0.0
        out[int(value) - start] = 1.0

    return Encoding(n, write, f"one-hot of {n}")


def _multi_discrete(space: gym.spaces.MultiDiscrete) -> Encoding:
    nvec = np.asarray(space.nvec, np.int64).reshape(-1)
    starts = np.asarray(getattr(space, "start", np.zeros_like(space.nvec)), np.int64).reshape(-1)
    offsets = np.concatenate([[0], np.cumsum(nvec)[:-1]])

    def write(value: Any, out: np.ndarray) -> None:
        out[:] = 0.0
        out[offsets + np.asarray(value, np.int64).reshape(-1) - starts] = 1.0

    return Encoding(int(nvec.sum()), write, f"one-hot per entry of {nvec.tolist()}")


def _multi_binary(space: gym.spaces.MultiBinary) -> Encoding:
    size = int(np.prod(space.shape))

    def write(value: Any, out: np.ndarray) -> None:
        out[:] = np.asarray(value, np.float32).reshape(-1)

    return Encoding(size, write, f"{size} bits as floats")


def _box_part(space: gym.spaces.Box, where: str) -> Encoding:
    if len(space.shape) >= 2 and space.dtype == np.uint8:
        raise ConfigError(
            f"{where} holds an image {space}: images inside a Tuple or Dict observation need an encoder per key, "
            f"which raylab does not build yet: wrap the env to keep the image alone (a Box), or pass "
            f"env.factory=<your wrapper>"
        )
    size = int(np.prod(space.shape))

    def write(value: Any, out: np.ndarray) -> None:
        out[:] = np.asarray(value, np.float32).reshape(-1)

    return Encoding(size, write, f"{size} floats")


def _parts(parts: list[tuple[Any, Encoding]], describe: str) -> Encoding:
    sizes = [e.size for _, e in parts]
    bounds = np.concatenate([[0], np.cumsum(sizes)]).astype(int)

    def write(value: Any, out: np.ndarray) -> None:
        for (key, e), a, b in zip(parts, bounds[:-1], bounds[1:], strict=True):
            e.write(value[key], out[a:b])

    return Encoding(int(bounds[-1]), write, describe)


def encoding(space: gym.Space, where: str = "the observation", top: bool = True) -> Encoding | None:
    """How ``space`` is encoded into one flat float32 vector; None for a Box at the top (it needs none).
    ``where`` names it in an error (an env's observation, or a part of one)."""
    if isinstance(space, gym.spaces.Box):
        return None if top else _box_part(space, where)
    if isinstance(space, gym.spaces.Discrete):
        return _discrete(space)
    if isinstance(space, gym.spaces.MultiDiscrete):
        return _multi_discrete(space)
    if isinstance(space, gym.spaces.MultiBinary):
        return _multi_binary(space)
    if isinstance(space, gym.spaces.Tuple):
        items: list[tuple[Any, Encoding]] = [(i, _part(s, f"{where}[{i}]")) for i, s in enumerate(space.spaces)]
        return _parts(items, "(" + ", ".join(e.describe for _, e in items) + ")")
    if isinstance(space, gym.spaces.Dict):
        keyed: list[tuple[Any, Encoding]] = [(k, _part(s, f"{where}[{k!r}]")) for k, s in space.spaces.items()]
        return _parts(keyed, "{" + ", ".join(f"{k}: {e.describe}" for k, e in keyed) + "}")
    raise ConfigError(
        f"{where} is a {type(space).__name__} space ({space}): raylab encodes Box, Discrete, MultiDiscrete, "
        f"MultiBinary, and Tuple and Dict of them: wrap the env to drop or encode it"
    )


def _part(space: gym.Space, where: str) -> Encoding:
    found = encoding(space, where, top=False)
    assert found is not None  # a Box part has an encoding
    return found


def encode(e: Encoding, value: Any) -> np.ndarray:
    out = np.empty(e.size, np.float32)
    e.write(value, out)
    return out


class Encoded(gym.ObservationWrapper, gym.utils.RecordConstructorArgs):
    """``env`` with its observations encoded (``encoding``) into a flat float32 Box of 0/1 and float entries."""

    def __init__(self, env: gym.Env, name: str = "the env"):
        gym.utils.RecordConstructorArgs.__init__(self)
        super().__init__(env)
        found = encoding(env.observation_space, f"{name}'s observation")
        assert found is not None, "a Box observation needs no encoding"
        self.encoding = found
        space = env.observation_space
        bounded = not any(isinstance(s, gym.spaces.Box) for s in _leaves(space))
        low, high = (0.0, 1.0) if bounded else (-np.inf, np.inf)
        self.observation_space = gym.spaces.Box(low, high, (found.size,), np.float32)

    def observation(self, observation: Any) -> np.ndarray:
        return encode(self.encoding, observation)


def _leaves(space: gym.Space) -> list[gym.Space]:
    if isinstance(space, gym.spaces.Tuple):
        return [leaf for s in space.spaces for leaf in _leaves(s)]
    if isinstance(space, gym.spaces.Dict):
        return [leaf for s in space.spaces.values() for leaf in _leaves(s)]
    return [space]


def encoded(env: gym.Env, name: str = "the env") -> gym.Env:
    """``env`` itself when its observations are a Box, else ``Encoded(env)`` (``name``: the env's id, for errors)."""
    return env if isinstance(env.observation_space, gym.spaces.Box) else Encoded(env, name)

"""How each gymnasium observation space reaches raylab's models: the one place that says it.

A Box reaches them as it is (images as uint8 frames, vectors as float32; raylab/envs/wrappers.py). Every
other space is *encoded* into one flat row, as RLlib's preprocessors and SB3's ``preprocess_obs`` do:

    Discrete(n, start)        one-hot of ``x - start``: n values
    MultiDiscrete(nvec)       one one-hot per entry, concatenated: sum(nvec) values
    MultiBinary(n)            the bits (any shape, flattened)
    Box (inside Tuple/Dict)   its values, flattened; a uint8 Box of 2 or 3 dimensions is an *image*:
                              (H, W) -> (1, H, W), (H, W, C<=4) -> (C, H, W), else taken as (C, H, W)
    Text (inside Tuple/Dict)  dropped, with one note (MiniGrid's mission: a constant sentence per task)
    Tuple / Dict              each part encoded, concatenated in order (a Dict in its keys' order, which
                              gymnasium keeps sorted)

Without an image the row is float32, and the models read it as any vector. With an image (MiniGrid's native
``{"image", "direction", "mission"}``) the row is uint8 when every part fits one (images, one-hots, bits, uint8
vectors), so frames are stored once as uint8, in rollout chunks and in replay, as Box frames are; a float part
makes it float32. Its ``ObsPart``s (raylab.types) say where each image and vector lies in the row, and the model
encodes each by its kind (raylab.models.keyed.KeyedEncoder, SB3's CombinedExtractor shape): images through the
CNN the model names, vectors through its MLP.

``encoding(space)`` says how (an ``Encoding``: its size, its parts, or why not) and ``encode`` applies it;
``Encoded`` wraps an env with it (``make_env`` does, before anything else). Text, Graph and Sequence spaces at the
top, and Graph and Sequence inside, are refused in one line naming what raylab takes instead.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np

from raylab.envs.wrappers import float32_box
from raylab.errors import ConfigError
from raylab.types import ObsPart

log = logging.getLogger("raylab")


@dataclass(frozen=True)
class Encoding:
    """How one space becomes a flat row: ``size`` values written by ``write(value, out)`` into a view of that size.
    ``kind`` is a leaf's (``vector``, ``image``, ``dropped``) or ``parts`` for a Tuple/Dict, whose ``parts`` then
    say where each leaf lies; ``exact_uint8``: every value fits a uint8 (images, one-hots, bits, uint8 vectors);
    ``shape``: an image's (C, H, W)."""

    size: int
    write: Callable[[Any, np.ndarray], None]
    describe: str
    kind: str = "vector"
    exact_uint8: bool = True
    shape: tuple[int, ...] = ()
    parts: tuple[ObsPart, ...] = ()

    @property
    def images(self) -> bool:
        return any(p.kind == "image" for p in self.parts)


def _discrete(space: gym.spaces.Discrete) -> Encoding:
    n, start = int(space.n), int(space.start)

    def write(value: Any, out: np.ndarray) -> None:
        out[:] = 0
        out[int(value) - start] = 1

    return Encoding(n, write, f"one-hot of {n}")


def _multi_discrete(space: gym.spaces.MultiDiscrete) -> Encoding:
    nvec = np.asarray(space.nvec, np.int64).reshape(-1)
    starts = np.asarray(getattr(space, "start", np.zeros_like(space.nvec)), np.int64).reshape(-1)
    offsets = np.concatenate([[0], np.cumsum(nvec)[:-1]])

    def write(value: Any, out: np.ndarray) -> None:
        out[:] = 0
        out[offsets + np.asarray(value, np.int64).reshape(-1) - starts] = 1

    return Encoding(int(nvec.sum()), write, f"one-hot per entry of {nvec.tolist()}")


def _multi_binary(space: gym.spaces.MultiBinary) -> Encoding:
    size = int(np.prod(space.shape))

    def write(value: Any, out: np.ndarray) -> None:
        out[:] = np.asarray(value).reshape(-1)

    return Encoding(size, write, f"{size} bits")


def image_shape(shape: tuple[int, ...]) -> tuple[int, int, int]:
    """The (C, H, W) of a uint8 image part: (H, W) is one channel, (H, W, C) with C <= 4 is channel-last (gymnasium's
    and MiniGrid's layout), anything else already channel-first."""
    if len(shape) == 2:
        return (1, shape[0], shape[1])
    if shape[2] <= 4:
        return (shape[2], shape[0], shape[1])
    return (shape[0], shape[1], shape[2])


def _image(space: gym.spaces.Box) -> Encoding:
    shape = image_shape(tuple(int(x) for x in space.shape))
    last = len(space.shape) == 3 and space.shape[2] <= 4

    def write(value: Any, out: np.ndarray) -> None:
        frame = np.asarray(value)
        out[:] = (frame.transpose(2, 0, 1) if last else frame).reshape(-1)

    return Encoding(int(np.prod(shape)), write, f"image {shape}", kind="image", shape=shape)


def _box_part(space: gym.spaces.Box) -> Encoding:
    if len(space.shape) in (2, 3) and space.dtype == np.uint8:
        return _image(space)
    size = int(np.prod(space.shape))

    def write(value: Any, out: np.ndarray) -> None:
        out[:] = np.asarray(value).reshape(-1)

    return Encoding(size, write, f"{size} values", exact_uint8=space.dtype == np.uint8)


_noted: set[str] = set()


def _dropped(space: gym.Space, where: str) -> Encoding:
    if where not in _noted:  # once per process, not once per env of a vector
        _noted.add(where)
        log.warning(
            "%s (%s) is dropped: raylab encodes no text (a task with one mission, as DoorKey's, loses nothing)",
            where,
            type(space).__name__,
        )
    return Encoding(0, lambda value, out: None, "dropped", kind="dropped")


def _parts(items: list[tuple[Any, Encoding]], describe: str) -> Encoding:
    sizes = [e.size for _, e in items]
    bounds = np.concatenate([[0], np.cumsum(sizes)]).astype(int)
    parts: list[ObsPart] = []
    for (key, e), a, b in zip(items, bounds[:-1], bounds[1:], strict=True):
        if e.kind == "parts":
            parts += [ObsPart(f"{key}.{p.key}", p.kind, int(a) + p.start, int(a) + p.stop, p.shape) for p in e.parts]
        elif e.kind != "dropped":
            parts.append(ObsPart(str(key), e.kind, int(a), int(b), e.shape or (e.size,)))

    def write(value: Any, out: np.ndarray) -> None:
        for (key, e), a, b in zip(items, bounds[:-1], bounds[1:], strict=True):
            e.write(value[key], out[a:b])

    exact = all(e.exact_uint8 for _, e in items)
    return Encoding(int(bounds[-1]), write, describe, kind="parts", exact_uint8=exact, parts=tuple(parts))


def encoding(space: gym.Space, where: str = "the observation", top: bool = True) -> Encoding | None:
    """How ``space`` is encoded into one flat row; None for a Box at the top (it needs none). ``where`` names it in
    an error (an env's observation, or a part of one)."""
    if isinstance(space, gym.spaces.Box):
        return None if top else _box_part(space)
    if isinstance(space, gym.spaces.Discrete):
        return _discrete(space)
    if isinstance(space, gym.spaces.MultiDiscrete):
        return _multi_discrete(space)
    if isinstance(space, gym.spaces.MultiBinary):
        return _multi_binary(space)
    if _text(space) and not top:
        return _dropped(space, where)
    if isinstance(space, gym.spaces.Tuple):
        items: list[tuple[Any, Encoding]] = [(i, _part(s, f"{where}[{i}]")) for i, s in enumerate(space.spaces)]
        return _parts(items, "(" + ", ".join(e.describe for _, e in items) + ")")
    if isinstance(space, gym.spaces.Dict):
        keyed: list[tuple[Any, Encoding]] = [(k, _part(s, f"{where}[{k!r}]")) for k, s in space.spaces.items()]
        return _parts(keyed, "{" + ", ".join(f"{k}: {e.describe}" for k, e in keyed) + "}")
    raise ConfigError(
        f"{where} is a {type(space).__name__} space ({space}): raylab encodes Box, Discrete, MultiDiscrete, "
        f"MultiBinary, and Tuple and Dict of them (text inside them is dropped): wrap the env to drop or encode it"
    )


def _text(space: gym.Space) -> bool:
    """A space of strings: gymnasium's Text, or MiniGrid's MissionSpace (a sentence made by a function)."""
    return isinstance(space, gym.spaces.Text) or type(space).__name__ == "MissionSpace"


def _part(space: gym.Space, where: str) -> Encoding:
    found = encoding(space, where, top=False)
    assert found is not None  # a Box part has an encoding
    return found


def encode(e: Encoding, value: Any) -> np.ndarray:
    out = np.empty(e.size, row_dtype(e))
    e.write(value, out)
    return out


def row_dtype(e: Encoding) -> np.dtype:
    """uint8 for a row with an image whose every value fits one (frames stored once, as uint8); float32 else."""
    return np.dtype(np.uint8 if e.images and e.exact_uint8 else np.float32)


class Encoded(gym.ObservationWrapper, gym.utils.RecordConstructorArgs):
    """``env`` with its observations encoded (``encoding``) into one flat row: float32 without an image (0/1 entries
    and numbers), else uint8 or float32 (``row_dtype``) with ``obs_parts`` saying where each image and vector lies."""

    def __init__(self, env: gym.Env, name: str = "the env"):
        gym.utils.RecordConstructorArgs.__init__(self)
        super().__init__(env)
        found = encoding(env.observation_space, f"{name}'s observation")
        assert found is not None, "a Box observation needs no encoding"
        self.encoding = found
        self.obs_parts: tuple[ObsPart, ...] = image_parts(found)
        self.observation_space = encoded_box(found, env.observation_space)

    def observation(self, observation: Any) -> np.ndarray:
        return encode(self.encoding, observation)


def encoded_box(found: Encoding, space: gym.Space) -> gym.spaces.Box:
    """The flat Box that ``space``'s rows, encoded by ``found``, lie in: [0, 255] uint8 with an image (``row_dtype``),
    else float32, in [0, 1] unless a Box part's values are in it."""
    dtype = row_dtype(found)
    if dtype == np.uint8:
        low, high = 0.0, 255.0
    elif any(isinstance(s, gym.spaces.Box) for s in _leaves(space)):
        low, high = -np.inf, np.inf
    else:
        low, high = 0.0, 1.0
    return gym.spaces.Box(low, high, (found.size,), dtype)


def image_parts(found: Encoding) -> tuple[ObsPart, ...]:
    """Where each image and vector lies in an encoded row that holds an image (the model encodes each by its kind);
    nothing for a row without one (the model reads it as any vector)."""
    return found.parts if found.images else ()


def shown(space: gym.Space, where: str) -> tuple[gym.Space, Encoding | None]:
    """``space`` as raylab's models see it, with the encoding that makes it so: a Box as it is (float32 where it was
    another float dtype), any other space encoded into a flat Box (``where`` names it in an error)."""
    found = encoding(space, where)
    if found is None:
        return float32_box(space) or space, None
    return encoded_box(found, space), found


def _leaves(space: gym.Space) -> list[gym.Space]:
    if isinstance(space, gym.spaces.Tuple):
        return [leaf for s in space.spaces for leaf in _leaves(s)]
    if isinstance(space, gym.spaces.Dict):
        return [leaf for s in space.spaces.values() for leaf in _leaves(s)]
    return [space]


def encoded(env: gym.Env, name: str = "the env") -> gym.Env:
    """``env`` itself when its observations are a Box, else ``Encoded(env)`` (``name``: the env's id, for errors)."""
    return env if isinstance(env.observation_space, gym.spaces.Box) else Encoded(env, name)


def obs_parts(env: gym.Env) -> tuple[ObsPart, ...]:
    """The ``ObsPart``s of a wrapped env's encoded observation (empty unless it holds an image)."""
    try:
        return tuple(env.get_wrapper_attr("obs_parts"))
    except AttributeError:
        return ()

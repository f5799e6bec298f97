"""Observation spaces other than a Box, encoded into one flat float32 vector (raylab/envs/spaces.py): each
space's encoding against hand-written vectors, the envs that had none before (FrozenLake, Blackjack) through
the whole preprocessing stack, and the refusals."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from raylab.config import EnvConfig
from raylab.envs import env_spaces, make_env, make_vector_env
from raylab.envs.spaces import Encoded, encode, encoding
from raylab.errors import ConfigError


def enc(space: gym.Space, value) -> list[float]:
    found = encoding(space)
    assert found is not None
    return encode(found, value).tolist()


def test_each_space_is_encoded_as_written():
    assert enc(gym.spaces.Discrete(4, start=1), 3) == [0, 0, 1, 0]
    assert enc(gym.spaces.MultiDiscrete([2, 3]), np.array([1, 2])) == [0, 1, 0, 0, 1]
    assert enc(gym.spaces.MultiBinary(3), np.array([1, 0, 1], np.int8)) == [1, 0, 1]
    blackjack = gym.spaces.Tuple((gym.spaces.Discrete(32), gym.spaces.Discrete(11), gym.spaces.Discrete(2)))
    vector = enc(blackjack, (24, 4, 1))
    assert len(vector) == 45 and [i for i, x in enumerate(vector) if x] == [24, 32 + 4, 43 + 1]
    mixed = gym.spaces.Dict({"b": gym.spaces.Box(-1.0, 1.0, (2,)), "a": gym.spaces.Discrete(2)})
    assert list(mixed.spaces) == ["a", "b"]  # gymnasium sorts a Dict's keys: the order of the parts
    assert enc(mixed, {"a": 1, "b": np.array([0.5, -0.25])}) == [0, 1, 0.5, -0.25]
    assert encoding(gym.spaces.Box(0, 1, (3,))) is None  # a Box needs no encoding


def test_a_box_inside_makes_the_encoded_space_unbounded_and_one_hots_alone_keep_it_in_zero_one():
    env = gym.make("Blackjack-v1")
    wrapped = Encoded(env, "Blackjack-v1")
    assert wrapped.observation_space == gym.spaces.Box(0.0, 1.0, (45,), np.float32)


@pytest.mark.parametrize(
    ("space", "message"),
    [
        (gym.spaces.Text(8), "'s observation is a Text space"),
        (gym.spaces.Dict({"steps": gym.spaces.Sequence(gym.spaces.Discrete(2))}), r"\['steps'\] is a Sequence space"),
    ],
)
def test_spaces_raylab_does_not_encode_are_refused_in_one_line(space, message):
    with pytest.raises(ConfigError, match=message):
        encoding(space, "MyEnv-v0's observation")


@pytest.mark.parametrize(("env_id", "size"), [("FrozenLake-v1", 16), ("Blackjack-v1", 45)])
def test_frozenlake_and_blackjack_run_through_the_preprocessing_stack(env_id, size):
    cfg = EnvConfig(family="gymnasium", id=env_id)
    spaces = env_spaces(cfg)
    assert spaces.obs_shape == (size,) and spaces.obs_dtype == np.float32 and spaces.num_actions is not None
    env = make_env(cfg, seed=0)
    obs, _ = env.reset(seed=0)
    assert obs.shape == (size,) and obs.dtype == np.float32 and set(np.unique(obs)) <= {0.0, 1.0}
    venv = make_vector_env(cfg, 3, seed=0)
    batch = venv.reset()
    assert batch.shape == (3, size)
    for _ in range(20):
        step = venv.step(np.zeros(3, np.int64))
        assert step.obs.shape == (3, size)


MINIGRID_LIKE = gym.spaces.Dict(
    {
        "image": gym.spaces.Box(0, 255, (7, 7, 3), np.uint8),
        "direction": gym.spaces.Discrete(4),
        "mission": gym.spaces.Text(32),
    }
)


def minigrid_like_value(seed: int = 0) -> dict:
    image = np.random.default_rng(seed).integers(0, 11, (7, 7, 3), dtype=np.uint8)
    return {"image": image, "direction": 2, "mission": "get the key"}


def test_an_image_in_a_dict_is_packed_channel_first_into_a_uint8_row_with_its_parts_and_text_dropped():
    found = encoding(MINIGRID_LIKE, "MiniGrid's observation")
    assert found is not None and found.size == 4 + 147
    value = minigrid_like_value()
    row = encode(found, value)
    assert row.dtype == np.uint8  # every part fits one: the frames stay uint8 in chunks and replay
    keys = {p.key: p for p in found.parts}
    assert set(keys) == {"direction", "image"}  # the mission is dropped
    direction, image = keys["direction"], keys["image"]
    assert (direction.kind, image.kind, image.shape) == ("vector", "image", (3, 7, 7))
    assert row[direction.start : direction.stop].tolist() == [0, 0, 1, 0]
    chw = row[image.start : image.stop].reshape(image.shape)
    assert np.array_equal(chw, value["image"].transpose(2, 0, 1))


def test_a_float_part_beside_an_image_makes_the_row_float32():
    space = gym.spaces.Dict({"image": gym.spaces.Box(0, 255, (8, 8), np.uint8), "speed": gym.spaces.Box(-1, 1, (2,))})
    found = encoding(space)
    assert found is not None
    row = encode(found, {"image": np.full((8, 8), 200, np.uint8), "speed": np.array([0.5, -0.5], np.float32)})
    assert row.dtype == np.float32 and row.max() == 200.0  # the image stays in 0-255: the encoder scales it
    assert {p.key: p.shape for p in found.parts} == {"image": (1, 8, 8), "speed": (2,)}


def _mixed(*kinds: str, **extra) -> EnvConfig:
    return EnvConfig(family="pettingzoo", id="tests.envs.spaces_envs", options={"kinds": list(kinds)}, **extra)


def test_each_agent_of_a_multi_agent_env_is_encoded_in_its_own_space():
    """Agents of a PettingZoo env that observe a Discrete and MiniGrid's Dict: a space group each, the one-hot row
    and the uint8 row with its parts, filled from each agent's own observation every step."""
    spaces = env_spaces(_mixed("discrete", "dict_image"))
    onehot, keyed = spaces.groups
    assert (onehot.obs_shape, onehot.obs_dtype, onehot.obs_parts) == ((5,), np.float32, ())
    assert keyed.obs_shape == (151,) and keyed.obs_dtype == np.uint8
    assert [(p.key, p.kind, p.start, p.stop) for p in keyed.obs_parts] == [
        ("direction", "vector", 0, 4), ("image", "image", 4, 151)
    ]  # fmt: skip
    venv = make_vector_env(_mixed("discrete", "dict_image"), 2, seed=0)
    first, second = venv.reset_groups()
    assert first.shape == (2, 5) and (first.sum(axis=1) == 1).all()  # one-hot of each env's agent_0
    assert second.shape == (2, 151) and (second[:, :4].sum(axis=1) == 1).all()
    step = venv.step_groups((np.zeros(2, np.int64), np.zeros(2, np.int64)))
    assert (step.obs[0].sum(axis=1) == 1).all() and step.rewards.shape == (4,)
    venv.close()
    same = env_spaces(_mixed("tuple", "tuple"))  # one group: the env's own spaces
    assert same.groups == () and same.obs_shape == (5,) and same.obs_parts == ()
    images = env_spaces(_mixed("dict_image", "dict_image"))
    assert images.groups == () and [p.kind for p in images.obs_parts] == ["vector", "image"]


def test_padding_and_frame_stacking_refuse_images_inside_an_agents_dict_in_one_line():
    pad = r"env.pad_observations=true pads vectors, and agents agent_1 of tests.envs.spaces_envs observe images "
    with pytest.raises(ConfigError, match=pad + r"inside a Tuple or Dict: set env.pad_observations=false"):
        make_vector_env(_mixed("discrete", "dict_image", pad_observations=True), 1, seed=0)
    padded = env_spaces(_mixed("discrete", "tuple", pad_observations=True))  # vectors pad: one group of 5 values
    assert padded.groups == () and padded.obs_shape == (5,)
    stack = r"env.frame_stack stacks whole observations, and agents of tests.envs.spaces_envs observe images "
    with pytest.raises(ConfigError, match=stack + r"inside a Tuple or Dict: set env.frame_stack=1"):
        make_vector_env(_mixed("dict_image", "discrete", frame_stack=2), 1, seed=0)

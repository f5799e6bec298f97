"""The encoder of a Tuple or Dict observation holding an image (raylab/models/keyed.py): each part reaches its
encoder at the scale it should, whatever the row's dtype; the CNN family is the model's; the refusals."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch

from raylab.config import EnvConfig, ModelConfig
from raylab.envs import env_spaces, make_env
from raylab.envs.spaces import encode, encoding
from raylab.errors import ConfigError
from raylab.models.factory import build_actor_critic, build_encoder, build_q_network
from raylab.models.factory import encode as features
from raylab.models.keyed import KeyedEncoder
from raylab.types import EnvSpaces
from tests.unit.test_spaces import MINIGRID_LIKE, minigrid_like_value


def spaces_of(space: gym.Space) -> EnvSpaces:
    found = encoding(space)
    assert found is not None
    row = encode(found, space.sample())
    return EnvSpaces((found.size,), row.dtype, 7, "Discrete(7)", obs_parts=found.parts)


def test_each_part_reaches_the_mlp_at_its_own_scale_from_a_uint8_row():
    """A uint8 row arrives scaled by 1/255 as frames do: the one-hot comes back to 0/1, the codes to 0.1 each."""
    spaces = spaces_of(MINIGRID_LIKE)
    encoder = build_encoder(ModelConfig(encoder="mlp", hidden_sizes=(), image_scale=0.1), spaces)
    assert isinstance(encoder, KeyedEncoder)
    value = minigrid_like_value()
    found = encoding(MINIGRID_LIKE)
    assert found is not None
    row = torch.from_numpy(encode(found, value)).unsqueeze(0)
    out = features(encoder, row)[0].numpy()
    expected = np.concatenate([[0, 0, 1, 0], value["image"].transpose(2, 0, 1).reshape(-1) * 0.1])
    np.testing.assert_allclose(out, expected, rtol=1e-6, atol=1e-6)


def test_a_float_row_scales_its_image_and_keeps_its_numbers():
    space = gym.spaces.Dict({"image": gym.spaces.Box(0, 255, (8, 8), np.uint8), "speed": gym.spaces.Box(-1, 1, (2,))})
    found = encoding(space)
    assert found is not None
    spaces = EnvSpaces((found.size,), np.dtype(np.float32), 3, "Discrete(3)", obs_parts=found.parts)
    encoder = build_encoder(ModelConfig(encoder="mlp", hidden_sizes=()), spaces)
    value = {"image": np.full((8, 8), 255, np.uint8), "speed": np.array([0.5, -0.5], np.float32)}
    out = features(encoder, torch.from_numpy(encode(found, value)).unsqueeze(0))[0].numpy()
    np.testing.assert_allclose(out[:64], 1.0, rtol=1e-6)  # 255 * 1/255
    np.testing.assert_allclose(out[64:], [0.5, -0.5])


def test_the_image_goes_through_the_cnn_the_model_names():
    spaces = spaces_of(MINIGRID_LIKE)
    net = build_actor_critic(ModelConfig(encoder="impala_cnn", hidden_sizes=(32,)), spaces)
    assert isinstance(net.encoder, KeyedEncoder) and len(net.encoder.cnns) == 1
    found = encoding(MINIGRID_LIKE)
    assert found is not None
    rows = torch.from_numpy(np.stack([encode(found, minigrid_like_value(s)) for s in range(5)]))
    params, value = net(rows)
    assert params.shape == (5, 7) and value.shape == (5,)
    q = build_q_network(ModelConfig(encoder="impala_cnn", hidden_sizes=(32,), dueling=True), spaces)
    assert q(rows).shape == (5, 7)


@pytest.mark.parametrize(
    ("model", "message"),
    [
        (ModelConfig(encoder="nature_cnn"), r"'image' is 7x7, smaller than model=nature_cnn's 36x36: use model=impala"),
        (ModelConfig(encoder="mlp", normalize_obs=True), r"holds an image \(image\): set model.normalize_obs=false"),
    ],
)
def test_what_does_not_fit_is_refused_in_one_line(model, message):
    with pytest.raises(ConfigError, match=message):
        build_encoder(model, spaces_of(MINIGRID_LIKE))


def test_minigrids_own_doorkey_id_builds_and_acts_with_no_wrapper():
    pytest.importorskip("minigrid")
    cfg = EnvConfig(family="gymnasium", id="minigrid:MiniGrid-DoorKey-5x5-v0")
    spaces = env_spaces(cfg)
    assert spaces.obs_dtype == np.uint8 and spaces.obs_shape == (151,) and spaces.num_actions == 7
    assert {p.key: (p.kind, p.shape) for p in spaces.obs_parts} == {
        "direction": ("vector", (4,)), "image": ("image", (3, 7, 7))}  # fmt: skip
    env = make_env(cfg, seed=0)
    obs, _ = env.reset(seed=0)
    net = build_actor_critic(ModelConfig(encoder="mlp", hidden_sizes=(64,), image_scale=0.1), spaces)
    params, _ = net(torch.from_numpy(obs).unsqueeze(0))
    obs, *_ = env.step(int(params.argmax()))
    assert obs.shape == (151,) and obs.dtype == np.uint8

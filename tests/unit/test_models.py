"""Networks: shapes, uint8 scaling, the dueling aggregation."""

import numpy as np
import pytest
import torch

from raylab.config import ModelConfig
from raylab.errors import ConfigError
from raylab.models import build_q_network
from raylab.models.heads import DuelingQHead
from raylab.types import EnvSpaces

VECTOR = EnvSpaces((4,), np.dtype(np.float32), 3, "Discrete(3)")
IMAGE = EnvSpaces((4, 84, 84), np.dtype(np.uint8), 6, "Discrete(6)")


def test_dueling_head_is_value_plus_centred_advantage():
    head = DuelingQHead(2, 3)
    with torch.no_grad():
        head.value.weight.copy_(torch.tensor([[1.0, 0.0]]))
        head.value.bias.zero_()
        head.advantage.weight.copy_(torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]))
        head.advantage.bias.zero_()
    q = head(torch.tensor([[2.0, 4.0]]))
    # V = 2; A = [2, 4, 6], mean 4 -> Q = 2 + [-2, 0, 2]
    torch.testing.assert_close(q, torch.tensor([[[0.0], [2.0], [4.0]]]))


def test_mlp_q_network_shapes():
    net = build_q_network(ModelConfig(hidden_sizes=(16, 16)), VECTOR)
    assert net(torch.zeros(5, 4)).shape == (5, 3)


def test_nature_cnn_scales_uint8_frames():
    net = build_q_network(ModelConfig(encoder="nature_cnn", hidden_sizes=(32,), dueling=True), IMAGE)
    frames = torch.full((2, 4, 84, 84), 255, dtype=torch.uint8)
    torch.testing.assert_close(net(frames), net(torch.ones(2, 4, 84, 84)))


def test_nature_cnn_on_vectors_is_a_config_error():
    with pytest.raises(ConfigError, match="model=mlp"):
        build_q_network(ModelConfig(encoder="nature_cnn"), VECTOR)


def test_continuous_actions_are_a_config_error():
    spaces = EnvSpaces((3,), np.dtype(np.float32), None, "Box(-2.0, 2.0, (1,), float32)")
    with pytest.raises(ConfigError, match="discrete"):
        build_q_network(ModelConfig(), spaces)


def test_channel_last_images_are_a_config_error():
    spaces = EnvSpaces((96, 96, 3), np.dtype(np.uint8), 5, "Discrete(5)")
    with pytest.raises(ConfigError, match="channel-first"):
        build_q_network(ModelConfig(encoder="nature_cnn"), spaces)


def test_impala_cnn_actor_critic_on_procgen_frames():
    from raylab.models import build_actor_critic

    procgen = EnvSpaces((3, 64, 64), np.dtype(np.uint8), 15, "Discrete(15)")
    net = build_actor_critic(ModelConfig(encoder="impala_cnn", hidden_sizes=(256,)), procgen)
    logits, values = net(torch.zeros(2, 3, 64, 64, dtype=torch.uint8))
    assert logits.shape == (2, 15) and values.shape == (2,)
    # 64 -> 32 -> 16 -> 8 after three stride-2 pools, 32 channels: 2048 features into the 256 layer
    assert net.encoder.fc[0].in_features == 32 * 8 * 8
    with pytest.raises(ConfigError, match="model=impala_cnn needs image observations"):
        build_actor_critic(ModelConfig(encoder="impala_cnn"), VECTOR)


def test_actor_critic_policy_head_starts_near_uniform():
    from raylab.models import build_actor_critic

    net = build_actor_critic(ModelConfig(hidden_sizes=(16,)), VECTOR)
    logits, _ = net(torch.randn(64, 4))
    assert logits.abs().max() < 0.1

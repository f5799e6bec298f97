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


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("shape", [(32, 4, 64, 64), (4, 4, 84, 84), (8, 3, 64, 64)])
@pytest.mark.parametrize("layout", [torch.channels_last, torch.preserve_format])
def test_scaled_frames_equal_the_one_step_conversion_and_leave_the_frames_alone(shape, dtype, layout):
    from raylab.models.factory import scaled_frames

    obs = torch.randint(0, 256, shape, dtype=torch.uint8, generator=torch.Generator().manual_seed(1))
    kept = obs.clone()
    want = obs.to(dtype, memory_format=layout).div_(255.0)
    got = scaled_frames(obs, dtype, layout)
    assert got.dtype == dtype and got.stride() == want.stride()
    assert got.is_contiguous(memory_format=torch.channels_last) == (layout == torch.channels_last)
    assert torch.equal(got, want) and torch.equal(obs, kept)
    assert got.min() == 0.0 and got.max() == 1.0


@pytest.mark.parametrize("widths", [(32, 64, 64), (16, 32, 32), (8, 8, 24)])
def test_nature_cnn_convolutions_take_the_configured_widths(widths):
    """model.conv_channels sets the three convolutions' output channels, and the first hidden layer takes the
    narrower features (24 x 7 x 7 on 84 x 84 frames for the last width 24); the default is Mnih et al.'s."""
    net = build_q_network(ModelConfig(encoder="nature_cnn", hidden_sizes=(32,), conv_channels=widths), IMAGE)
    convs = [m for m in net.modules() if isinstance(m, torch.nn.Conv2d)]
    assert [c.out_channels for c in convs] == list(widths)
    assert [c.in_channels for c in convs] == [4, *widths[:2]]
    first = next(m for m in net.modules() if isinstance(m, torch.nn.Linear))
    assert first.in_features == widths[2] * 7 * 7
    assert net(torch.zeros(2, 4, 84, 84, dtype=torch.uint8)).shape == (2, 6)
    assert ModelConfig().conv_channels == (32, 64, 64)


def test_image_parts_of_a_dict_observation_take_the_configured_widths():
    from raylab.models.keyed import KeyedEncoder
    from raylab.types import ObsPart

    part = ObsPart("frame", "image", 0, 4 * 40 * 40, (4, 40, 40))
    encoder = KeyedEncoder([part], True, "nature_cnn", (16,), conv_channels=(8, 16, 12))
    assert [m.out_channels for m in encoder.modules() if isinstance(m, torch.nn.Conv2d)] == [8, 16, 12]


@pytest.mark.parametrize("widths", [(32, 64), (32, 0, 64), (16, 32, 32, 32)])
def test_conv_channels_other_than_three_positive_widths_are_refused(widths):
    message = r"model.conv_channels must be 3 positive widths, one per convolution .*: e.g. model.conv_channels="
    with pytest.raises(ConfigError, match=message + r"\[32,64,64\]$"):
        ModelConfig(encoder="nature_cnn", conv_channels=widths)


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


def test_orthogonal_init_starts_the_nature_cnn_as_cleanrl_does():
    from raylab.models import build_actor_critic

    torch.manual_seed(0)
    default = build_actor_critic(ModelConfig(encoder="nature_cnn", hidden_sizes=(512,)), IMAGE)
    ortho = build_actor_critic(ModelConfig(encoder="nature_cnn", hidden_sizes=(512,), init="orthogonal"), IMAGE)
    for layer in ortho.encoder.modules():
        if isinstance(layer, torch.nn.Conv2d | torch.nn.Linear):
            w = layer.weight.reshape(layer.weight.shape[0], -1)
            rows = min(w.shape)
            gram = w @ w.T if w.shape[0] <= w.shape[1] else w.T @ w  # orthogonal rows (or columns), gain^2 each
            assert torch.allclose(gram, 2.0 * torch.eye(rows), atol=1e-4)
            assert layer.bias is not None and not layer.bias.any()
    assert torch.allclose(ortho.policy.weight @ ortho.policy.weight.T, 1e-4 * torch.eye(6), atol=1e-8)
    assert torch.allclose((ortho.value.weight**2).sum(), torch.tensor(1.0)) and not ortho.value.bias.any()
    frames = torch.randint(0, 256, (16, 4, 84, 84), dtype=torch.uint8)
    with torch.no_grad():
        rms = [float(m.encoder(frames.float() / 255).pow(2).mean().sqrt()) for m in (default, ortho)]
    assert rms[1] > 10 * rms[0]  # the defaults shrink every layer's output; orthogonal with gain sqrt(2) does not
    logits, _ = ortho(frames)
    assert logits.abs().max() < 0.2  # still near uniform at the start


def test_orthogonal_init_is_refused_where_it_has_nothing_to_start(tmp_path):
    from tests.conftest import make_config

    with pytest.raises(ConfigError, match=r"model\.init"):
        make_config(tmp_path, "+experiment=cartpole_dqn", "model.init=orthogonal")

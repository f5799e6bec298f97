"""Observation encoders: MLP for vectors, the DQN Nature CNN for uint8 image stacks."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn


def fully_connected(in_dim: int, hidden_sizes: Sequence[int]) -> tuple[list[nn.Module], int]:
    """Linear + ReLU layers of the given sizes; returns them and the output width."""
    layers: list[nn.Module] = []
    for h in hidden_sizes:
        layers += [nn.Linear(in_dim, h), nn.ReLU()]
        in_dim = h
    return layers, in_dim


class MLPEncoder(nn.Module):
    """Flatten, then Linear + ReLU layers."""

    def __init__(self, obs_shape: Sequence[int], hidden_sizes: Sequence[int]):
        super().__init__()
        in_dim = 1
        for s in obs_shape:
            in_dim *= int(s)
        layers, self.out_dim = fully_connected(in_dim, hidden_sizes)
        self.net = nn.Sequential(nn.Flatten(), *layers)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.net(obs)


class NatureCNN(nn.Module):
    """Mnih et al. 2015: 32x8x8/4, 64x4x4/2, 64x3x3/1 (by default), then Linear + ReLU layers. Input
    channel-first.

    ``batch_norm`` adds BatchNorm after each convolution, as some DQN Mario networks do (the convolutions
    then drop their bias, which BatchNorm's shift replaces). ``conv_channels`` are the three convolutions'
    output channels (model.conv_channels).
    """

    def __init__(
        self,
        obs_shape: Sequence[int],
        hidden_sizes: Sequence[int],
        batch_norm: bool = False,
        conv_channels: Sequence[int] = (32, 64, 64),
    ):
        super().__init__()
        channels = int(obs_shape[0])
        c1, c2, c3 = (int(c) for c in conv_channels)
        layers: list[nn.Module] = []
        for in_c, out_c, kernel, stride in ((channels, c1, 8, 4), (c1, c2, 4, 2), (c2, c3, 3, 1)):
            layers.append(nn.Conv2d(in_c, out_c, kernel, stride=stride, bias=not batch_norm))
            if batch_norm:
                layers.append(nn.BatchNorm2d(out_c))
            layers.append(nn.ReLU())
        self.conv = nn.Sequential(*layers, nn.Flatten())
        self.conv.eval()  # the shape probe below must not touch BatchNorm's running statistics
        with torch.no_grad():
            in_dim = int(self.conv(torch.zeros(1, *obs_shape)).shape[1])
        self.conv.train()
        layers, self.out_dim = fully_connected(in_dim, hidden_sizes)
        self.fc = nn.Sequential(*layers)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.fc(self.conv(obs))


class _ResidualBlock(nn.Module):
    def __init__(self, channels: int):
        super().__init__()
        self.conv0 = nn.Conv2d(channels, channels, 3, padding=1)
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.conv1(torch.relu(self.conv0(torch.relu(x))))


class ImpalaCNN(nn.Module):
    """Espeholt et al. 2018's deep encoder, as in the Procgen paper: per stack a 3x3 conv, a 3x3/2 max pool
    and two residual blocks (channels 16, 32, 32), then ReLU and Linear + ReLU layers. Input channel-first."""

    channels_last_inference = True
    """Acting copies use channels-last memory format (raylab.models.factory.for_acting): oneDNN's 3x3
    convolutions and pooling run 2.0-2.5x faster so on the CPU (benchmarks/cnn_inference.json)."""

    def __init__(self, obs_shape: Sequence[int], hidden_sizes: Sequence[int], channels: Sequence[int] = (16, 32, 32)):
        super().__init__()
        layers: list[nn.Module] = []
        in_channels = int(obs_shape[0])
        for out_channels in channels:
            layers += [
                nn.Conv2d(in_channels, out_channels, 3, padding=1),
                nn.MaxPool2d(3, stride=2, padding=1),
                _ResidualBlock(out_channels),
                _ResidualBlock(out_channels),
            ]
            in_channels = out_channels
        self.conv = nn.Sequential(*layers, nn.ReLU(), nn.Flatten())
        with torch.no_grad():
            in_dim = int(self.conv(torch.zeros(1, *obs_shape)).shape[1])
        fc, self.out_dim = fully_connected(in_dim, hidden_sizes)
        self.fc = nn.Sequential(*fc)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.fc(self.conv(obs))

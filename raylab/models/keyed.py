"""The encoder of an observation whose Tuple or Dict holds an image: one encoder per part, combined.

raylab/envs/spaces.py encodes such an observation (MiniGrid's native ``{"image", "direction", "mission"}``) into
one flat row, uint8 when every part fits one, and says in ``EnvSpaces.obs_parts`` where each image and vector
lies in it. ``KeyedEncoder`` undoes the row: each image part, reshaped to (C, H, W), goes through its own CNN of
the family the model names (``model=nature_cnn`` or ``impala_cnn``; with ``model=mlp`` an image is flattened
into the vector), the vector parts are gathered into one vector, and the CNNs' features and the vector go
through ``model.hidden_sizes`` Linear + ReLU layers together. That is SB3's ``CombinedExtractor`` (a CNN per
image key, the rest flattened, concatenated), chosen by the model config instead of a policy class.

Scaling. ``raylab.models.factory.encode`` feeds a uint8 row scaled by 1/255, as it feeds frames, and a float32
row (a part held floats) as it is. The encoder undoes that per element: each image reaches its CNN multiplied
by ``model.image_scale`` (1/255: pixels in [0, 1]; 0.1 for MiniGrid's codes of at most 10), each vector part
(one-hots, bits, numbers) as the env gave it.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from raylab.errors import ConfigError
from raylab.models.encoders import ImpalaCNN, NatureCNN, fully_connected
from raylab.types import ObsPart

NATURE_MIN_SIDE = 36
"""The Nature CNN's 8x8/4, 4x4/2 and 3x3/1 convolutions need images of at least 36x36."""


class KeyedEncoder(nn.Module):
    """A CNN per image part and the vector parts, combined through Linear + ReLU layers (module docstring)."""

    scale: torch.Tensor
    """Per element of the row: what it is multiplied by on arrival."""
    vector_index: torch.Tensor
    """The row's elements that form the vector, in order."""

    def __init__(
        self,
        parts: Sequence[ObsPart],
        row_uint8: bool,
        cnn: str,
        hidden_sizes: Sequence[int],
        image_scale: float = 1.0 / 255.0,
        batch_norm: bool = False,
        conv_channels: Sequence[int] = (32, 64, 64),
    ):
        super().__init__()
        size = max(p.stop for p in parts)
        images = [p for p in parts if p.kind == "image" and cnn != "mlp"]
        vectors = [p for p in parts if p not in images]
        scale = torch.ones(size)
        arrived = 1.0 / 255.0 if row_uint8 else 1.0  # a uint8 row arrives scaled by 1/255, as frames do
        for p in parts:
            scale[p.start : p.stop] = (image_scale if p.kind == "image" else 1.0) / arrived
        self.register_buffer("scale", scale, persistent=False)  # from the spaces: not weights to ship or save
        self.images = [(p.start, p.stop, p.shape) for p in images]
        self.register_buffer(
            "vector_index",
            torch.cat([torch.arange(p.start, p.stop) for p in vectors] or [torch.zeros(0)]).long(),
            persistent=False,
        )
        cnns = [_cnn(cnn, p, batch_norm, conv_channels) for p in images]
        self.cnns = nn.ModuleList(cnns)
        width = sum(c.out_dim for c in cnns) + int(self.vector_index.numel())
        layers, self.out_dim = fully_connected(width, hidden_sizes)
        self.fc = nn.Sequential(*layers)

    def forward(self, rows: torch.Tensor) -> torch.Tensor:
        x = rows * self.scale
        features = [
            cnn(x[:, a:b].reshape(-1, *shape)) for cnn, (a, b, shape) in zip(self.cnns, self.images, strict=True)
        ]
        if self.vector_index.numel():
            features.append(x.index_select(1, self.vector_index))
        return self.fc(torch.cat(features, dim=1))


def _cnn(name: str, part: ObsPart, batch_norm: bool, conv_channels: Sequence[int]) -> NatureCNN | ImpalaCNN:
    if name == "impala_cnn":
        return ImpalaCNN(part.shape, ())
    if name != "nature_cnn":
        raise ConfigError(
            f"model={name} has no encoder for the image part '{part.key}': use model=mlp, nature_cnn or impala_cnn"
        )
    if min(part.shape[1:]) < NATURE_MIN_SIDE:
        raise ConfigError(
            f"the image part '{part.key}' is {part.shape[1]}x{part.shape[2]}, smaller than model=nature_cnn's "
            f"{NATURE_MIN_SIDE}x{NATURE_MIN_SIDE}: use model=impala_cnn (3x3 convolutions) or model=mlp"
        )
    return NatureCNN(part.shape, (), batch_norm=batch_norm, conv_channels=conv_channels)

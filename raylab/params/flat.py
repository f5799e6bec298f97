"""One flat float32 vector per model: what the parameter server shards and what workers push and pull.

A flat vector makes sharding a matter of slicing (shard k owns ``[bounds[k], bounds[k + 1])``), makes a push
one contiguous array (zero-copy through Ray's object store), and lets the server run its optimizer as one
elementwise op instead of one per tensor.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from raylab.types import Weights


@dataclass(frozen=True)
class ParamLayout:
    """Names, shapes and offsets of a module's parameters inside the flat vector (registration order)."""

    names: tuple[str, ...]
    shapes: tuple[tuple[int, ...], ...]

    @classmethod
    def of(cls, module: nn.Module) -> ParamLayout:
        named = list(module.named_parameters())
        return cls(tuple(n for n, _ in named), tuple(tuple(p.shape) for _, p in named))

    @property
    def sizes(self) -> list[int]:
        return [int(np.prod(s)) for s in self.shapes]

    @property
    def size(self) -> int:
        return sum(self.sizes)

    def shard_bounds(self, num_shards: int) -> list[int]:
        """Offsets splitting the vector into ``num_shards`` near-equal contiguous slices."""
        if not 1 <= num_shards <= max(1, self.size):
            from raylab.errors import ConfigError

            raise ConfigError(
                f"params.num_shards={num_shards} cannot split a model of {self.size} parameters: "
                f"set params.num_shards between 1 and {self.size}"
            )
        return [round(k * self.size / num_shards) for k in range(num_shards + 1)]

    def weights(self, version: int, flat: np.ndarray) -> Weights:
        """Inference ``Weights`` (named arrays) of a flat vector."""
        return Weights(version, self.to_dict(flat))

    def as_dict(self) -> dict[str, list]:
        """The layout as plain lists, for checkpoints."""
        return {"names": list(self.names), "shapes": [list(s) for s in self.shapes]}

    def to_dict(self, flat: np.ndarray) -> dict[str, np.ndarray]:
        """Views of ``flat`` per parameter name, as inference ``Weights.params`` expect."""
        out, offset = {}, 0
        for name, shape, size in zip(self.names, self.shapes, self.sizes, strict=True):
            out[name] = flat[offset : offset + size].reshape(shape)
            offset += size
        return out


def flatten_params(module: nn.Module) -> np.ndarray:
    """The module's parameters as one new float32 vector."""
    return torch.cat([p.detach().reshape(-1) for p in module.parameters()]).to(torch.float32).cpu().numpy()


def flatten_grads(module: nn.Module) -> np.ndarray:
    """The module's gradients as one new float32 vector (zeros where a parameter got no gradient)."""
    parts = [
        (p.grad.reshape(-1) if p.grad is not None else torch.zeros(p.numel(), dtype=p.dtype))
        for p in module.parameters()
    ]
    return torch.cat(parts).to(torch.float32).cpu().numpy()


# Ray's object store hands out read-only arrays, which raylab only reads; torch warns about every such view. The
# filter is set once here: entering warnings.catch_warnings() around each view cost ~30 us a call, several times
# the view itself, on every replay batch the learner takes.
warnings.filterwarnings("ignore", message="The given NumPy array is not writable")


def readonly_tensor(array: np.ndarray) -> torch.Tensor:
    """A tensor view of ``array`` that raylab only reads (a read-only array from Ray's object store included)."""
    return torch.from_numpy(array)


def load_params(module: nn.Module, params: dict[str, np.ndarray]) -> None:
    """Copy named numpy params (``Weights.params``, possibly read-only views) into ``module``."""
    module.load_state_dict({k: readonly_tensor(v) for k, v in params.items()})


def load_flat(module: nn.Module, flat: np.ndarray) -> None:
    """Copy a flat vector into the module's parameters (``flat`` may be a read-only object-store view; the
    module never aliases it)."""
    source = readonly_tensor(np.asarray(flat, np.float32))
    offset = 0
    with torch.no_grad():
        for p in module.parameters():
            n = p.numel()
            p.copy_(source[offset : offset + n].view_as(p))
            offset += n
    if offset != source.numel():
        raise ValueError(f"flat vector has {source.numel()} values, the module {offset}")

"""Policies with memory: an LSTM or GRU core between the encoder and the heads (model.recurrent).

State layout: one float32 row per slot, ``[h, c]`` for an LSTM (``2 * size`` floats), ``h`` for a GRU, as
Sample Factory keeps it (sample_factory/model/core.py). A slot's state is zeroed before the first step of each
episode: ``reset_before[t, b]`` marks the steps that start one (CleanRL's ``ppo_atari_lstm`` multiplies the
state by ``1 - done`` the same way). Rollout workers act with ``step``; learners replay whole sequences with
``unroll``, running the encoder once over every step and only the core step by step.
"""

from __future__ import annotations

import torch
from torch import nn


class RecurrentCore(nn.Module):
    """One LSTM or GRU layer: ``step`` for acting, ``unroll`` over ``[L, B]`` with resets inside."""

    def __init__(self, kind: str, input_size: int, size: int):
        super().__init__()
        if kind not in ("lstm", "gru"):
            raise ValueError(f"recurrent core must be lstm or gru, got {kind!r}")
        self.kind = kind
        self.size = size
        self.rnn: nn.LSTM | nn.GRU = (nn.LSTM if kind == "lstm" else nn.GRU)(input_size, size)
        for name, param in self.rnn.named_parameters():  # CleanRL's ppo_atari_lstm initialisation
            if "bias" in name:
                nn.init.constant_(param, 0.0)
            else:
                nn.init.orthogonal_(param, 1.0)

    @property
    def state_size(self) -> int:
        return 2 * self.size if self.kind == "lstm" else self.size

    def _split(self, state: torch.Tensor) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
        if self.kind == "lstm":
            h, c = state.split(self.size, dim=-1)
            return h.unsqueeze(0).contiguous(), c.unsqueeze(0).contiguous()
        return state.unsqueeze(0).contiguous()

    def _join(self, hx: torch.Tensor | tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        if isinstance(hx, tuple):
            return torch.cat([hx[0][0], hx[1][0]], dim=-1)
        return hx[0]

    def step(self, x: torch.Tensor, state: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``x [B, F]``, ``state [B, S]`` -> (output ``[B, size]``, next state ``[B, S]``)."""
        y, hx = self.rnn(x.unsqueeze(0), self._split(state))
        return y[0], self._join(hx)

    def unroll(
        self, x: torch.Tensor, state: torch.Tensor, reset_before: torch.Tensor | None, keep: bool = False
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """``x [L, B, F]`` from ``state [B, S]``, the state zeroed before every step where ``reset_before
        [L, B]`` is True. Returns (outputs ``[L, B, size]``, the state after the last step, and with ``keep``
        the state after each step ``[L, B, S]``, before any reset that follows it).

        Without resets (or with resets only at step 0) and without ``keep``, one call of the fused kernel;
        otherwise a loop over the steps."""
        if reset_before is not None and bool(reset_before[0].any()):
            state = state * (~reset_before[0]).unsqueeze(-1).to(state.dtype)
        inside = reset_before is not None and bool(reset_before[1:].any())
        if not inside and not keep:
            y, hx = self.rnn(x, self._split(state))
            return y, self._join(hx), None
        outputs, after = [], []
        for t in range(x.shape[0]):
            if t > 0 and reset_before is not None:
                state = state * (~reset_before[t]).unsqueeze(-1).to(state.dtype)
            y, state = self.step(x[t], state)
            outputs.append(y)
            if keep:
                after.append(state)
        return torch.stack(outputs), state, torch.stack(after) if keep else None


def reset_mask(terminated: torch.Tensor, truncated: torch.Tensor) -> torch.Tensor:
    """``[T, B]`` episode ends -> ``[T + 1, B]`` ``reset_before``: step t + 1 starts a new episode where step t
    ended one; step 0 never (a worker hands each chunk the state its slots act from, already reset)."""
    ended = terminated | truncated
    return torch.cat([torch.zeros_like(ended[:1]), ended], dim=0)

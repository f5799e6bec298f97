"""Policies with memory: an LSTM or GRU core between the encoder and the heads (model.recurrent).

State layout: one float32 row per slot, ``[h, c]`` for an LSTM (``2 * size`` floats), ``h`` for a GRU, as
Sample Factory keeps it (sample_factory/model/core.py). A slot's state is zeroed before the first step of each
episode: ``reset_before[t, b]`` marks the steps that start one (CleanRL's ``ppo_atari_lstm`` multiplies the
state by ``1 - done`` the same way). Rollout workers act with ``step``; learners replay whole sequences with
``unroll``, running the encoder once over every step and only the core step by step.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence


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

    packed = True
    """``unroll`` runs the pieces between episode starts as one packed call (False: a Python loop over the steps,
    what benchmarks/recurrent_cost.py compares it with)."""

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

        Without ``keep``, one call of the layer's kernel: over the whole ``[L, B]`` when no episode starts
        inside it, else over the episodes' pieces packed (``torch.nn.utils.rnn.pack_padded_sequence``), each
        piece from its own start state, as Sample Factory's ``build_rnn_inputs`` does. With ``keep`` (an LSTM's
        cell state is not an output) a loop over the steps."""
        if reset_before is not None and bool(reset_before[0].any()):
            state = state * (~reset_before[0]).unsqueeze(-1).to(state.dtype)
        inside = reset_before is not None and bool(reset_before[1:].any())
        if not inside and not keep:
            y, hx = self.rnn(x, self._split(state))
            return y, self._join(hx), None
        if not keep and self.packed:
            assert reset_before is not None
            return (*self._unroll_packed(x, state, reset_before), None)
        outputs, after = [], []
        for t in range(x.shape[0]):
            if t > 0 and reset_before is not None:
                state = state * (~reset_before[t]).unsqueeze(-1).to(state.dtype)
            y, state = self.step(x[t], state)
            outputs.append(y)
            if keep:
                after.append(state)
        return torch.stack(outputs), state, torch.stack(after) if keep else None

    def _unroll_packed(
        self, x: torch.Tensor, state: torch.Tensor, reset_before: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``unroll`` with episode starts inside: every column cut where an episode starts, the pieces padded
        into ``[longest, pieces]`` and run as one packed sequence (the first piece of column b from
        ``state[b]``, the others from zeros), the outputs gathered back into ``[L, B]``."""
        steps, batch = reset_before.shape
        starts = reset_before.detach().cpu().numpy().T.copy()  # [B, L], column-major order of the steps
        starts[:, 0] = True
        flat = starts.reshape(-1)
        piece = np.cumsum(flat) - 1  # each step's piece
        first = np.flatnonzero(flat)  # each piece's first step
        position = np.arange(flat.size) - first[piece]
        lengths = np.diff(np.append(first, flat.size))
        device = x.device
        piece_t, position_t = torch.from_numpy(piece).to(device), torch.from_numpy(position).to(device)
        inputs = x.new_zeros(int(lengths.max()), len(first), x.shape[-1])
        inputs[position_t, piece_t] = x.transpose(0, 1).reshape(steps * batch, -1)
        opening = torch.from_numpy(first % steps == 0).to(device)  # a column's first piece
        column = torch.from_numpy(first // steps).to(device)
        init = torch.where(opening.unsqueeze(-1), state[column], torch.zeros_like(state[column]))
        packed = pack_padded_sequence(inputs, torch.from_numpy(lengths), enforce_sorted=False)
        out, hx = self.rnn(packed, self._split(init))
        padded, _ = pad_packed_sequence(out)
        y = padded[position_t, piece_t].reshape(batch, steps, -1).transpose(0, 1)
        last_piece = torch.from_numpy(piece.reshape(batch, steps)[:, -1]).to(device)
        return y, self._join(hx)[last_piece]


class SlotStates:
    """A recurrent policy's memory: one float32 row per slot (``size`` floats), zeros until the first step and
    wherever an episode ended. What ActorCriticPolicy and EpsilonGreedyPolicy keep for the ``Stateful`` protocol."""

    def __init__(self, size: int):
        self.size = size
        self.rows: np.ndarray | None = None
        """[N, size] the state each slot acts from next; None before the first step."""

    def current(self, num: int) -> np.ndarray:
        """The live rows of ``num`` slots (zeros when there were none, or as many as another batch had)."""
        if self.rows is None or len(self.rows) != num:
            self.rows = np.zeros((num, self.size), np.float32)
        return self.rows

    def copy(self, num: int) -> np.ndarray:
        """A copy of the rows ``num`` slots act from next."""
        if self.rows is None or len(self.rows) != num:
            return np.zeros((num, self.size), np.float32)
        return self.rows.copy()

    def reset(self, done: np.ndarray) -> None:
        """Zero the rows where ``done``."""
        if self.rows is not None and len(self.rows) == len(done):
            self.rows[done] = 0.0


def reset_mask(terminated: torch.Tensor, truncated: torch.Tensor) -> torch.Tensor:
    """``[T, B]`` episode ends -> ``[T + 1, B]`` ``reset_before``: step t + 1 starts a new episode where step t
    ended one; step 0 never (a worker hands each chunk the state its slots act from, already reset)."""
    ended = terminated | truncated
    return torch.cat([torch.zeros_like(ended[:1]), ended], dim=0)

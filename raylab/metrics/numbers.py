"""How returns are written for a person: as many decimals as the scale needs, so that a success rate of 0.718
(FrozenLake) or a Blackjack mean of -0.041 is not shown as "0.7" or "-0.0", and Pong's -20.24 stays "-20.2"."""

from __future__ import annotations


def fmt_return(value: float) -> str:
    """1 decimal from 10 up, 2 from 1 up, 3 below 1: ``475.0``, ``-20.2``, ``1.25``, ``0.718``, ``-0.041``."""
    size = abs(value)
    return f"{value:.1f}" if size >= 10 else f"{value:.2f}" if size >= 1 else f"{value:.3f}"

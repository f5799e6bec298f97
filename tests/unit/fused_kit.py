"""One algorithm's learners and data, as the shared fused-update tests take them (test_fused_contract.py)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from raylab.learner import Learner


@dataclass(frozen=True)
class FusedKit:
    make: Callable[..., Learner]
    """``make(hidden=..., fused=..., **options)``: a learner, from the same seed every time."""
    calls: Callable[[int], list[list[Any]]]
    """``calls(n)``: the data of n learner calls, the same every time."""
    train_both: Callable[[Learner, Learner, list[list[Any]]], Any]
    """Both learners through the same calls, compared after each."""
    assert_same: Callable[[Learner, Learner], None]
    """Their parameters and Adam state agree to float32 rounding."""
    unfused: Mapping[str, tuple[Mapping[str, Any], str]]
    """Options of ``make`` the fused step does not implement, with the reason it names."""

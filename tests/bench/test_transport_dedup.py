"""benchmarks/transport_dedup.py's codec without Ray or an env: decoding gives back every stack exactly, each stack
that continues the one before sends one new frame, and a reset (or any stack that does not continue) sends whole."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tests.bench import load_benchmark


@pytest.fixture(scope="module")
def codec() -> Any:
    return load_benchmark("transport_dedup")


def streams(steps: int, envs: int, k: int, channels: int, resets: dict[tuple[int, int], bool]) -> np.ndarray:
    """obs [steps+1, envs, k*channels, 6, 6]: each env's stacks slide by one fresh frame a step, and start over
    (k copies of a fresh frame, as EnvPool stacks after a reset) at the (t, e) in ``resets``."""
    rng = np.random.default_rng(1)
    obs = np.empty((steps + 1, envs, k * channels, 6, 6), np.uint8)
    for e in range(envs):
        stack = [rng.integers(0, 256, (channels, 6, 6), dtype=np.uint8)] * k
        for t in range(steps + 1):
            fresh = rng.integers(0, 256, (channels, 6, 6), dtype=np.uint8)
            if t > 0:
                stack = [fresh] * k if resets.get((t, e)) else [*stack[1:], fresh]
            obs[t, e] = np.concatenate(stack)
    return obs


@pytest.mark.parametrize("channels", [1, 3])
def test_round_trip_is_exact_and_sends_one_frame_per_continued_stack(codec: Any, channels: int) -> None:
    steps, envs, k = 10, 3, 4
    resets = {(4, 1): True, (7, 2): True}
    obs = streams(steps, envs, k, channels, resets)
    frames, ids = codec.encode(obs, k)
    assert np.array_equal(codec.decode(frames, ids), obs)
    continued = steps * envs - len(resets)
    assert frames.shape == (envs * k + continued + len(resets) * k, channels, 6, 6)
    assert ids.dtype == np.int32 and ids.shape == (steps + 1, envs, k)


def test_a_stack_that_repeats_a_frame_without_continuing_is_sent_whole(codec: Any) -> None:
    """Equal frames are not enough: a stack is sent as one new frame only when its first k-1 frames are exactly the
    last k-1 of the stack before; otherwise all k go, and decoding stays exact."""
    obs = streams(5, 2, 4, 1, {})
    obs[3, 0] = obs[3, 0][::-1].copy()  # same frames, another order: does not continue step 2's stack
    obs[4, 0] = np.concatenate([obs[3, 0][1:], obs[4, 0][-1:]])  # continues the reordered stack
    frames, ids = codec.encode(obs, 4)
    assert np.array_equal(codec.decode(frames, ids), obs)
    # whole at the start (2 envs), at step 3 and at step 5 (which no longer continues step 4) of env 0; one frame
    # for each of the other 10 - 2 stacks
    assert frames.shape[0] == 2 * 4 + 4 + 4 + (5 * 2 - 2)

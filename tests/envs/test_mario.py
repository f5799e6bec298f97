"""Super Mario Bros under numpy 2: the raylab fix reproduces numpy 1.26's rewards and info exactly."""

import zlib
from pathlib import Path

import numpy as np
import pytest

from raylab.config import EnvConfig
from raylab.envs import env_spaces, make_env
from raylab.envs.mario import MarioEnv, parse_id
from raylab.errors import ConfigError

REFERENCE = Path(__file__).parent / "data" / "mario_reference_numpy126.npz"
STATUS = ("small", "tall", "fireball")


@pytest.mark.parametrize("steps", [5_000, pytest.param(20_000, marks=pytest.mark.slow)])
def test_actions_match_the_numpy_1_reference(steps):
    """The default tier replays the reference's first 5,000 actions (a quarter of the time); make test-all all
    20,000."""
    ref = dict(np.load(REFERENCE))  # NpzFile decompresses on every access
    assert str(ref["numpy_version"]).startswith("1.26") and np.__version__.startswith("2.")
    assert len(ref["actions"]) == 20_000
    env = MarioEnv("SuperMarioBros-1-1-v0", actions="simple")
    env.reset()
    crcs = []
    for t, action in enumerate(ref["actions"][:steps]):
        frame, reward, terminated, truncated, info = env.step(int(action))
        assert reward == ref["rewards"][t], f"reward differs at step {t}"
        assert terminated == ref["dones"][t] and not truncated, f"done differs at step {t}"
        for key in ("coins", "flag_get", "life", "score", "stage", "time", "world", "x_pos", "y_pos"):
            assert int(info[key]) == ref[key][t], f"info[{key!r}] differs at step {t}"
        assert STATUS.index(info["status"]) == ref["status"][t]
        if t % 100 == 0:
            crcs.append(zlib.crc32(np.ascontiguousarray(frame).tobytes()))
        if terminated:
            env.reset()
    np.testing.assert_array_equal(np.array(crcs, np.uint32), ref["screen_crc32"][: len(crcs)])
    assert len(crcs) == steps // 100
    # the sequence covers deaths and resets, not one lucky run (20 and more over all 20,000 actions)
    assert ref["dones"][:steps].sum() >= steps // 1000


def test_frames_are_copies_not_views_of_the_emulator_buffer():
    env = MarioEnv("SuperMarioBros-1-1-v0")
    first, _ = env.reset()
    kept = first.copy()
    for _ in range(60):
        env.step(1)
    np.testing.assert_array_equal(first, kept)


def test_preprocessed_observations_and_info():
    cfg = EnvConfig(family="mario", id="SuperMarioBros-1-1-v0", frame_skip=4, grayscale=True, resize=(84, 84),
                    frame_stack=4, options={"actions": "right_only"})  # fmt: skip
    spaces = env_spaces(cfg)
    assert (spaces.obs_shape, spaces.obs_dtype, spaces.num_actions, spaces.frames_per_step) == (
        (4, 84, 84), np.uint8, 5, 4,
    )  # fmt: skip
    env = make_env(cfg, seed=0)
    obs, _ = env.reset()
    obs, _, _, _, info = env.step(1)
    assert obs.shape == (4, 84, 84) and obs.dtype == np.uint8
    assert {"x_pos", "flag_get", "life", "stage", "world"} <= set(info)


@pytest.mark.parametrize(
    ("env_id", "expected"),
    [
        ("SuperMarioBros-v0", ("vanilla", False, None)),
        ("SuperMarioBros-4-2-v1", ("downsample", False, (4, 2))),
        ("SuperMarioBros2-12-4-v0", ("vanilla", True, (12, 4))),
    ],
)
def test_stage_ids(env_id, expected):
    assert parse_id(env_id) == expected


@pytest.mark.parametrize(
    "env_id", ["SuperMarioBros-9-1-v0", "SuperMarioBros-1-5-v0", "SuperMarioBros2-1-1-v3", "Mario"]
)
def test_unknown_stage_lists_the_valid_ids(env_id):
    with pytest.raises(ConfigError, match=r"valid ids are SuperMarioBros-v0\.\.v3"):
        parse_id(env_id)


def test_unknown_action_set():
    with pytest.raises(ConfigError, match="right_only, simple, complex"):
        MarioEnv("SuperMarioBros-1-1-v0", actions="all")


def test_y_position_above_the_screen_does_not_wrap():
    # numpy 1: 255 + (255 - 3) = 507; plain numpy 2 would give uint8 251 (upstream code, nes-py#99)
    env = MarioEnv("SuperMarioBros-1-1-v0")
    env.reset()
    env._nes.ram[0x00B5] = 0  # above the viewport
    env._nes.ram[0x03B8] = 3
    assert env._nes._y_position == 507
    env._nes.ram[0x00B5] = 1
    assert env._nes._y_position == 252

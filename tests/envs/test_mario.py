"""Super Mario Bros under numpy 2: the raylab fix reproduces numpy 1.26's rewards and info exactly."""

import zlib
from dataclasses import replace
from itertools import pairwise
from pathlib import Path

import numpy as np
import pytest

from raylab.config import EnvConfig
from raylab.envs import env_spaces, make_env
from raylab.envs.mario import MarioEnv, _bgrx_buffer, parse_id
from raylab.envs.registry import check_env_config
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


def test_frames_come_from_the_emulators_bgrx_buffer_and_equal_its_rgb_view():
    """nes-py 8.2.1 lays its frame out as BGRx bytes; the RGB frame is one channel swap of that buffer (the
    reference crcs above check its pixels over 5,000 steps); a layout that is not that one takes nes-py's view."""
    env = MarioEnv("SuperMarioBros-1-1-v0")
    env.reset()
    for _ in range(40):
        frame, *_ = env.step(1)
    assert env._bgrx is not None and np.shares_memory(env._bgrx, env._nes.screen)
    np.testing.assert_array_equal(frame, env._nes.screen)
    assert frame.flags["C_CONTIGUOUS"] and frame.dtype == np.uint8
    rgb = np.zeros((240, 256, 4), np.uint8)[:, :, :3]  # an RGB view of some other layout
    assert _bgrx_buffer(rgb) is None and _bgrx_buffer(np.zeros((240, 256, 3), np.uint8)) is None
    shifted = np.zeros(240 * 256 * 4, np.uint8).reshape(240, 256, 4)[:, :, ::-1][:, :, :3]  # channels 3, 2, 1
    assert shifted.strides == (1024, 4, -1) and _bgrx_buffer(shifted) is None


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


def test_a_stalled_mario_is_truncated_after_stall_frames_and_a_running_one_is_not():
    """env.options.stall_steps: frames without a new rightmost x-position end the episode, truncated (a greedy
    policy stuck at a pipe otherwise plays out the game clock, ~2,400 agent steps)."""
    env = MarioEnv("SuperMarioBros-1-1-v0", stall_frames=90)
    env.reset()
    ends = []
    for t in range(1, 200):
        _, _, terminated, truncated, _ = env.step(0)  # NOOP: Mario stands at the start
        if terminated or truncated:
            ends.append((t, terminated, truncated))
            break
    assert ends == [(90, False, True)]
    _, info = env.reset()
    start = info["x_pos"]
    for _ in range(150):  # running right: a new rightmost x nearly every frame
        _, _, terminated, truncated, info = env.step(1)
        assert not truncated
        if terminated:
            break
    assert info["x_pos"] > start + 100
    off = MarioEnv("SuperMarioBros-1-1-v0")  # None: as before, only death, the flag or the clock
    off.reset()
    assert not any(off.step(0)[3] for _ in range(300))


def test_a_stall_with_a_penalty_ends_as_a_failure_with_the_penalty_taken_from_its_reward():
    """env.options.stall_penalty: the stall terminates (no bootstrap through it, as a death) and costs the penalty on
    the frame it ends; before it, the same game and the same rewards as a truncated stall."""
    failing = MarioEnv("SuperMarioBros-1-1-v0", stall_frames=90, stall_penalty=15)
    plain = MarioEnv("SuperMarioBros-1-1-v0", stall_frames=90)
    failing.reset(), plain.reset()
    for t in range(1, 200):
        a, b = failing.step(0), plain.step(0)  # NOOP: Mario stands at the start
        if t < 90:
            assert a[1:4] == b[1:4] == (b[1], False, False)
            continue
        assert (a[2], a[3]) == (True, False) and (b[2], b[3]) == (False, True)
        assert a[1] == b[1] - 15.0
        break
    else:
        raise AssertionError("no stall within 200 frames")
    running = MarioEnv("SuperMarioBros-1-1-v0", stall_frames=90, stall_penalty=15)
    _, info = running.reset()
    start = info["x_pos"]
    for _ in range(150):  # running right: no stall, no penalty
        _, reward, terminated, truncated, info = running.step(1)
        assert not truncated and reward > -15
        if terminated:
            break
    assert info["x_pos"] > start + 100


def test_a_whole_game_counts_a_stall_from_each_new_stage(monkeypatch):
    """SuperMarioBros-v0 plays on after a flag, and x_pos starts again near 0 on the next stage (and at a checkpoint
    after a lost life): progress there is measured from where Mario now stands, not against the last stage's x."""
    env = MarioEnv("SuperMarioBros-v0", stall_frames=90)
    env.reset()
    for _ in range(120):  # running right on 1-1: the rightmost x grows to a few hundred
        assert not env.step(1)[3]
    nes = type(env._nes)
    monkeypatch.setattr(nes, "_stage", property(lambda self: 2))  # 1-2, walking right from its start
    x = [40]
    monkeypatch.setattr(nes, "_x_position", property(lambda self: x[0]))
    for _ in range(150):  # 150 frames of progress from x = 40: no stall
        x[0] += 1
        assert not env.step(1)[3]
    # then standing still on 1-2 (x stays where it is)
    ends = [t for t in range(1, 200) if env.step(0)[3]]
    assert ends[0] == 90


def test_the_flag_reward_is_paid_on_the_frame_that_reaches_the_flag_only(monkeypatch):
    """env.options.flag_reward: the game pays only for x-progress (and a clock and death penalty), so standing at
    the foot of the flag pole costs a policy next to nothing; the option adds a reward on the flag's frame."""
    paid, plain = MarioEnv("SuperMarioBros-1-1-v0", flag_reward=50), MarioEnv("SuperMarioBros-1-1-v0")
    paid.reset(), plain.reset()
    for _ in range(60):  # running right: the same game, the same rewards
        a, b = paid.step(1), plain.step(1)
        assert a[1] == b[1] and not a[2] and not a[4]["flag_get"]
    nes = type(paid._nes)  # the flag, as gym-super-mario-bros sees it: the player sliding down the pole
    monkeypatch.setattr(nes, "_flag_get", property(lambda self: True))
    a, b = paid.step(1), plain.step(1)
    assert a[2] and b[2] and a[4]["flag_get"] and b[4]["flag_get"]
    assert a[1] == b[1] + 50.0


def test_the_whole_game_pays_the_flag_reward_once_a_flag(monkeypatch):
    """A whole-game id plays on after a stage's flag (flag_get stays true while Mario slides down the pole):
    one reward as flag_get turns true, another at the next stage's flag."""
    paid, plain = MarioEnv("SuperMarioBros-v0", flag_reward=50), MarioEnv("SuperMarioBros-v0")
    paid.reset(), plain.reset()
    nes = type(paid._nes)
    extra = []
    for flag in (False, True, True, True, False, True, False):
        monkeypatch.setattr(nes, "_flag_get", property(lambda self, flag=flag: flag))
        a, b = paid.step(1), plain.step(1)
        assert not a[2] and a[4]["flag_get"] == flag
        extra.append(a[1] - b[1])
    assert extra == [0.0, 50.0, 0.0, 0.0, 0.0, 50.0, 0.0]


def test_flag_reward_goes_through_the_family():
    cfg = EnvConfig(family="mario", id="SuperMarioBros-1-1-v0", frame_skip=4, noop_max=0,
                    options={"flag_reward": 15})  # fmt: skip
    check_env_config(cfg)
    env = make_env(cfg, seed=0)
    assert env.unwrapped._flag_reward == 15.0
    env.close()


def test_stall_steps_count_agent_steps_through_the_family():
    cfg = EnvConfig(family="mario", id="SuperMarioBros-1-1-v0", frame_skip=4, grayscale=True, resize=(84, 84),
                    frame_stack=1, noop_max=0, options={"actions": "simple", "stall_steps": 25})  # fmt: skip
    env = make_env(cfg, seed=0)
    env.reset(seed=0)
    steps = [env.step(0) for _ in range(25)]  # NOOP; noop_max=0: the first frame is the agent's
    assert [s[3] for s in steps] == [False] * 24 + [True] and not any(s[2] for s in steps)
    env.close()


@pytest.mark.parametrize(
    ("stall", "noop_max", "expected"),
    [
        (0, 0, "env.options.stall_steps must be a whole number of agent steps >= 1 or null (off), got 0"),
        ("yes", 0, "got 'yes'"),
        (5, 30, "env.options.stall_steps=5 is 20 frames, within the 30 no-op frames a start may take (env.noop_max): "
                "set it above 7, or null"),
    ],
)  # fmt: skip
def test_bad_stall_steps_are_one_line(stall, noop_max, expected):
    cfg = EnvConfig(family="mario", id="SuperMarioBros-1-1-v0", frame_skip=4, noop_max=noop_max,
                    options={"stall_steps": stall})  # fmt: skip
    with pytest.raises(ConfigError) as err:
        check_env_config(cfg)
    assert expected in str(err.value) and "\n" not in str(err.value)


def test_stall_penalty_goes_through_the_family_in_agent_steps():
    cfg = EnvConfig(family="mario", id="SuperMarioBros-1-1-v0", frame_skip=4, grayscale=True, resize=(84, 84),
                    frame_stack=1, noop_max=0, reward_scale=1 / 15,
                    options={"stall_steps": 25, "stall_penalty": 15})  # fmt: skip
    check_env_config(cfg)
    env, plain = make_env(cfg, seed=0), make_env(replace(cfg, options={"stall_steps": 25}), seed=0)
    env.reset(seed=0), plain.reset(seed=0)
    steps, plain_steps = [env.step(0) for _ in range(25)], [plain.step(0) for _ in range(25)]
    assert [s[2] for s in steps] == [False] * 24 + [True] and not any(s[3] for s in steps)
    assert [s[1] for s in steps[:-1]] == [s[1] for s in plain_steps[:-1]]
    assert steps[-1][1] == pytest.approx(plain_steps[-1][1] - 1.0)  # 15 game units, after reward_scale 1/15
    env.close(), plain.close()


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({"stall_steps": 150, "stall_penalty": -1},
         "env.options.stall_penalty must be a number >= 0 (the game's reward units; 15 is a death's) or null (a stall "
         "is truncated), got -1"),
        ({"stall_steps": 150, "stall_penalty": "big"}, "got 'big'"),
        ({"stall_steps": 150, "stall_penalty": float("nan")}, "got nan"),
        ({"stall_penalty": 15}, "env.options.stall_penalty=15 needs env.options.stall_steps (the agent steps without "
                                "progress that make a stall), e.g. env.options.stall_steps=150"),
    ],
)  # fmt: skip
def test_a_bad_stall_penalty_is_one_line(options, expected):
    cfg = EnvConfig(family="mario", id="SuperMarioBros-1-1-v0", frame_skip=4, noop_max=0, options=options)
    with pytest.raises(ConfigError) as err:
        check_env_config(cfg)
    assert expected in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize("flag", ["big", True, float("inf"), None])
def test_a_bad_flag_reward_is_one_line(flag):
    cfg = EnvConfig(family="mario", id="SuperMarioBros-1-1-v0", frame_skip=4, options={"flag_reward": flag})
    with pytest.raises(ConfigError) as err:
        check_env_config(cfg)
    assert "env.options.flag_reward must be a number" in str(err.value) and "\n" not in str(err.value)


def held_jump(repress: bool, steps: int = 150) -> tuple[int, int]:
    """(take-offs, final x) of right+A held for ``steps`` agent steps from 1-1's start, through the family."""
    cfg = EnvConfig(family="mario", id="SuperMarioBros-1-1-v0", frame_skip=4, noop_max=0,
                    options={"actions": "simple", "repress_jump": repress})  # fmt: skip
    env = make_env(cfg, seed=0)
    _, info = env.reset(seed=0)
    ground, ys = info["y_pos"], [info["y_pos"]]
    for _ in range(steps):
        _, _, terminated, truncated, info = env.step(2)  # ['right', 'A']
        ys.append(info["y_pos"])
        if terminated or truncated:
            break
    env.close()
    return sum(1 for a, b in pairwise(ys) if a == ground < b), info["x_pos"]


def test_a_held_jump_action_jumps_once_and_with_repress_jump_again_on_each_landing():
    """The NES jumps on A's press: right+A held jumps once, then Mario stands against the first pipe (x ~296)
    for good. With env.options.repress_jump each landing presses A anew, and Mario hops on past the pipes."""
    takeoffs, x = held_jump(repress=False)
    assert takeoffs == 1 and x < 320
    takeoffs, x = held_jump(repress=True)
    assert takeoffs >= 5 and x > 900


def test_repress_jump_leaves_a_jumps_height_as_the_game_makes_it():
    """A frame of A on the ground is a press, not a held A: a jump held from standing rises as high either way."""
    peaks = []
    for repress in (False, True):
        env = MarioEnv("SuperMarioBros-1-1-v0", repress_jump=repress)
        env.reset()
        peaks.append(max(env.step(2)[4]["y_pos"] for _ in range(40)))
    assert peaks[0] == peaks[1] > 130


def test_a_bad_repress_jump_is_one_line():
    cfg = EnvConfig(family="mario", id="SuperMarioBros-1-1-v0", options={"repress_jump": "yes"})
    with pytest.raises(ConfigError, match=r"^env\.options\.repress_jump must be true or false, got 'yes'$"):
        check_env_config(cfg)

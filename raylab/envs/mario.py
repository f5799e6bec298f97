"""Super Mario Bros (gym-super-mario-bros 7.4.0 on nes-py 8.2.1) as a real ``gymnasium.Env``.

nes-py speaks the old gym API (4-tuple step, no seeding) and returns a view of its frame buffer that the
next step overwrites; ``MarioEnv`` builds the emulator directly (the old ``gym.make`` registrations break
under gymnasium), copies every frame, and returns 5-tuples with info x_pos, flag_get, life, stage, world.

numpy 2 (upstream nes-py#99). nes-py 8.2.1 and gym-super-mario-bros 7.4.0 do arithmetic on uint8 RAM
scalars. numpy 1 computed ``uint8_scalar * 256`` or ``255 + (255 - uint8_scalar)`` in int64 (value-based
casting never applied between scalars); numpy 2's NEP 50 keeps uint8, so the ROM header sizes and
``_x_position`` raise OverflowError and ``_y_position`` above the screen silently wraps (251 instead of 507).
raylab keeps numpy 2 and restores numpy 1's results at exactly those spots: the ROM header sizes and the
position properties (x, y, left x, level/world/stage/area) are computed in Python ints.
tests/envs/test_mario.py replays 20,000 actions and checks every reward, done flag, info field and a screen
checksum every 100 steps against a reference recorded with numpy 1.26 and the unpatched packages
(tests/envs/data/), and checks the above-the-screen y position directly.
"""

from __future__ import annotations

import contextlib
import io
import re
from functools import cache
from typing import Any

import gymnasium as gym
import numpy as np

from raylab.errors import ConfigError

INSTALL_HINT = (
    "install the mario extra: pip install 'raylab-actor-learner[mario]' (in a checkout: pip install -e '.[mario]')"
)
ACTION_SETS = ("right_only", "simple", "complex")
ID_PATTERN = re.compile(r"^SuperMarioBros(?P<lost>2)?(?:-(?P<world>\d+)-(?P<stage>\d+))?-v(?P<version>\d)$")
ROM_MODES = ("vanilla", "downsample", "pixel", "rectangle")
VALID_IDS = (
    "SuperMarioBros-v0..v3 (the whole game), SuperMarioBros-<world 1-8>-<stage 1-4>-v0..v3 (one stage), "
    "SuperMarioBros2-v0..v1 and SuperMarioBros2-<world 1-12>-<stage 1-4>-v0..v1 (the Lost Levels)"
)
EPISODE_EXTRAS = ("x_pos", "flag_get")
A_BUTTON = 0x01
"""nes-py's joypad bit for A (the jump button)."""
FLOAT_STATE = 0x001D
"""RAM address of Mario's float state: 0 standing on something, 1 in the air by a jump, 2 by walking off a
ledge, 3 on the flag pole."""


def _bgrx_buffer(screen: np.ndarray) -> np.ndarray | None:
    """The emulator's frame buffer as (240, 256, 4) bytes B, G, R, unused, where nes-py's RGB ``screen`` is that
    buffer's channels 2, 1, 0 (its little-endian layout: ``buffer[:, :, ::-1][:, :, 1:]``); None otherwise."""
    base = screen.base
    if not (isinstance(base, np.ndarray) and base.dtype == np.uint8 and base.flags["C_CONTIGUOUS"]):
        return None
    if base.size != 240 * 256 * 4 or screen.shape != (240, 256, 3) or screen.strides != (1024, 4, -1):
        return None
    start = screen.__array_interface__["data"][0] - base.__array_interface__["data"][0]
    return base.reshape(240, 256, 4) if start == 2 else None


def parse_id(env_id: str) -> tuple[str, bool, tuple[int, int] | None]:
    """SuperMarioBros-1-1-v0 -> (rom_mode, lost_levels, (world, stage)); ConfigError listing valid ids."""
    match = ID_PATTERN.match(env_id)
    if match:
        lost = match["lost"] is not None
        version = int(match["version"])
        worlds = 12 if lost else 8
        target = (int(match["world"]), int(match["stage"])) if match["world"] else None
        if version < (2 if lost else 4) and (target is None or (1 <= target[0] <= worlds and 1 <= target[1] <= 4)):
            return ROM_MODES[version], lost, target
    raise ConfigError(f"unknown Mario env id '{env_id}': valid ids are {VALID_IDS}; e.g. env.id=SuperMarioBros-1-1-v0")


@cache
def _nes_modules() -> tuple[Any, Any, Any]:
    """Import nes-py and gym-super-mario-bros once, quietly, with the numpy-2 fix applied."""
    try:
        with contextlib.redirect_stderr(io.StringIO()):  # old gym prints an "unmaintained" banner on import
            import gym_super_mario_bros.actions as actions
            import nes_py._rom as rom
            from gym_super_mario_bros.smb_env import SuperMarioBrosEnv
            from nes_py.wrappers import JoypadSpace
    except ImportError as err:
        raise ConfigError(
            f"env=mario needs nes-py and gym-super-mario-bros ({err.name} is missing): {INSTALL_HINT}"
        ) from err
    # the ROM header sizes as Python ints (numpy 2 rejects 16 * uint8 * 1024 at the first ROM read)
    rom.ROM.prg_rom_size = property(lambda self: 16 * int(self.header[4]))
    rom.ROM.chr_rom_size = property(lambda self: 8 * int(self.header[5]))
    rom.ROM.prg_ram_size = property(lambda self: 8 * (int(self.header[8]) or 1))

    class FixedSuperMarioBrosEnv(SuperMarioBrosEnv):
        """The position arithmetic in Python ints, as numpy 1 did it in int64."""

        @property
        def _x_position(self) -> int:
            return int(self.ram[0x6D]) * 0x100 + int(self.ram[0x86])

        @property
        def _left_x_position(self) -> np.uint8:
            return np.uint8((int(self.ram[0x86]) - int(self.ram[0x071C])) % 256)

        @property
        def _y_position(self) -> int:
            pixel = int(self.ram[0x03B8])
            return 255 + (255 - pixel) if int(self.ram[0x00B5]) < 1 else 255 - pixel

        @property
        def _level(self) -> int:
            return int(self.ram[0x075F]) * 4 + int(self.ram[0x075C])

        @property
        def _world(self) -> int:
            return int(self.ram[0x075F]) + 1

        @property
        def _stage(self) -> int:
            return int(self.ram[0x075C]) + 1

        @property
        def _area(self) -> int:
            return int(self.ram[0x0760]) + 1

    sets = {"right_only": actions.RIGHT_ONLY, "simple": actions.SIMPLE_MOVEMENT, "complex": actions.COMPLEX_MOVEMENT}
    codes = {
        name: [sum(JoypadSpace._button_map[b] for b in buttons) for buttons in buttons_list]
        for name, buttons_list in sets.items()
    }
    return FixedSuperMarioBrosEnv, codes, sets


class MarioEnv(gym.Env[np.ndarray, np.int64]):
    """One NES emulator; one agent step is one frame (frame skip comes from raylab's wrappers)."""

    metadata = {"render_modes": ["rgb_array"], "render_fps": 60}  # noqa: RUF012 - gymnasium's convention

    def __init__(
        self,
        env_id: str = "SuperMarioBros-1-1-v0",
        actions: str = "simple",
        render_mode: str | None = None,
        stall_frames: int | None = None,
        flag_reward: float = 0.0,
        stall_penalty: float | None = None,
        repress_jump: bool = False,
    ):
        """``stall_frames``: end the episode, truncated, after this many frames without a new rightmost x-position
        (env.options.stall_steps x env.frame_skip; None: only death, the flag or the game clock end it).
        ``stall_penalty``: end a stall as a failure instead: terminated, with this taken from the frame's reward
        (env.options.stall_penalty, the game's units; 15 is a death's). None: truncated, and the learner bootstraps
        through it, so standing still costs only the clock's 1 a tick.
        ``flag_reward``: added to the game's reward on the frame that reaches the flag (env.options.flag_reward;
        the game's own reward pays only for x-progress, so a policy at the foot of the flag pole loses next to
        nothing by standing there until the clock runs out).
        ``repress_jump``: a jump action (one holding A) on a frame where A has been held on the ground for 2
        frames presses the action without A, so the next frame's A is a new press (env.options.repress_jump).
        The NES jumps when A goes down, not while it is held, and nothing on screen shows whether it is held:
        without this, a policy that repeats a jump action against a pipe or a stair stands there with A held,
        sees the same frames, and repeats it again (a greedy policy, forever). A frame of A on the ground is a
        press (the jump shows in the float state a frame later), so a jump and its height are the game's own."""
        if actions not in ACTION_SETS:
            raise ConfigError(f"unknown Mario action set '{actions}': choose one of {', '.join(ACTION_SETS)}")
        rom_mode, lost_levels, target = parse_id(env_id)
        env_cls, codes, sets = _nes_modules()
        self._nes = env_cls(rom_mode=rom_mode, lost_levels=lost_levels, target=target)
        self._codes = codes[actions]
        self.buttons = sets[actions]
        self.render_mode = render_mode
        self.observation_space = gym.spaces.Box(0, 255, (240, 256, 3), np.uint8)
        self.action_space = gym.spaces.Discrete(len(self._codes))
        self._screen = np.zeros((240, 256, 3), np.uint8)
        self._bgrx = _bgrx_buffer(self._nes.screen)
        import cv2  # as the other image wrappers do: importing raylab.envs does not load OpenCV

        self._cv2 = cv2
        self._stall_frames = stall_frames
        self._flag_reward = float(flag_reward)
        self._stall_penalty = None if stall_penalty is None else float(stall_penalty)
        self._on_flag = False
        self._repress = bool(repress_jump)
        self._a_on_ground = 0
        """Frames in a row that ended with A held and Mario on the ground (repress_jump)."""
        self._best_x = 0
        self._since_best = 0
        self._place = (0, 0, 0)  # (world, stage, life): the rightmost x counts from each new stage or life

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)  # the emulator is deterministic; NoopReset draws start diversity from this seed
        self._nes.reset()
        self._screen = self._frame()
        self._a_on_ground = 0
        info = self._info(self._nes._get_info())
        self._best_x, self._since_best = info["x_pos"], 0
        self._place = (info["world"], info["stage"], info["life"])
        self._on_flag = info["flag_get"]
        return self._screen, info

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        code = self._codes[int(action)]
        if self._repress and code & A_BUTTON and self._a_on_ground >= 2:
            code &= ~A_BUTTON  # released for this frame: the next one presses A anew
        _, reward, done, raw_info = self._nes.step(code)
        if self._repress:
            on_ground = code & A_BUTTON and self._nes.ram[FLOAT_STATE] == 0
            self._a_on_ground = self._a_on_ground + 1 if on_ground else 0
        self._screen = self._frame()  # a copy: the emulator overwrites its frame buffer on the next step
        info = self._info(raw_info)
        if info["flag_get"] and not self._on_flag:  # once a flag: a whole-game id plays on to the next stage
            reward += self._flag_reward
        self._on_flag = info["flag_get"]
        truncated = False
        if self._stall_frames is not None:  # stuck at a pipe or a wall: the clock would run ~2,000 agent steps
            place = (info["world"], info["stage"], info["life"])
            if place != self._place:  # a whole-game id: the next stage, or a life restarted at a checkpoint
                self._place, self._best_x, self._since_best = place, info["x_pos"], 0
            elif info["x_pos"] > self._best_x:
                self._best_x, self._since_best = info["x_pos"], 0
            else:
                self._since_best += 1
            stalled = not done and self._since_best >= self._stall_frames
            if stalled and self._stall_penalty is not None:  # a failure, as a death is
                done, reward = True, reward - self._stall_penalty
            else:
                truncated = stalled
        return self._screen, float(reward), bool(done), truncated, info

    def _frame(self) -> np.ndarray:
        """A copy of the emulator's screen as RGB: one channel swap of its contiguous BGRx buffer where nes-py lays
        it out so, else an element-by-element copy of nes-py's strided RGB view of it (benchmarks/mario_frame_copy.py
        times both)."""
        if self._bgrx is None:
            return np.array(self._nes.screen)
        return self._cv2.cvtColor(self._bgrx, self._cv2.COLOR_BGRA2RGB)

    def render(self) -> np.ndarray | None:
        return self._screen.copy() if self.render_mode == "rgb_array" else None

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._nes.close()

    @staticmethod
    def _info(info: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {k: int(v) for k, v in info.items() if k not in ("flag_get", "status")}
        out["flag_get"] = bool(info["flag_get"])
        out["status"] = str(info["status"])
        return out

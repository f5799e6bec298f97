"""One greedy episode on a rendering env, as a video: ``raylab.evaluate ... video=true`` after a run, and
``eval.video=true`` at each of a run's evaluations (encoded in the evaluation actor, so that a file's bytes cross
the wire, not its frames).

Frames come from ``render_mode="rgb_array"`` (no display); an env that cannot render but whose observations are
images gives those.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from raylab.errors import ConfigError, RaylabError
from raylab.types import EpisodeVideo, Policy, Stateful, Weights

os.environ.setdefault("SDL_VIDEODRIVER", "dummy")  # pygame (classic-control frames) without a display
os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")

VIDEO_HINT = "pip install 'raylab-actor-learner[video]'"
DEFAULT_FPS = 30
MAX_VIDEO_STEPS = 5000
"""Agent steps recorded at most: an agent that never ends an episode still gives a finite file."""


def mp4_available() -> bool:
    return importlib.util.find_spec("imageio") is not None and importlib.util.find_spec("imageio_ffmpeg") is not None


def film_episode(
    cfg: Any, spaces: Any, policy: Policy, max_steps: int, path: Path, fmt: str, fps: int | None = None
) -> tuple[int, dict[str, float], int]:
    """One episode of ``policy`` (one env's batch, its weights set) on a rendering env, written to ``path`` frame
    by frame as it is played (an mp4 holds no frame in memory; a gif holds them until the end): (frames, its
    episode statistics, the frame rate)."""
    from raylab.envs.registry import EVAL_WORKER_INDEX, make_render_env
    from raylab.envs.wrappers import EPISODE_KEY

    env = make_render_env(cfg.eval_env, cfg.seed + 7, worker_index=EVAL_WORKER_INDEX)
    discrete = spaces.num_actions is not None  # else a Box or MultiDiscrete action: the array itself
    try:
        rate = video_fps(env.metadata.get("render_fps"), cfg.env.frame_skip, fps)
        stats: dict[str, float] = {}
        with VideoWriter(path, rate, fmt) as writer:
            obs, _ = env.reset()
            if isinstance(policy, Stateful) and policy.state_size > 0:  # a recurrent policy starts from zeros
                policy.reset_states(np.ones(1, bool))
            writer.add(frame_of(env, obs))
            for _ in range(max_steps):
                action = policy.act(np.asarray(obs)[None])[0]
                obs, _, terminated, truncated, info = env.step(int(action) if discrete else np.asarray(action))
                writer.add(frame_of(env, obs))
                if terminated or truncated:
                    stats = dict(info.get(EPISODE_KEY, {}))
                    break
        return writer.frames, stats, rate
    finally:
        env.close()


def frame_of(env: Any, obs: Any, switch: str = "video=false") -> np.ndarray:
    """The game's RGB frame; envs that cannot render but whose observations are images give those (``switch``:
    the setting that turns the video off, named in the error otherwise)."""
    try:
        frame = env.render()
    except NotImplementedError:  # gymnasium's default render(): the env draws nothing
        frame = None
    if frame is None:
        frame = np.asarray(obs)
        if frame.dtype != np.uint8 or frame.ndim not in (2, 3):
            name = env.spec.id if env.spec else "this env"
            raise RaylabError(f"{name} cannot render frames and its observations are not images: set {switch}")
        if frame.ndim == 3 and frame.shape[0] in (1, 3, 4) and frame.shape[-1] not in (1, 3, 4):
            frame = np.moveaxis(frame, 0, -1)  # channels first -> last
        if frame.ndim == 3 and frame.shape[-1] not in (1, 3):
            frame = frame[..., -1]  # a frame stack: its newest frame
    frame = np.asarray(frame, dtype=np.uint8)
    if frame.ndim == 2:
        frame = np.repeat(frame[..., None], 3, axis=-1)
    elif frame.shape[-1] == 1:
        frame = np.repeat(frame, 3, axis=-1)
    return frame


class VideoWriter:
    """Frames to an mp4 (H.264 through imageio-ffmpeg, each frame encoded as it comes) or a gif (Pillow, at the
    end); a context manager that finishes the file."""

    def __init__(self, path: Path, fps: int, fmt: str):
        if fmt == "mp4" and not mp4_available():
            raise ConfigError(f"video_format=mp4 needs imageio and imageio-ffmpeg: {VIDEO_HINT} (or video_format=gif)")
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path, self.fps, self.fmt = path, fps, fmt
        self.frames = 0
        self._gif: list[np.ndarray] = []
        self._mp4: Any = None
        self._pad: tuple[tuple[int, int], ...] | None = None

    def __enter__(self) -> VideoWriter:
        return self

    def add(self, frame: np.ndarray) -> None:
        self.frames += 1
        if self.fmt == "gif":
            self._gif.append(frame)
            return
        if self._mp4 is None:
            import imageio.v2 as imageio

            # H.264 in yuv420p wants even sizes: pad by one black row/column where needed (no resampling)
            h, w = frame.shape[:2]
            self._pad = ((0, h % 2), (0, w % 2), (0, 0)) if (h % 2 or w % 2) else None
            self._mp4 = imageio.get_writer(
                self.path, fps=self.fps, codec="libx264", pixelformat="yuv420p", macro_block_size=1
            )
        self._mp4.append_data(np.pad(frame, self._pad) if self._pad else frame)

    def __exit__(self, *exc: object) -> None:
        if self._mp4 is not None:
            self._mp4.close()
        elif self._gif and exc[0] is None:
            from PIL import Image

            images = [Image.fromarray(f) for f in self._gif]
            duration = max(1, round(1000 / self.fps))
            images[0].save(self.path, save_all=True, append_images=images[1:], duration=duration, loop=0)


def encoder_for(fmt: str | None = None) -> str:
    """The video format to write: ``fmt``, else mp4 where imageio-ffmpeg is installed, else gif where Pillow is;
    one line naming the extra when neither can be written."""
    if fmt == "mp4" or (fmt is None and mp4_available()):
        if not mp4_available():
            raise ConfigError(f"video_format=mp4 needs imageio and imageio-ffmpeg: {VIDEO_HINT} (or video_format=gif)")
        return "mp4"
    if importlib.util.find_spec("PIL") is None:
        raise ConfigError(f"videos need imageio-ffmpeg (mp4) or Pillow (gif): {VIDEO_HINT}")
    return "gif"


def video_fps(render_fps: float | None, frame_skip: int, fps: int | None = None) -> int:
    """``fps`` when given, else the env's own render_fps over the frame skip (one frame per agent step), else 30."""
    if fps is not None:
        return fps
    if not render_fps:
        return DEFAULT_FPS
    return max(1, round(render_fps / max(frame_skip, 1)))


def check_frames(cfg: Any) -> None:
    """eval.video: a video encoder is installed and one reset of a rendering env gives a frame, or one line
    naming the fix, before a run writes anything."""
    from raylab.envs.registry import EVAL_WORKER_INDEX, make_render_env

    encoder_for()
    env = None
    try:
        env = make_render_env(cfg.eval_env, cfg.seed + 7, worker_index=EVAL_WORKER_INDEX)
        obs, _ = env.reset()
        frame_of(env, obs, "eval.video=false")
    except RaylabError as err:
        if "cannot render frames" in str(err):
            raise RaylabError(
                f"env {cfg.env.id} cannot render frames and its observations are not images: set eval.video=false"
            ) from None
        raise RaylabError(f"eval.video cannot film env {cfg.env.id}: {first_line(err)}") from None
    except Exception as err:  # a renderer's own dependency (pygame, a GL context) missing or failing
        raise RaylabError(
            f"eval.video cannot film env {cfg.env.id} ({type(err).__name__}: {first_line(err)}): install what it "
            f"names ({VIDEO_HINT} brings pygame for classic control), or set eval.video=false"
        ) from None
    finally:
        if env is not None:
            env.close()


def first_line(err: BaseException) -> str:
    return (str(err).strip().splitlines() or [type(err).__name__])[0][:200]


class EpisodeRecorder:
    """eval.video: films one greedy episode of the weights it is handed and encodes it (mp4 where imageio-ffmpeg
    is installed, else gif), in whichever process evaluates. A failure to film costs the video, never the run:
    it is said once per evaluation on stderr and the evaluation's scores stand."""

    def __init__(self, cfg: Any, spaces: Any, make_policy: Callable[[], Policy], max_steps: int = MAX_VIDEO_STEPS):
        """``make_policy``: the evaluation policy for one env (raylab.builders.build_eval_policy), built here once."""
        self.cfg, self.spaces, self.max_steps = cfg, spaces, max_steps
        self.policy = make_policy()
        self.fmt = encoder_for()

    def __call__(self, weights: Weights) -> EpisodeVideo | None:
        try:
            with tempfile.TemporaryDirectory(prefix="raylab-video-") as tmp:
                path = Path(tmp) / f"episode.{self.fmt}"
                self.policy.set_weights(weights, exact=True)  # the version handed, even an older one (best.pt)
                frames, stats, fps = film_episode(self.cfg, self.spaces, self.policy, self.max_steps, path, self.fmt)
                data = path.read_bytes()
        except Exception as err:
            print(f"raylab: warning: eval.video could not film this evaluation ({first_line(err)})", file=sys.stderr)
            return None
        return EpisodeVideo(data, self.fmt, frames, fps, {k: float(v) for k, v in stats.items()})

"""One greedy episode on a rendering env, as a video: ``raylab.evaluate ... video=true`` after a run, and
``eval.video=true`` at each of a run's evaluations (encoded in the evaluation actor, so that a file's bytes cross
the wire, not its frames).

Frames come from ``render_mode="rgb_array"`` (no display); an env that cannot render but whose observations are
images gives those.
"""

from __future__ import annotations

import importlib.util
import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from raylab.errors import ConfigError, RaylabError
from raylab.types import EpisodeVideo, Weights

os.environ.setdefault("SDL_VIDEODRIVER", "dummy")  # pygame (classic-control frames) without a display
os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")

VIDEO_HINT = "pip install 'raylab-actor-learner[video]'"
DEFAULT_FPS = 30
MAX_VIDEO_STEPS = 5000
"""Agent steps recorded at most: an agent that never ends an episode still gives a finite file."""


def mp4_available() -> bool:
    return importlib.util.find_spec("imageio") is not None and importlib.util.find_spec("imageio_ffmpeg") is not None


def record_episode(
    cfg: Any, spaces: Any, weights: Any, max_steps: int
) -> tuple[list[np.ndarray], dict[str, float], float | None]:
    """One greedy episode on a rendering env: (RGB frames, its episode statistics, the env's render_fps)."""
    from raylab.builders import build_eval_policy
    from raylab.envs.registry import EVAL_WORKER_INDEX, make_render_env
    from raylab.envs.wrappers import EPISODE_KEY

    policy = build_eval_policy(cfg, spaces, num_envs=1)
    policy.set_weights(weights)
    env = make_render_env(cfg.env, cfg.seed + 7, worker_index=EVAL_WORKER_INDEX)
    try:
        obs, _ = env.reset()
        frames = [frame_of(env, obs)]
        stats: dict[str, float] = {}
        for _ in range(max_steps):
            action = int(policy.act(np.asarray(obs)[None])[0])
            obs, _, terminated, truncated, info = env.step(action)
            frames.append(frame_of(env, obs))
            if terminated or truncated:
                stats = dict(info.get(EPISODE_KEY, {}))
                break
        return frames, stats, env.metadata.get("render_fps")
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


def write_video(frames: list[np.ndarray], path: Path, fps: int, fmt: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if fmt == "gif":
        from PIL import Image

        images = [Image.fromarray(f) for f in frames]
        images[0].save(path, save_all=True, append_images=images[1:], duration=max(1, round(1000 / fps)), loop=0)
        return path
    if not mp4_available():
        raise ConfigError(f"video_format=mp4 needs imageio and imageio-ffmpeg: {VIDEO_HINT} (or video_format=gif)")
    import imageio.v2 as imageio

    # H.264 in yuv420p wants even sizes: pad by one black row/column where needed (no resampling)
    h, w = frames[0].shape[:2]
    pad = ((0, h % 2), (0, w % 2), (0, 0))
    writer: Any = imageio.get_writer(path, fps=fps, codec="libx264", pixelformat="yuv420p", macro_block_size=1)
    with writer:
        for frame in frames:
            writer.append_data(np.pad(frame, pad) if (h % 2 or w % 2) else frame)
    return path


def video_fps(render_fps: float | None, frame_skip: int, fps: int | None = None) -> int:
    """``fps`` when given, else the env's own render_fps over the frame skip (one frame per agent step), else 30."""
    if fps is not None:
        return fps
    if not render_fps:
        return DEFAULT_FPS
    return max(1, round(render_fps / max(frame_skip, 1)))


def check_frames(cfg: Any) -> None:
    """eval.video: one reset of a rendering env gives a frame, or one line naming the switch, before a run
    writes anything."""
    from raylab.envs.registry import EVAL_WORKER_INDEX, make_render_env

    env = make_render_env(cfg.env, cfg.seed + 7, worker_index=EVAL_WORKER_INDEX)
    try:
        obs, _ = env.reset()
        frame_of(env, obs, "eval.video=false")
    except RaylabError:
        raise RaylabError(
            f"env {cfg.env.id} cannot render frames and its observations are not images: set eval.video=false"
        ) from None
    finally:
        env.close()


class EpisodeRecorder:
    """eval.video: records one greedy episode of the weights it is handed and encodes it (mp4 where imageio-ffmpeg
    is installed, else gif), in whichever process evaluates."""

    def __init__(self, cfg: Any, spaces: Any, max_steps: int = MAX_VIDEO_STEPS):
        self.cfg, self.spaces, self.max_steps = cfg, spaces, max_steps
        self.fmt = "mp4" if mp4_available() else "gif"

    def __call__(self, weights: Weights) -> EpisodeVideo:
        frames, stats, render_fps = record_episode(self.cfg, self.spaces, weights, self.max_steps)
        fps = video_fps(render_fps, self.cfg.env.frame_skip)
        with tempfile.TemporaryDirectory(prefix="raylab-video-") as tmp:
            path = write_video(frames, Path(tmp) / f"episode.{self.fmt}", fps, self.fmt)
            data = path.read_bytes()
        return EpisodeVideo(data, self.fmt, len(frames), fps, {k: float(v) for k, v in stats.items()})

"""Evaluate a finished (or running) run: ``python -m raylab.evaluate run_dir=outputs/... episodes=10 video=true``.

Loads the run's config.yaml and a checkpoint (final.pt by default: the run's newest weights, or with
learner.average_rate their moving average; best.pt: the best policy its evaluations found, the one that met its
target; or a periodic checkpoints/step_*.pt, whose learner state holds the policy too; ``weights=newest`` or
``weights=average`` picks from a learner state), runs the greedy policy for ``episodes``
fresh episodes on the run's own preprocessing, prints mean ± std of the raw game return, and with
``video=true`` records one more episode as an mp4 (or gif) of the game's RGB frames. No display is needed:
frames come from ``render_mode="rgb_array"`` (classic-control envs draw them with pygame, off screen).
No Ray is started. Results also go to <run_dir>/eval/<checkpoint>.json.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from raylab.driver.outputs import free_path
from raylab.errors import EXIT_USAGE, ConfigError, RaylabError
from raylab.metrics.numbers import fmt_return
from raylab.rollout.video import VIDEO_HINT, film_episode


@dataclass(frozen=True)
class EvaluateArgs:
    run_dir: str
    checkpoint: str = "final.pt"
    """A file under <run_dir>/checkpoints (final, best, step_…), a path, or "latest" (the newest periodic or
    final checkpoint)."""
    episodes: int = 10
    starts: str | None = None
    """The episodes' no-op starts: ``random`` or ``every`` (each of env.noop_max + 1 once per that many
    episodes: the policy's exact rate over them, on a deterministic env); default: the run's eval.starts."""
    video: bool = False
    video_format: str = "mp4"
    """mp4 (H.264 through imageio-ffmpeg) or gif (Pillow)."""
    video_path: str | None = None
    """Default: <run_dir>/videos/<checkpoint name>.<format>."""
    max_video_steps: int = 5000
    """Agent steps recorded at most (an agent that never ends an episode still gives a finite file)."""
    fps: int | None = None
    """Video frame rate; default: the env's render_fps over the frame skip, else 30."""
    seed: int | None = None
    """Seed of the evaluation envs; default: the run's seed (the same envs as its final evaluation)."""
    env_options: dict[str, Any] = dataclasses.field(default_factory=dict)
    """Env options for the evaluation envs only, over the run's (``env_options.<name>=<value>``, e.g. Mario's
    ``env_options.repress_jump=true``), as the run's eval.env_options: options that keep the observation and
    action spaces the policy was trained in. The result's JSON records them."""
    against_random: str | None = None
    """A run of several policies: these policies (comma-separated names) act uniformly at random instead of
    with their weights, e.g. ``against_random=prey`` scores the predators against a random prey."""
    weights: str = "policy"
    """Which weights of the checkpoint: ``policy``, the run's (final.pt's and best.pt's policy; a periodic
    checkpoint's newest, or its average with learner.average_rate); ``newest``, its learner's newest;
    ``average``, its learner's moving average
    (learner.average_rate). ``newest`` and ``average`` read the learner state that final.pt and the periodic
    checkpoints hold: scoring both on the same seeds compares them."""


FIELDS = {f.name: f for f in dataclasses.fields(EvaluateArgs)}
WEIGHTS = ("policy", "newest", "average")
"""The values of ``weights=``."""
STARTS = ("random", "every")
"""The values of ``starts=``."""
OPTIONS = [name if name != "env_options" else "env_options.<name>" for name in FIELDS]
"""The options as a refusal lists them."""


def parse_args(argv: list[str]) -> EvaluateArgs:
    """``key=value`` pairs (a leading + is accepted, as in raylab.train)."""
    values: dict[str, Any] = {}
    env_options: dict[str, Any] = {}
    for arg in argv:
        key, eq, value = arg.lstrip("+").partition("=")
        if arg.startswith("-"):
            raise ConfigError(f"options are key=value, without dashes: write {arg.lstrip('-')}, e.g. episodes=3")
        if not eq:
            raise ConfigError(f"expected key=value, got '{arg}': e.g. python -m raylab.evaluate run_dir=outputs/<run>")
        if key.startswith("env_options."):
            name = key.removeprefix("env_options.")
            if not name.isidentifier():
                raise ConfigError(
                    f"'{key}' names no env option: write env_options.<name>=<value>, e.g. env_options.repress_jump=true"
                )
            env_options[name] = _option_value(key, value)
            continue
        if key == "env_options":
            raise ConfigError("env_options takes one option per argument: write env_options.<name>=<value>, e.g. "
                              "env_options.repress_jump=true")  # fmt: skip
        if key not in FIELDS:
            raise ConfigError(f"unknown option '{key}': valid options are {', '.join(OPTIONS)}")
        values[key] = _parse_value(key, value)
    if "run_dir" not in values:
        raise ConfigError("run_dir is required: python -m raylab.evaluate run_dir=outputs/<date>/<time> [episodes=10]")
    args = EvaluateArgs(**values, env_options=env_options)
    if args.episodes < 1:
        raise ConfigError(f"episodes must be >= 1, got {args.episodes}")
    for name in ("fps", "max_video_steps"):
        if getattr(args, name) is not None and getattr(args, name) < 1:
            raise ConfigError(f"{name} must be >= 1, got {getattr(args, name)}")
    if args.video_format not in ("mp4", "gif"):
        raise ConfigError(f"unknown video_format '{args.video_format}': choose mp4 or gif")
    if args.weights not in WEIGHTS:
        raise ConfigError(f"unknown weights '{args.weights}': choose {', '.join(WEIGHTS)}")
    if args.starts not in (None, *STARTS):
        raise ConfigError(f"unknown starts '{args.starts}': choose {' or '.join(STARTS)}")
    return args


def _option_value(key: str, value: str) -> Any:
    """An env option's value as raylab.train reads one (Hydra's override grammar: ``1e-5`` a float, ``yes`` a
    string, ``[84,84]`` a list), so that an option means the same in both commands."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException

    try:
        return OverridesParser.create().parse_override(f"{key}={value}").value()
    except HydraException:
        raise ConfigError(f"{key}={value} is not a value raylab.train would read: e.g. true, 150, null") from None


def _parse_value(key: str, value: str) -> Any:
    kind = FIELDS[key].type
    if value.lower() in ("null", "none") and "None" in str(kind):
        return None
    if "bool" in str(kind):
        if value.lower() not in ("true", "false", "1", "0", "yes", "no"):
            raise ConfigError(f"{key} must be true or false, got '{value}'")
        return value.lower() in ("true", "1", "yes")
    if "int" in str(kind):
        try:
            return int(value)
        except ValueError:
            raise ConfigError(f"{key} must be an integer, got '{value}'") from None
    return value


def find_checkpoint(run_dir: Path, name: str) -> Path:
    ckpt_dir = run_dir / "checkpoints"
    if name == "latest":
        candidates = sorted(ckpt_dir.glob("step_*.pt")) + sorted(ckpt_dir.glob("final.pt"))
        if not candidates:
            raise RaylabError(f"no checkpoints in {ckpt_dir}: the run wrote none yet (checkpoint.every_seconds)")
        return max(candidates, key=lambda p: p.stat().st_mtime)
    for path in (Path(name), ckpt_dir / name, ckpt_dir / f"{name}.pt"):
        if path.is_file():
            return path
    found = ", ".join(sorted(p.name for p in ckpt_dir.glob("*.pt"))) or "none"
    if name in ("best", "best.pt") and (ckpt_dir / "final.pt").is_file():
        raise RaylabError(
            f"{run_dir} kept no best.pt: its run evaluated no policy while training (eval.every_seconds, "
            f"eval.every_env_steps), or it predates best.pt: evaluate its policy with checkpoint=final"
        )
    raise RaylabError(f"checkpoint '{name}' not found in {ckpt_dir} (found: {found}): pass checkpoint=<one of them>")


def policy_weights(state: dict[str, Any], path: Path, names: list[str] | None = None, which: str = "policy") -> Any:
    """The policy's inference Weights from any raylab checkpoint (final, periodic; every topology); a run of
    several policies: a list of Weights, one per policy in the order of ``names`` (the run's policies).
    ``which``: the run's policy, or its learner's ``newest`` or ``average`` weights (EvaluateArgs.weights)."""

    if which != "policy":
        return _learner_weights(state, path, names, which)
    parts: dict[str, Any] | None = None
    if "policy" in state and "policies" in state["policy"]:
        parts = {name: _weights(part) for name, part in state["policy"]["policies"].items()}
    elif isinstance(state.get("learner"), dict) and "policies" in state["learner"]:  # a periodic checkpoint
        parts = {name: policy_weights({"learner": part}, path) for name, part in state["learner"]["policies"].items()}
    if parts is not None:
        return _in_order(parts, names, path)
    if "policy" in state:
        return _weights(state["policy"])
    learner = state.get("learner")
    if isinstance(learner, dict) and "policy_average" in learner:  # learner.average_rate: the run's policy
        return _learner_weights(state, path, None, "average")
    return _newest(state, path)


def _newest(state: dict[str, Any], path: Path) -> Any:
    """A periodic checkpoint's learner state: its newest weights (every topology)."""
    from raylab.types import Weights

    learner = state.get("learner")
    if isinstance(learner, dict) and "modules" in learner:  # DQN (q_net) or actor-critic (model) learners
        modules = learner["modules"]
        params = modules.get("q_net", modules.get("model"))
        if params is not None:
            return Weights(int(learner["version"]), {k: v.numpy() for k, v in params.items()})
    if isinstance(learner, dict) and "shards" in learner:  # A3C: the parameter server's shards, in order
        shards = sorted(learner["shards"], key=lambda s: int(s["shard"]))
        flat = np.concatenate([s["params"].numpy() for s in shards])
        layout = learner["layout"]
        params, offset = {}, 0
        for name, shape in zip(layout["names"], layout["shapes"], strict=True):
            size = int(np.prod(shape))
            params[name] = flat[offset : offset + size].reshape(shape)
            offset += size
        return Weights(min(int(s["version"]) for s in shards), params)
    raise RaylabError(f"checkpoint {path} holds no policy weights: pass a raylab checkpoint (checkpoints/*.pt)")


def _in_order(parts: dict[str, Any], names: list[str] | None, path: Path) -> list[Any]:
    """A run of several policies: their weights in the order of ``names`` (the run's policies)."""
    missing = [n for n in names or [] if n not in parts]
    if missing or not names:
        raise RaylabError(
            f"checkpoint {path} holds policies {', '.join(parts)}, not {', '.join(names or []) or 'one policy'}: "
            f"pass the run_dir whose run wrote it (its config.yaml names the policies)"
        )
    return [parts[name] for name in names]


def _learner_weights(state: dict[str, Any], path: Path, names: list[str] | None, which: str) -> Any:
    """``weights=newest`` or ``average``: read from the checkpoint's learner state."""
    from raylab.types import Weights

    learner = state.get("learner")
    if not isinstance(learner, dict):
        raise RaylabError(
            f"checkpoint {path} holds the run's policy only, no learner state: weights={which} reads "
            "checkpoint=final or a periodic one (checkpoints/step_*.pt)"
        )
    if "policies" in learner:
        parts = {
            name: _learner_weights({"learner": part}, path, None, which) for name, part in learner["policies"].items()
        }
        return _in_order(parts, names, path)
    if which == "newest":
        return _newest({"learner": learner}, path)
    if "policy_average" not in learner:
        raise RaylabError(
            f"checkpoint {path} holds no average of the weights (its run had no learner.average_rate): "
            "use weights=policy or weights=newest"
        )
    return Weights(int(learner["version"]), {k: v.numpy() for k, v in learner["policy_average"].items()})


def _weights(policy: dict[str, Any]) -> Any:
    from raylab.types import Weights

    return Weights(int(policy["version"]), {k: v.numpy() for k, v in policy["params"].items()})


def randomize(evaluator: Any, cfg: Any, spaces: Any, names: list[str]) -> None:
    """Let policies ``names`` of the evaluator's PolicySet act uniformly at random, each in its own action space:
    Discrete, or within its Box's bounds (ConfigError naming the fix for a run of one policy, an unknown name, or
    an unbounded Box)."""
    from raylab.config.policies import policy_spaces
    from raylab.rollout.policies import PolicySet, RandomPolicy

    known = list(cfg.policies)
    if not isinstance(evaluator.policy, PolicySet):
        raise ConfigError("against_random needs a run of several policies (policies=...): leave out against_random")
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ConfigError(f"against_random={','.join(names)}: no policy {unknown[0]}; the run's are {', '.join(known)}")
    for name in names:
        own = policy_spaces(cfg, spaces, name)
        bounds = own.action_bounds
        if own.num_actions is None and (bounds is None or not np.all(np.isfinite(bounds))):
            raise ConfigError(
                f"against_random={name}: policy {name} acts in {own.action_space}, and a uniform action needs a "
                f"Discrete space or a bounded Box: leave {name} out of against_random"
            )
        policy = RandomPolicy(
            own.num_actions, seed=cfg.seed + 17, bounds=None if own.num_actions is not None else bounds
        )
        evaluator.policy.policies[known.index(name)] = policy


def load_run_config(run_dir: Path, args: EvaluateArgs) -> Any:
    import yaml

    from raylab.config import resolve

    path = run_dir / "config.yaml"
    if not path.is_file():
        raise RaylabError(f"{path} not found: run_dir must be a raylab run directory (it has config.yaml)")
    try:
        data = yaml.safe_load(path.read_text())
    except (yaml.YAMLError, UnicodeDecodeError) as err:
        where = getattr(err, "problem_mark", None)
        at = f" at line {where.line + 1}" if where is not None else ""
        raise RaylabError(
            f"{path} does not parse as YAML{at}: restore it (every checkpoint holds the run's config: "
            f"raylab.learner.load_checkpoint(...)['config']), or pass another run_dir"
        ) from None
    if not isinstance(data, dict):
        raise RaylabError(f"{path} holds no config mapping: restore it, or pass another run_dir")
    if not args.env_options:
        cfg = resolve(data, run_dir=str(run_dir))
    else:  # over the run's own eval.env_options; resolve checks them (the policy's spaces kept)
        section = data.setdefault("eval", {})
        section["env_options"] = {**(section.get("env_options") or {}), **args.env_options}
        try:
            cfg = resolve(data, run_dir=str(run_dir))
        except ConfigError as err:
            given = " ".join(f"env_options.{k}={json.dumps(v)}" for k, v in args.env_options.items())
            raise ConfigError(f"{given}: {err} (change or drop them)") from None
    ev = dataclasses.replace(cfg.eval, episodes=args.episodes, video=False)  # video=true films its own episode
    if args.starts is not None:
        ev = dataclasses.replace(ev, starts="every" if args.starts == "every" else "random")
    if ev.starts == "every":
        from raylab.envs.registry import check_every_start

        if not cfg.env.noop_max:
            raise ConfigError(
                "starts=every plays each no-op start in turn, and this run's env.noop_max=0 gives one: pass "
                "starts=random"
            )
        try:
            check_every_start(cfg.eval_env)
        except ConfigError as err:
            raise ConfigError(str(err).replace("eval.starts=", "starts=")) from None
        starts = cfg.env.noop_max + 1
        if args.episodes % starts:
            given = "" if args.starts else " (the run's eval.starts)"
            raise ConfigError(
                f"starts=every{given} plays each of the {starts} no-op starts (env.noop_max={cfg.env.noop_max}) "
                f"once per {starts} episodes: pass episodes={starts} (or a multiple), or starts=random"
            )
    return dataclasses.replace(cfg, eval=ev, seed=cfg.seed if args.seed is None else args.seed)


def evaluate(args: EvaluateArgs) -> dict[str, Any]:
    """Score the checkpoint's policy (and record a video): the Python API behind the CLI."""
    from raylab.builders import build_eval_policy, build_evaluator
    from raylab.envs.registry import env_spaces, family
    from raylab.learner.checkpoint import load_checkpoint

    run_dir = Path(args.run_dir)
    if run_dir.is_file() and run_dir.parent.name == "checkpoints":  # a checkpoint named as the run
        raise RaylabError(
            f"run_dir {run_dir} is a checkpoint file, not a run directory: pass run_dir={run_dir.parent.parent} "
            f"checkpoint={run_dir.stem}"
        )
    if run_dir.is_file():
        raise RaylabError(f"run_dir {run_dir} is a file, not a run directory: pass run_dir=<the run's dir>")
    if not run_dir.is_dir():
        raise RaylabError(f"run_dir {run_dir} does not exist: pass a run directory (outputs/<date>/<time>)")
    cfg = load_run_config(run_dir, args)
    if args.video and args.video_format == "mp4" and importlib.util.find_spec("imageio_ffmpeg") is None:
        raise ConfigError(f"video_format=mp4 needs imageio and imageio-ffmpeg: {VIDEO_HINT} (or video_format=gif)")
    fam = family(cfg.env)
    if args.video and fam.multi_agent:
        fam.make_raw(cfg.env)  # a one-line ConfigError: no video of a multi-agent env yet
    ckpt_path = find_checkpoint(run_dir, args.checkpoint)
    weights = policy_weights(load_checkpoint(ckpt_path), ckpt_path, list(cfg.policies) or None, args.weights)
    spaces = env_spaces(cfg.env)
    evaluator = build_evaluator(cfg, spaces)
    if args.against_random:
        randomize(evaluator, cfg, spaces, args.against_random.split(","))
    try:
        result = evaluator.evaluate(weights, args.episodes)
    finally:
        evaluator.env.close()
    out: dict[str, Any] = {
        "run_dir": str(run_dir),
        "checkpoint": str(ckpt_path),
        "weights": args.weights,
        "policy_version": result.version,
        "episodes": int(result.returns.size),
        "return_mean": result.mean,
        "return_std": result.std,
        "returns": result.returns.tolist(),
        "lengths": result.lengths.tolist(),
        "extras_mean": result.extra_means(),  # Mario: the flag rate (flag_get) and the mean x_pos
        "extras": {key: values.tolist() for key, values in result.extras.items()},
        "starts": result.starts.tolist() if result.starts is not None else None,
        "seed": cfg.seed,
        "env_options": dict(args.env_options),
        "eval_env_options": dict(cfg.eval.env_options),
    }
    if args.against_random:
        out["against_random"] = args.against_random.split(",")
    if result.policies is not None:
        out["policies"] = {
            name: {"episodes": int(r.size), "return_mean": float(r.mean()) if r.size else None}
            for name, r in result.policies.items()
        }
    if args.video:
        path = video_path(run_dir, ckpt_path, args)
        policy = build_eval_policy(cfg, spaces, num_envs=1)
        policy.set_weights(weights)
        frames, stats, fps = film_episode(cfg, spaces, policy, args.max_video_steps, path, args.video_format, args.fps)
        episode = {f"episode_{k}": v for k, v in stats.items()}
        out["video"] = {"path": str(path), "frames": frames, "fps": fps, **episode}
    eval_dir = run_dir / "eval"
    eval_dir.mkdir(exist_ok=True)
    name = ckpt_path.stem if args.weights == "policy" else f"{ckpt_path.stem}_{args.weights}"
    free_path(eval_dir / f"{name}.json").write_text(json.dumps(out, indent=2) + "\n")
    return out


def video_path(run_dir: Path, ckpt_path: Path, args: EvaluateArgs) -> Path:
    """Where the video goes: ``video_path`` (refused when it exists), else the first free name under videos/."""
    if args.video_path:
        path = Path(args.video_path)
        if path.exists():
            raise ConfigError(f"video_path={path} exists: choose a new path (nothing was written over)")
        return path
    return free_path(run_dir / "videos" / f"{ckpt_path.stem}.{args.video_format}")


def main(argv: list[str] | None = None) -> None:
    try:
        out = evaluate(parse_args(sys.argv[1:] if argv is None else argv))
    except RaylabError as err:
        print(f"raylab: error: {err}", file=sys.stderr, flush=True)
        sys.exit(EXIT_USAGE)
    except Exception as err:  # not the user's input: one line naming the log that holds the traceback
        from raylab import failures

        print(f"raylab: error: {failures.one_line(err, failures.write_log(err, 'evaluate'))}", file=sys.stderr)
        sys.exit(EXIT_USAGE)
    options = "".join(f", env_options.{k}={json.dumps(v)}" for k, v in out["env_options"].items())
    options += f", weights={out['weights']}" if out["weights"] != "policy" else ""
    print(
        f"raylab: {out['checkpoint']} (policy version {out['policy_version']}{options}): return "
        f"{fmt_return(out['return_mean'])} ± {fmt_return(out['return_std'])} over {out['episodes']} episodes",
        flush=True,
    )
    for key, values in out["extras"].items():  # each episode's (Mario: flag_get, x_pos)
        shown = ", ".join(f"{v:g}" for v in values)
        print(f"raylab: {key}: mean {out['extras_mean'][key]:.3g} ({shown})", flush=True)
    if out["starts"] is not None:  # starts=every: which start each episode above played
        print(f"raylab: no-op starts: {', '.join(str(k) for k in out['starts'])}", flush=True)
    for name, part in out.get("policies", {}).items():
        mean = "n/a" if part["return_mean"] is None else fmt_return(part["return_mean"])
        print(f"raylab: policy {name}: return {mean} over {part['episodes']} episodes", flush=True)
    if "video" in out:
        video = out["video"]
        ret = f", return {fmt_return(video['episode_return'])}" if "episode_return" in video else ""
        print(f"raylab: video of one episode ({video['frames']} frames{ret}) -> {video['path']}", flush=True)


if __name__ == "__main__":
    main()

"""Train: ``python -m raylab.train +experiment=cartpole_dqn [key=value ...]``.

Hydra composes conf/ (shipped as ``raylab.conf``); ``raylab.config.resolve`` validates it once into a
frozen RunConfig; the topology it names runs; everything lands in the Hydra run dir. User mistakes end in
one line on stderr that names the fix and exit status 2; Ctrl-C ends the run cleanly with status 130, SIGTERM
(``ray job stop``, a scheduler's preemption, ``docker stop``) the same way with status 0.
"""

from __future__ import annotations

import contextlib
import dataclasses
import difflib
import re
import signal
import sys
from importlib import resources
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING

import hydra
from omegaconf import DictConfig, OmegaConf

from raylab import failures
from raylab.config import RunConfig, resolve
from raylab.config.checks import auto_keys
from raylab.config.coerce import to_container
from raylab.config.store import register as register_config_defaults
from raylab.driver.stop import terminate, terminated
from raylab.envs.registry import env_spaces
from raylab.errors import EXIT_USAGE, ConfigError, RaylabError

if TYPE_CHECKING:
    from raylab.builders.autosize import Sizing
    from raylab.driver.report import RunSummary
    from raylab.types import EnvSpaces

CONFIG_MODULE = "raylab.conf"
EXIT_INTERRUPTED = 130
NULL_DEFAULT_GROUPS = ("experiment", "debug")
"""Groups whose default is null: Hydra accepts only ``group=x`` for them, raylab also ``+group=x``."""

register_config_defaults()  # conf/ composes on the dataclass defaults (raylab/config/store.py): before compose, main


def run(cfg: RunConfig, keep_ray: bool = False, sizing: Sizing | None = None) -> RunSummary:
    """Run one training job from a resolved config (the Python API behind the CLI); ``keep_ray``: a Ray it
    starts outlives it (a sweep's trials share one); ``sizing``: what ``auto`` sizes were probed to
    (raylab.builders.autosize.fill), written to the run dir as autosize.json."""
    spaces = env_spaces(cfg.env)
    check_spaces(cfg, spaces)
    if cfg.model.encoder == "custom" or spaces.obs_parts:
        # the user's network, or one whose encoder the observation's parts choose (raylab/models/keyed.py), fails
        # here, in one line, before any actor starts
        from raylab.builders.algorithms import algorithm

        algorithm(cfg.algo.name).eval_policy(cfg, spaces, 1)
    if cfg.eval.video:
        from raylab.rollout.video import check_frames

        check_frames(cfg)
    from raylab.builders.run import build_run
    from raylab.driver.outputs import check_not_in_use, clear_run_dir, hold_run_dir, prepare_run_dir
    from raylab.driver.report import result_words
    from raylab.driver.resume import load_resume
    from raylab.metrics.loggers import check_logger_config

    check_logger_config(cfg.logger)
    resume = None
    if cfg.resume:  # read and checked before anything is written
        fix = "wait for it to end, or stop it, then resume it"
        check_not_in_use(Path(cfg.resume), fix)  # said first: a live run's checkpoints are not this one's to read
        resume = load_resume(cfg.resume, cfg.to_dict())
        cfg = dataclasses.replace(cfg, run_dir=str(Path(cfg.resume)))
    else:
        prepare_run_dir(Path(cfg.run_dir))
        fix = "wait for it to end, or choose another hydra.run.dir"
    # the run dir is held from here to the run's end: another run, resume, overwrite or benchmark there finds it in
    # use and refuses; what follows is checked and written under it, so two started together cannot both pass
    with hold_run_dir(Path(cfg.run_dir), fix):
        if not cfg.resume:  # a finished run is never trained over (nor a half-finished one: resume it)
            clear_run_dir(Path(cfg.run_dir), cfg.overwrite)  # prepared above
        failures.own_run_dir(Path(cfg.run_dir))  # a failure's traceback goes to its train.log from here on
        if sizing is not None:
            print(sizing.line(), flush=True)
            sizing.write(cfg.run_dir)
        # the topology runs its monitor in a with block: a run that raised leaves no sampler thread, logger or file
        # open
        summary = build_run(cfg, spaces, resume, keep_ray).run()
    result = result_words(summary.benchmark)
    print(
        f"raylab: done ({summary.stop_reason}): {result}{summary.env_steps:,} env steps and "
        f"{summary.updates:,} updates in {summary.train_seconds:.1f} s; outputs in {summary.run_dir}",
        flush=True,
    )
    return summary


def check_spaces(cfg: RunConfig, spaces: EnvSpaces) -> None:
    """What the algorithm can act in, against each policy's spaces, and the policy mapping against the env's
    agents: one line naming the fix, before anything is written."""
    from raylab.config.policies import check_policy_spaces

    check_policy_spaces(cfg, spaces)


def config_groups() -> dict[str, list[str]]:
    """Every config group under conf/ and its options (file names without .yaml)."""
    root = resources.files(CONFIG_MODULE)
    groups = {}
    for entry in root.iterdir():
        if entry.is_dir() and not entry.name.startswith(("_", ".")):
            groups[entry.name] = sorted(f.name[:-5] for f in entry.iterdir() if f.name.endswith(".yaml"))
    return groups


def normalize_overrides(overrides: list[str]) -> list[str]:
    """``+experiment=x`` -> ``experiment=x`` (and the same for debug).

    The defaults list names ``experiment: null`` so that ``experiment=x`` works; Hydra then rejects the
    append form ``+experiment=x`` ("Multiple values for experiment"), which is how most docs spell it.
    Accepting both is friendlier than teaching users the difference.
    """
    out = []
    for override in overrides:
        key = override[1:].partition("=")[0]
        out.append(override[1:] if override.startswith("+") and key in NULL_DEFAULT_GROUPS else override)
    return out


def compose(overrides: list[str]) -> DictConfig:
    """Compose conf/ with ``overrides`` outside of ``hydra.main`` (tests, benchmarks, the CLI's pre-check)."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_module
    from hydra.core.global_hydra import GlobalHydra

    GlobalHydra.instance().clear()
    with initialize_config_module(config_module=CONFIG_MODULE, version_base="1.3"):
        return hydra_compose("config", overrides=normalize_overrides(overrides))


def check_overrides(overrides: list[str]) -> None:
    """Compose once up front so that composition errors become one line that names the fix."""
    if any(arg.startswith("-") for arg in overrides):
        return  # Hydra flags (--multirun, --cfg, --help, ...): leave everything to Hydra
    plain = [o for o in overrides if not o.lstrip("+~").startswith("hydra")]
    check_run_dir_override(overrides)
    groups = config_groups()
    for override in plain:
        check_grammar(override, groups)
        key, _, value = override.lstrip("+~").partition("=")
        if key in groups and value and value != "null" and value not in groups[key]:
            raise ConfigError(_unknown_option(key, value, groups[key]))
    try:
        compose(plain)
    except Exception as err:
        raise ConfigError(_composition_message(err, plain)) from None


def _unknown_option(group: str, value: str, options: list[str]) -> str:
    """``group=value`` names no file in conf/<group>: the closest option (any case), and all of them."""
    plus = "+" if group in NULL_DEFAULT_GROUPS else ""
    lower = {o.lower(): o for o in options}
    close = (
        difflib.get_close_matches(value.lower(), list(lower), n=1)
        or [o for o in lower if o.startswith(value.lower())][:1]
    )
    example = lower[close[0]] if close else options[0]
    guess = f"did you mean {plus}{group}={example}? " if close else ""
    return f"unknown {group} '{value}': {guess}choose one of {', '.join(options)} (e.g. {plus}{group}={example})"


def check_run_dir_override(overrides: list[str]) -> None:
    """``hydra.run.dir=D``, checked before Hydra creates D: not a file nor under one, and not another run's
    (unless resume=D or overwrite=true); the run checks again once its config is resolved."""
    from raylab.driver.outputs import check_holds_no_run, check_not_under_a_file

    given = dict(o.lstrip("+").partition("=")[::2] for o in overrides if "=" in o)
    if "hydra.run.dir" not in given:
        return
    run_dir = Path(given["hydra.run.dir"])
    check_not_under_a_file(run_dir, "hydra.run.dir")
    check_holds_no_run(run_dir, bool(given.get("resume")) or given.get("overwrite", "").lower() == "true")
    check_can_create(run_dir)


def check_can_create(run_dir: Path) -> None:
    """ConfigError naming the fix when ``run_dir`` cannot be created or written (a read-only or virtual file
    system, no permission): tried with a temp dir in its nearest existing parent, which is removed again."""
    import os
    import tempfile

    parent = next((p for p in [run_dir, *run_dir.parents] if p.exists()), Path("."))
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".raylab-", dir=parent))
    except OSError as err:
        reason = os.strerror(err.errno) if err.errno else str(err)
        raise ConfigError(
            f"cannot write hydra.run.dir {run_dir} ({reason} in {parent}): choose a directory you can write"
        ) from None


def check_grammar(override: str, groups: dict[str, list[str]]) -> None:
    """Hydra's grammar errors, in raylab's words: a bare word (an experiment's name, a group's option), and a
    comma list of choices without -m."""
    key, equal, value = override.lstrip("+~").partition("=")
    if not equal and not override.startswith("~"):  # ~key deletes the key, as Hydra's grammar has it
        owners = [g for g, options in groups.items() if override in options]
        if "experiment" in owners:
            raise ConfigError(f"'{override}' is an experiment: write +experiment={override}")
        if owners:
            raise ConfigError(f"'{override}' is a {owners[0]}: write {owners[0]}={override}")
        raise ConfigError(f"'{override}' is not key=value: e.g. +experiment=cartpole_dqn or learner.lr=0.001")
    bare = value.strip()
    if "," in bare and not bare.startswith(("[", "{", "'", '"')) and not bare.startswith(SWEEP_FUNCTIONS):
        raise ConfigError(
            f"{key}={value} lists several values, which only a sweep runs: add -m (python -m raylab.train -m "
            f"{override}), or give one value"
        )


SWEEP_FUNCTIONS = ("choice(", "range(", "interval(", "tag(", "glob(", "int(", "float(", "str(", "bool(")
"""Hydra's override functions, whose arguments hold commas."""


FREE_FORM_ENDS = ("options", "eval_extras")
FREE_FORM_STARTS = ("policies", "policy_mapping")
"""Config dicts whose keys the user chooses (env.options, stop.eval_extras, policies): a new key takes a +."""


def _composition_message(err: Exception, overrides: list[str]) -> str:
    text = " ".join(str(err).split())
    match = re.search(r"Could not override '([^']+)'", text)
    if match:
        path = match.group(1)
        parent, _, leaf = path.rpartition(".")
        others = [o for o in overrides if not o.lstrip("+~").startswith(path + "=")]
        try:
            node = compose(others)
            keys = list(OmegaConf.select(node, parent).keys()) if parent else list(node.keys())
        except Exception:
            keys = []
        close = difflib.get_close_matches(leaf, [str(k) for k in keys], n=1)
        if leaf in [str(k) for k in keys] and (merged := _dict_merge_message(err, path, node, overrides)):
            return merged
        if close:
            fix = f"did you mean '{parent + '.' if parent else ''}{close[0]}'?"
        elif not parent and (nested := _nested_keys(others, leaf)):
            fix = f"did you mean {' or '.join(nested)}?"
        elif path == "run_dir":  # RunConfig.run_dir is the Hydra run dir
            fix = "the run dir is Hydra's: write hydra.run.dir=<dir>"
        elif parent.endswith(FREE_FORM_ENDS) or parent.startswith(FREE_FORM_STARTS):  # keys of the user's choosing
            fix = f"add it with +{path}=..."
        else:
            fix = "check its spelling (python -m raylab.train --cfg job lists every key)"
        return f"unknown config key '{path}': {fix}"
    return f"invalid config overrides: {text}"


def _dict_merge_message(err: Exception, path: str, node: DictConfig, overrides: list[str]) -> str | None:
    """``path={k: v}`` where ``path`` already holds a dict (an experiment's ``stop.eval_extras``): Hydra merges
    the value into it and refuses a key it does not hold. The two spellings that work, with the user's key, at
    the depth Hydra refused it (``stop={eval_extras:{x_pos:900}}``: stop.eval_extras lacks x_pos, not stop)."""
    if not OmegaConf.is_dict(OmegaConf.select(node, path)):
        return None
    cause = " ".join(str(err.__cause__ or "").split())
    found = re.search(r"Key '([^']+)' is not in struct", cause)
    full = re.search(r"full_key: (\S+)", cause)
    value = next((o.partition("=")[2] for o in overrides if o.lstrip("+~").startswith(path + "=")), "")
    pair = re.search(r"([A-Za-z_][\w]*)\s*:\s*", value)
    key = found.group(1) if found else (pair.group(1) if pair else "KEY")
    inner = full.group(1)[len(path) + 1 :].split(".")[:-1] if full and full.group(1).startswith(path + ".") else []
    for step in inner:  # down to the dict that lacks the key, in the node and in the override's text
        value = _value_of(value, step)
    owner = ".".join([path, *inner])
    current = OmegaConf.select(node, owner)
    if not OmegaConf.is_dict(current):
        return None
    val = _value_of(value, key)
    held = OmegaConf.to_container(current)
    return (
        f"{owner} already holds {held} and a dict given for it is merged in, so '{key}' cannot be added that "
        f"way: write +{owner}.{key}={val} to add it, or {owner}=null +{owner}.{key}={val} to replace the dict"
    )


def _value_of(text: str, key: str) -> str:
    """``key``'s value in the Hydra dict literal ``text`` (``VALUE`` where it is not there), whichever of its own items
    it is: a key of the same name inside a nested value (``{a:{x:1},x:2}``) is not the one Hydra named."""
    pos = 1 if text.lstrip().startswith("{") else 0
    pos += len(text) - len(text.lstrip())
    while pos < len(text):
        item = re.match(rf"\s*{re.escape(key)}\s*:\s*", text[pos:])
        if item:
            return _item_value(text, pos + item.end())
        end = _item_end(text, pos)
        if end >= len(text) or text[end] != ",":
            break
        pos = end + 1
    return "VALUE"


def _item_value(text: str, start: int) -> str:
    """The value that starts at ``text[start]`` in a Hydra dict literal: up to the next ``,``, ``}`` or ``]`` at its
    own depth, outside quotes and not escaped, so a nested dict or list (``{OMP_WAIT_POLICY:PASSIVE}``), a quoted
    string with a comma or an escaped comma (``a\\,b``) comes whole."""
    return text[start : _item_end(text, start)].strip() or "VALUE"


def _item_end(text: str, start: int) -> int:
    """Where the item that starts at ``text[start]`` ends: the index of the next ``,``, ``}`` or ``]`` at its own
    depth, outside quotes and not escaped by a backslash, or the text's length."""
    depth, quote, escaped = 0, "", False
    for end in range(start, len(text)):
        char = text[end]
        if escaped:  # Hydra's backslash escapes a quote, a bracket or a comma: it neither opens nor ends anything
            escaped = False
        elif char == "\\":
            escaped = True
        elif quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char in "{[":
            depth += 1
        elif char in "}]" and depth:
            depth -= 1
        elif char in ",}]" and not depth:
            return end
    return len(text)


def _nested_keys(overrides: list[str], leaf: str) -> list[str]:
    """``section.key`` for each section holding ``leaf`` (or a key close to it): a top-level key that was
    meant for a section (``lr=0.001``: learner.lr)."""
    try:
        node = compose(overrides)
    except Exception:
        return []
    found = []
    for section in [str(k) for k in node]:
        sub = node[section]
        if OmegaConf.is_dict(sub):
            keys = [str(k) for k in sub]
            found += [f"{section}.{k}" for k in difflib.get_close_matches(leaf, keys, n=1, cutoff=0.8)]
    return found


@hydra.main(config_path=f"pkg://{CONFIG_MODULE}", config_name="config", version_base="1.3")
def _hydra_main(dict_cfg: DictConfig) -> float | None:
    """One run; under ``-m`` one trial of a sweep, whose objective (raylab/sweep.py) goes back to the sweeper."""
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    hydra_cfg = HydraConfig.get()
    sweeping = hydra_cfg.mode == RunMode.MULTIRUN
    failures.reset()
    try:
        data, sizing = to_container(dict_cfg), None
        if auto_keys(data):  # topology.num_workers=auto (or envs_per_worker): a probe on this machine sizes them
            from raylab.builders import autosize

            data, sizing = autosize.fill(data, run_dir=hydra_cfg.runtime.output_dir)
        cfg = resolve(data, run_dir=hydra_cfg.runtime.output_dir)
        if sweeping:
            from raylab import sweep

            sweep.check(cfg, OmegaConf.to_container(hydra_cfg.sweeper, resolve=False))  # type: ignore[arg-type]
        summary = run(cfg, keep_ray=sweeping, sizing=sizing)  # a sweep's trials share one Ray
    except RaylabError as err:
        failures.log_if_owned(err, "train")  # a run that owns its dir keeps the traceback in train.log
        drop_refused_run_dir(Path(hydra_cfg.runtime.output_dir))
        print(f"raylab: error: {err}", file=sys.stderr, flush=True)
        sys.exit(EXIT_USAGE)
    except KeyboardInterrupt:  # outside the training loop (start-up, final evaluation): nothing to save
        print(f"raylab: {'terminated' if terminated() else 'interrupted'}", file=sys.stderr, flush=True)
        sys.exit(0 if terminated() else EXIT_INTERRUPTED)
    except Exception as err:  # not the user's input: one line naming the log that holds the traceback
        print(f"raylab: error: {failures.one_line(err, failures.write_log(err, 'train'))}", file=sys.stderr)
        sys.exit(failures.exit_code())
    if summary.stop_reason == "interrupted":
        sys.exit(EXIT_INTERRUPTED)
    if sweeping:
        from raylab import sweep

        return sweep.objective(cfg, summary)
    return None


_EXISTING_RUN_DIRS: set[Path] = set()
"""hydra.run.dir values that existed before this command: a refused run never removes them."""


def drop_refused_run_dir(run_dir: Path) -> None:
    """A run refused before it wrote anything leaves no run dir behind: the one Hydra made for it holds only
    Hydra's log file(s), which go with it (a run dir with config.yaml, checkpoints, ... is kept)."""
    if run_dir.resolve() in _EXISTING_RUN_DIRS or not run_dir.is_dir():
        return
    entries = list(run_dir.iterdir())
    if all(e.is_file() and e.suffix == ".log" for e in entries):
        for entry in entries:
            entry.unlink()
        run_dir.rmdir()


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    """The first SIGTERM stops the run like Ctrl-C (outputs written, exit 0); later ones are ignored so that
    the final checkpoint and metrics are not cut short."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    with contextlib.suppress(OSError):  # stderr may be gone (a parent that read it died): the run still stops cleanly
        print("raylab: SIGTERM: stopping (final checkpoint and metrics)", file=sys.stderr, flush=True)
    terminate()


def main() -> None:
    signal.signal(signal.SIGTERM, _on_sigterm)
    sys.argv[1:] = normalize_overrides(sys.argv[1:])
    given = [o.partition("=")[2] for o in sys.argv[1:] if o.lstrip("+").startswith("hydra.run.dir=")]
    _EXISTING_RUN_DIRS.update(Path(d).resolve() for d in given if Path(d).exists())
    try:
        check_overrides(sys.argv[1:])
    except RaylabError as err:
        print(f"raylab: error: {err}", file=sys.stderr, flush=True)
        sys.exit(EXIT_USAGE)
    except KeyboardInterrupt:
        sys.exit(0 if terminated() else EXIT_INTERRUPTED)
    _hydra_main()


if __name__ == "__main__":
    main()

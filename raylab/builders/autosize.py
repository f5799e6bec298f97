"""``topology.num_workers=auto`` and ``topology.envs_per_worker=auto``: sized by a short probe on this machine.

The probe measures, in this process and on one thread, what the run's own pieces cost per env step here:

1. envs per worker (when ``auto``): one rollout worker (env + inference, the class the actors run) samples for
   ``ENV_PROBE_S`` at each of ``ENV_CANDIDATES``; the fewest envs within ``ENV_TOLERANCE`` of the best rate win
   (past the point where batching inference stops paying, more envs only add memory and policy lag).
2. workers: the topology's dataflow decides.

   - ``ppo`` and ``a3c`` alternate: ppo's workers wait while its learner trains, and an A3C worker computes its
     own gradients. Every core goes to whichever side is working, so one worker per core (``cpus``).
   - ``appo`` and ``apex_dqn`` overlap: the learner (with its replay) trains while the workers act, so the cores
     are split. The probe runs the run's algorithm in the local topology (one worker, the learner, the replay,
     taking turns in this process, as ``topology=local`` runs) for ``LEARNER_PROBE_S`` and reads its timers:
     ``t_r``, the rollout seconds per env step (env, inference, weight sync), and ``t_l``, the learner's (update,
     publish, replay add and sample) at the algorithm's own ratio of updates to steps. In the steady state each
     env step costs ``t_r + t_l`` CPU seconds, so ``cpus`` cores run at most ``cpus / (t_r + t_l)`` steps per
     second, of which ``W`` workers can act ``W / t_r``: the fewest workers that reach the cores' rate are
     ``ceil(cpus * t_r / (t_r + t_l))``, and one more acts while another hands its chunk over and waits for
     weights (a lone worker stalls at every hand-over). More only park (they wait for the learner) and cost
     memory.

3. central inference (topology.inference=central; ``inference_actors`` may be ``auto`` too): the same local
   probe splits ``t_r`` into ``t_e`` (env) and ``t_i`` (inference, at one worker's batch: an upper bound of
   what a batch of many workers costs per step). With a GPU the inference actors and the learner act there:
   one inference actor (when auto), and every core left after the learner's and theirs steps envs. On CPUs
   alone the cores are split three ways: ``ceil(cpus * t_e / (t_e + t_i + t_l))`` workers (plus the spare)
   and ``ceil(cpus * t_i / (t_e + t_i + t_l))`` inference actors.

``cpus`` is ``ray.num_cpus`` when set, else the cores this process may run on. A cluster (``ray.address``) is
not probed: its nodes are not this machine. ``resume=`` takes the resumed run's own values. What the probe
measured and chose is written to the run dir as ``autosize.json``.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import math
import os
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from raylab.config.checks import auto_keys
from raylab.errors import ConfigError

AUTO = "auto"
ENV_CANDIDATES = (4, 8, 16, 32, 64)
ENV_PROBE_S = 2.0
ENV_TOLERANCE = 0.10
LEARNER_PROBE_S = 8.0
SPARE_WORKERS = 1
"""Workers beyond the cost split where acting and learning overlap (see ``overlapped_workers``)."""
ALTERNATING = ("ppo", "a3c")
"""Topologies whose rollout and learning take turns (a3c: each worker computes its own gradients)."""
PLACEHOLDER_ENVS = 8


@dataclass(frozen=True)
class Sizing:
    """What the probe measured and chose (autosize.json)."""

    num_workers: int
    envs_per_worker: int
    cpus: int
    topology: str
    chosen: tuple[str, ...]
    """The keys that were ``auto``."""
    env_rates: dict[int, float] = field(default_factory=dict)
    """Envs per worker -> one worker's env steps/s, env and inference in this process (when envs were auto)."""
    rollout_s_per_step: float | None = None
    learner_s_per_step: float | None = None
    probe_s: float = 0.0
    reason: str = ""
    inference_actors: int = 0
    """Central inference: the inference actors (0: the workers act themselves)."""

    def line(self) -> str:
        """One console line: the choice and why."""
        chosen = ", ".join(f"topology.{k}={getattr(self, k)}" for k in self.chosen)
        return f"raylab: auto: {chosen} ({self.reason}; probe {self.probe_s:.0f} s)"

    def to_dict(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "env_rates": {str(k): v for k, v in self.env_rates.items()}}

    def write(self, run_dir: str | Path) -> None:
        """autosize.json in the run dir: what was measured and chosen."""
        (Path(run_dir) / "autosize.json").write_text(json.dumps(self.to_dict(), indent=2) + "\n")


def fill(data: Mapping[str, Any], run_dir: str = ".") -> tuple[dict[str, Any], Sizing | None]:
    """``data`` with every ``auto`` topology key replaced by the probe's choice, and the Sizing (None: nothing
    was auto). Everything else in the config is validated first, so a mistake fails before any probe runs."""
    keys = auto_keys(data)
    if not keys:
        return dict(data), None
    filled = copy.deepcopy(dict(data))
    topology = filled["topology"]
    ray = filled.get("ray") or {}
    if ray.get("address") or os.environ.get("RAY_ADDRESS"):
        raise ConfigError(
            f"topology.{keys[0]}=auto probes this machine, not a cluster's nodes (ray.address is set): give "
            f"topology.{keys[0]} a number"
        )
    if "inference_actors" in keys and topology.get("inference") != "central":
        raise ConfigError(
            "topology.inference_actors=auto sizes the inference actors of topology.inference=central: add "
            "topology.inference=central, or remove it"
        )
    if filled.get("resume"):
        return _from_resumed(filled, keys)
    from raylab.config import resolve

    placeholder = {**topology, "num_workers": 1}
    if topology.get("inference_actors") == AUTO:
        placeholder["inference_actors"] = 1
    if topology.get("envs_per_worker") == AUTO:
        placeholder["envs_per_worker"] = PLACEHOLDER_ENVS
    cfg = resolve({**filled, "topology": placeholder}, run_dir=run_dir)  # every other mistake, before probing
    cpus = int(cfg.ray.num_cpus or len(os.sched_getaffinity(0)))
    started = time.perf_counter()
    sizing = probe(cfg, cpus, keys)
    sizing = dataclasses.replace(sizing, probe_s=round(time.perf_counter() - started, 1))
    topology["num_workers"] = sizing.num_workers
    topology["envs_per_worker"] = sizing.envs_per_worker
    if sizing.inference_actors:
        topology["inference_actors"] = sizing.inference_actors
    return filled, sizing


def _from_resumed(data: dict[str, Any], keys: Sequence[str]) -> tuple[dict[str, Any], Sizing]:
    """A resumed run keeps the sizes it was started with (its run dir's config.yaml)."""
    import yaml

    path = Path(str(data["resume"])) / "config.yaml"
    if not path.parent.is_dir():
        raise ConfigError(f"resume={data['resume']} does not exist: pass the run dir of the run to continue")
    if not path.is_file():
        raise ConfigError(f"resume={data['resume']} has no config.yaml to take topology.{keys[0]} from: give a number")
    saved = (yaml.safe_load(path.read_text()) or {}).get("topology") or {}
    topology = data["topology"]
    for key in keys:
        topology[key] = int(saved[key])
    sizing = Sizing(int(topology["num_workers"]), int(topology["envs_per_worker"]), 0, str(topology.get("name")),
                    tuple(keys), reason=f"as the resumed run {path.parent} was started")  # fmt: skip
    return data, sizing


def probe(cfg: Any, cpus: int, keys: Sequence[str]) -> Sizing:
    """Measure and choose (``cfg``: the run's config with placeholder sizes)."""
    from raylab.envs.registry import env_spaces

    spaces = env_spaces(cfg.env)
    envs, rates = cfg.topology.envs_per_worker, {}
    if "envs_per_worker" in keys:
        rates = {n: env_rate(cfg, spaces, n) for n in ENV_CANDIDATES}
        envs = choose_envs(rates)
    name = cfg.topology.name
    if cfg.topology.central and ("num_workers" in keys or "inference_actors" in keys):
        return central_sizing(cfg, cpus, keys, envs, rates)
    if "num_workers" not in keys:
        return Sizing(cfg.topology.num_workers, envs, cpus, name, tuple(keys), rates,
                      reason=f"{envs} envs: within {ENV_TOLERANCE:.0%} of the best rate with the fewest")  # fmt: skip
    if name in ALTERNATING or name == "local":
        why = "local: the workers take turns in one process" if name == "local" else (
            f"{name} alternates acting and learning: one worker per core")  # fmt: skip
        return Sizing(cpus if name != "local" else 1, envs, cpus, name, tuple(keys), rates, reason=why)
    t_r, t_l = step_costs(cfg, envs)
    workers = overlapped_workers(cpus, t_r, t_l)
    why = (f"{name} overlaps acting and learning: {t_r * 1e3:.3f} ms rollout + {t_l * 1e3:.3f} ms learner per env "
           f"step on one core, {cpus} cpus -> ceil({cpus} x {t_r / (t_r + t_l):.2f}) + {SPARE_WORKERS}, "
           f"at most {cpus}")  # fmt: skip
    return Sizing(workers, envs, cpus, name, tuple(keys), rates, t_r, t_l, reason=why)


def central_sizing(cfg: Any, cpus: int, keys: Sequence[str], envs: int, rates: dict[int, float]) -> Sizing:
    """Workers and inference actors for central inference (step 3 of the module's docstring)."""
    import torch

    topo = cfg.topology
    t_e, t_i, t_l = step_costs(cfg, envs, split=True)
    gpu = topo.inference_device == "cuda" or (topo.inference_device == "auto" and torch.cuda.is_available())
    if gpu:
        actors = 1 if "inference_actors" in keys else topo.inference_actors
        left = cpus - 1 - math.ceil(actors * topo.inference_cpus)  # the learner's core, the inference actors'
        workers = max(1, left) if "num_workers" in keys else topo.num_workers
        why = (f"central inference on the GPU: {actors} inference actor(s) and the learner there, every other core "
               f"steps envs ({cpus} cpus)")  # fmt: skip
    else:
        total = t_e + t_i + max(t_l, 0.0)
        actors = max(1, math.ceil(cpus * t_i / total - 1e-9)) if "inference_actors" in keys else topo.inference_actors
        workers = (
            max(1, min(cpus, math.ceil(cpus * t_e / total - 1e-9) + SPARE_WORKERS))
            if "num_workers" in keys else topo.num_workers
        )  # fmt: skip
        why = (f"central inference on CPUs: {t_e * 1e3:.3f} ms env + {t_i * 1e3:.3f} ms inference + {t_l * 1e3:.3f} "
               f"ms learner per env step on one core, {cpus} cpus -> ceil({cpus} x {t_e / total:.2f}) + "
               f"{SPARE_WORKERS} workers, ceil({cpus} x {t_i / total:.2f}) inference actors")  # fmt: skip
    return Sizing(workers, envs, cpus, topo.name, tuple(keys), rates, t_e + t_i, t_l, reason=why,
                  inference_actors=actors)  # fmt: skip


def choose_envs(rates: Mapping[int, float]) -> int:
    """The fewest envs whose rate is within ENV_TOLERANCE of the best."""
    best = max(rates.values())
    return min(n for n, rate in rates.items() if rate >= (1 - ENV_TOLERANCE) * best)


def overlapped_workers(cpus: int, t_r: float, t_l: float) -> int:
    """The fewest workers that keep ``cpus`` cores busy when each env step costs ``t_r`` seconds of a worker and
    ``t_l`` of the learner, plus one that acts while another hands its chunk over and waits for weights (1 to
    ``cpus``). Without the spare, pong_appo on 2 cores got 1 worker and 0.93x the best rate of a sweep
    (benchmarks/autosize_sweep.json, at 2 epochs a call): a lone worker stalls at every hand-over."""
    if t_r <= 0:
        return 1
    share = t_r / (t_r + max(t_l, 0.0))
    return max(1, min(cpus, math.ceil(cpus * share - 1e-9) + SPARE_WORKERS))


def env_rate(cfg: Any, spaces: Any, envs: int) -> float:
    """One rollout worker's env steps/s with ``envs`` envs, env and inference in this process on one thread."""
    import torch

    from raylab.builders import build_learner, build_rollout_worker

    cfg = dataclasses.replace(cfg, topology=dataclasses.replace(cfg.topology, envs_per_worker=envs))
    weights = build_learner(cfg, spaces).get_weights()
    torch.set_num_threads(1)  # as a rollout actor runs (building the learner set learner.num_threads)
    worker = build_rollout_worker(cfg, spaces, 0)
    try:
        worker.set_weights(weights)
        worker.sample()  # warm-up: first resets, first inference
        steps, start = 0, time.perf_counter()
        while (elapsed := time.perf_counter() - start) < ENV_PROBE_S:
            steps += worker.sample()[1].num_steps
    finally:
        worker.env.close()
    return steps / elapsed


def step_costs(cfg: Any, envs: int, split: bool = False) -> Any:
    """(rollout, learner) CPU seconds per env step: the run's algorithm in the local topology, one worker, one
    thread, for LEARNER_PROBE_S, read from its timers (the first report, warm-up, left out); ``split``:
    (env, inference, learner), the rollout's seconds split."""
    from raylab.builders.run import build_run
    from raylab.envs.registry import env_spaces

    with tempfile.TemporaryDirectory(prefix="raylab-autosize-") as tmp:
        topology = dataclasses.replace(
            cfg.topology, name="local", num_workers=1, envs_per_worker=envs, inference="local", inference_actors=1,
            env_splits=0, inference_cpus=1.0, inference_device="auto",
        )  # fmt: skip
        learner = dataclasses.replace(cfg.learner, num_threads=1)
        replay = cfg.replay
        if cfg.algo.name == "dqn":  # learning starts after a few chunks, not after the run's warm-up
            replay = dataclasses.replace(replay, min_size=min(replay.min_size, 4 * envs * cfg.topology.rollout_length))
        probe_cfg = dataclasses.replace(
            cfg, run_dir=tmp, topology=topology, learner=learner, replay=replay,
            stop=dataclasses.replace(cfg.stop, env_steps=None, seconds=LEARNER_PROBE_S, mean_return=None,
                                     train_return=None),
            eval=dataclasses.replace(cfg.eval, every_seconds=None, every_env_steps=None, final_episodes=0),
            checkpoint=dataclasses.replace(cfg.checkpoint, every_seconds=None),
            logger=dataclasses.replace(cfg.logger, console=False, report_every_seconds=1.0, tensorboard=False,
                                       wandb=dataclasses.replace(cfg.logger.wandb, enabled=False)),
        )  # fmt: skip
        build_run(probe_cfg, env_spaces(cfg.env)).run()
        rows = [json.loads(x) for x in (Path(tmp) / "metrics.jsonl").read_text().splitlines() if x.strip()]
    if split:
        return costs_from_rows(rows, split=True)
    return costs_from_rows(rows)


def costs_from_rows(rows: Sequence[Mapping[str, Any]], split: bool = False) -> Any:
    """(rollout, learner) seconds per env step from metrics rows of a local run (per-interval timers and the
    cumulative env_steps), the first row left out as warm-up; ``split``: (env, inference, learner), the rest
    of the rollout's seconds (weight sync) counted as env."""
    if len(rows) < 2:
        raise ConfigError("topology.num_workers=auto: the probe run reported too little to size from: give a number")
    rollout = learner = inference = 0.0
    for row in rows[1:]:
        for key, value in row.items():
            if not key.startswith("timing/") or key.endswith("wait_s"):
                continue
            part = key.split("/")[1]
            if part == "rollout":
                rollout += float(value)
                if key == "timing/rollout/inference_s":
                    inference += float(value)
            elif part in ("learner", "replay"):
                learner += float(value)
    steps = int(rows[-1]["env_steps"]) - int(rows[0]["env_steps"])
    if steps <= 0:
        raise ConfigError("topology.num_workers=auto: the probe run took no env steps: give a number")
    if split:
        return (rollout - inference) / steps, inference / steps, learner / steps
    return rollout / steps, learner / steps

"""Learning on tasks that need memory: each recurrent policy beside its feed-forward control and a peer or a
published figure, one group of variants per task family, in one run per group.

    make bench-memory ARGS="--groups stateless"          # creates .venv-rllib first (the stateless group's peer)
    python benchmarks/memory_tasks.py --groups stateless r2d2 popgym minigrid --seeds 0 1 2 \\
        --rllib-python .venv-rllib/bin/python
    python benchmarks/memory_tasks.py --groups popgym --cap-s 300 --dry-run   # the commands, nothing run

Every run is a fresh process (``python -m raylab.train``; RLlib in its own virtualenv); within a group the
variants alternate seed by seed (the order reverses every other seed) so that the machine's noise spreads over
all of them. Each run is capped in training seconds (``--cap-s``, raylab's ``stop.seconds``; default 1200 for
the stateless group, whose RLlib runs need that for their 2M env steps on 2 cores, 600 for the others) and, as a
guard against a hang, in process seconds (the cap plus ``--grace-s``: SIGTERM, which raylab answers by stopping
and writing its outputs, then SIGKILL of the process group). ``os.getloadavg()`` is recorded before and after
every run, the machine once per file. Each group writes its own ``<output>_<group>.json`` and ``.png``
(default ``benchmarks/memory_tasks_<group>.json``): a group is run, re-run and rendered on its own (the docs
show one table per group, each made from its file), and a group's file is rewritten after every run, marked
``complete: false`` until the last.

Groups and their criteria:
- ``stateless``: StatelessCartPole-v1 (CartPole-v1 without the velocities) to RLlib's criterion, the mean
  return of the last 100 training episodes >= 350 (raylab: ``stop.train_return=350``, greedy evaluations off),
  within 2M env steps (RLlib's budget for its tuned example) or the cap; as benchmarks/ppo_vs_rllib.py.
- ``r2d2``: R2D2 against Ape-X DQN with 4 stacked frames where memory matters (StatelessCartPole-v1, a confirmed
  greedy 350 within 1M env steps: stateless_cartpole_r2d2's stop) and where it does not (CartPole-v1, a
  confirmed greedy 475 within 500k env steps: cartpole_dqn's and cartpole_r2d2's stop), each experiment on its
  own topology (all four are apex_dqn). A greedy criterion because DQN's training episodes include the Ape-X
  exploration (epsilon up to 0.4 per env slot), which holds the training return under the target.
- ``popgym``: POPGym's RepeatPreviousEasy and CountRecallEasy, a fixed budget of ``--cap-s`` training seconds
  each; the figure is POPGym's MMER (the largest mean training-episode return over the run: here the largest
  ``episode/return_mean``, the mean of the last 100 episodes, over the run's metrics rows), with the final value.
- ``popgym_ids``: RepeatPreviousEasy by POPGym's own gymnasium id (``popgym:popgym-RepeatPreviousEasy-v0``: its
  Discrete observation, one-hot encoded by raylab, nothing else) against raylab's wrapper id (the paper's
  wrappers), GRU, LSTM and MLP each, 120 training seconds by default; the same MMER as ``popgym``. No peer: the question
  is whether the own id learns as well as the wrapper.
- ``minigrid``: MiniGrid's Memory room S7 (one-hot view), a fixed budget; the success rate (an episode's return > 0: the
  matching object reached) and mean return of ``--minigrid-episodes`` sampled episodes of each periodic
  checkpoint (``--minigrid-points`` of them over the cap) and of final.pt (``python -m raylab.evaluate``'s
  evaluation, the run's own ``eval.greedy=false``), and the training return; "time to target" is the first
  metrics row whose training return (last 100 episodes) reaches 0.9, minigrid_memory_ppo_lstm's stop.

Variants (the feed-forward controls are the same experiment with ``model.recurrent=none algo.bptt=null``):
- ``ppo_lstm``: ``+experiment=stateless_cartpole_ppo_lstm`` (PPO, LSTM 256, after RLlib's tuned example).
- ``appo_lstm``: ``+experiment=stateless_cartpole_appo_lstm`` (APPO, LSTM 256, after RLlib's APPO example).
- ``a3c_gru``: ``+experiment=stateless_cartpole_a3c_gru`` (A3C, GRU 64).
- ``ppo_mlp``: ``+experiment=stateless_cartpole_ppo``, the control without memory: expected to miss.
- ``ppo_mlp_stack4``: the same with ``env.frame_stack=4``: the last 4 observations, velocities by differences.
- ``rllib_ppo_lstm``: RLlib's tuned StatelessCartPole PPO (rllib/tuned_examples/ppo/stateless_cartpole_ppo.py:
  MeanStdFilter, lr 3e-4, gamma 0.99, 6 epochs, vf_loss_coeff 0.05, KL loss, LSTM with shared value layers,
  max_seq_len 50) at raylab's shape, 2 env runners x 8 envs (the example runs 3 x 1), on RLlib's own
  StatelessCartPole class under a 500-step TimeLimit (raylab's id has it; the example registers the class
  without one: ``--rllib-time-limit 0`` runs it so).
- ``r2d2_stateless``: ``+experiment=stateless_cartpole_r2d2`` (R2D2 on apex_dqn).
- ``apex_stack4_stateless``: ``+experiment=cartpole_dqn`` on StatelessCartPole-v1 with ``env.frame_stack=4``,
  stateless_cartpole_r2d2's stop and evaluation protocol.
- ``r2d2_cartpole``: ``+experiment=cartpole_r2d2``.
- ``apex_cartpole``: ``+experiment=cartpole_dqn``.
- ``repeat_previous_gru``, ``repeat_previous_mlp``: ``+experiment=popgym_repeat_previous_ppo_gru`` and its
  control.
- ``count_recall_lstm``, ``count_recall_mlp``: ``+experiment=popgym_count_recall_ppo_lstm`` and its control.
- ``memory_s7_lstm``, ``memory_s7_mlp``: ``+experiment=minigrid_memory_onehot_ppo_lstm`` (the 3x3 view as
  one-hot cell codes into an MLP: 5-6k env steps/s where the RGB frames of minigrid_memory_ppo_lstm run 350-420)
  and its control.
- ``rllib_repeat_previous_lstm``, ``rllib_count_recall_lstm``, ``rllib_memory_s7_lstm``: RLlib's PPO-LSTM on the
  same env (raylab's builder, imported from this checkout) with the raylab experiment's settings in RLlib's names
  (RLLIB_SETUPS; RLlib has no tuned example for these tasks, and no GRU in its default model). The POPGym paper's
  per-task scores are not given beside them: its appendix tables could not be retrieved here.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shlex
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CONTROL = ("model.recurrent=none", "algo.bptt=null")
"""A recurrent experiment's feed-forward control: the same experiment without the core and its BPTT."""
LSTM = ("model.recurrent=lstm",)
"""The GRU experiment with an LSTM core of the same size (everything else unchanged)."""
RLLIB_ENV = "raylab-bench-memory-task"
OWN_REPEAT_PREVIOUS = "popgym:popgym-RepeatPreviousEasy-v0"
"""POPGym's own gymnasium id for RepeatPreviousEasy (popgym registers it on import): raylab one-hot encodes its
Discrete observation (raylab/envs/spaces.py) with no wrapper of raylab's."""
CURVE_POINTS = 300
"""A run's training curve is thinned to at most this many (env steps, seconds, return) points."""


@dataclass(frozen=True)
class Task:
    env_id: str
    criterion: str
    """``train_return`` (stop.train_return), ``eval_return`` (a confirmed greedy stop.mean_return) or ``budget``
    (the cap alone; ``target``, if any, is read off the training curve)."""
    target: float | None
    env_steps: int | None
    """The env-step budget (None: the cap alone)."""
    what: str
    published: dict[str, Any] = field(default_factory=dict)
    """The peer's or the paper's figure for this task: ``source``, ``figure`` (words) and ``value`` (a number the
    table shows; None: no number to show)."""

    def criterion_text(self) -> str:
        budget = f" within {self.env_steps / 1e6:g}M env steps" if self.env_steps else ""
        if self.criterion == "train_return":
            return f"mean return of the last 100 training episodes >= {self.target:g}{budget} or the cap"
        if self.criterion == "eval_return":
            return f"a confirmed greedy evaluation >= {self.target:g}{budget} or the cap (the experiment's stop)"
        line = "a fixed budget of training seconds (the cap)"
        if self.target is not None:
            line += f"; time to target: the first metrics row whose training return (last 100) >= {self.target:g}"
        return line


@dataclass(frozen=True)
class Variant:
    name: str
    task: str
    role: str
    """recurrent, feed-forward control, frame stack, peer."""
    overrides: tuple[str, ...] = ()
    """raylab's overrides (the experiment first); empty for RLlib."""
    framework: str = "raylab"
    rllib: str = ""
    """An RLlib variant's setup (a key of RLLIB_SETUPS)."""


@dataclass(frozen=True)
class RllibSetup:
    """One RLlib PPO-LSTM peer: its env (built inside .venv-rllib), its shape and its settings."""

    env: str
    """``stateless`` (RLlib's own StatelessCartPole class), ``popgym:<Task>`` or ``minigrid:<size>:<observation>``
    (raylab.envs.memory_tasks' builders, imported from this checkout: the same env as raylab's run)."""
    shape: tuple[int, int]
    """env runners x envs per runner."""
    training: dict[str, Any]
    """PPOConfig.training(...) keyword arguments."""
    model: dict[str, Any]
    """DefaultModelConfig(...) keyword arguments."""
    words: str
    """The settings in words, for the JSON."""
    rollout_fragment_length: int | str = "auto"
    mean_std_filter: bool = False


def lstm_after_128(cell: int, seq_len: int) -> dict[str, Any]:
    """RLlib's DefaultModelConfig for raylab's ``model.hidden_sizes=[128]`` then an LSTM of ``cell`` units trained
    on ``seq_len`` steps (``algo.bptt``), the value head sharing the layers (as raylab's actor-critic)."""
    return dict(
        fcnet_hiddens=[128],
        fcnet_activation="relu",
        use_lstm=True,
        lstm_cell_size=cell,
        max_seq_len=seq_len,
        vf_share_layers=True,
    )


POPGYM_AS_RAYLAB = dict(
    lr=0.0003, gamma=0.99, lambda_=0.95, num_epochs=4, train_batch_size_per_learner=8192, minibatch_size=1024,
    vf_loss_coeff=1.0, entropy_coeff=0.0, clip_param=0.2, grad_clip=0.5, use_kl_loss=False,
)  # fmt: skip
"""raylab's popgym_* experiments' PPO settings in RLlib's names: 2 x 16 envs x 256 steps = 8,192 a round, 4
epochs of 8 minibatches, no KL term."""
RLLIB_SETUPS: dict[str, RllibSetup] = {
    "stateless": RllibSetup(
        "stateless",
        (2, 8),
        dict(lr=0.0003, gamma=0.99, num_epochs=6, vf_loss_coeff=0.05, use_kl_loss=True),
        dict(use_lstm=True, max_seq_len=50, vf_share_layers=True),
        "rllib/tuned_examples/ppo/stateless_cartpole_ppo.py: MeanStdFilter, lr 3e-4, gamma 0.99, num_epochs 6, "
        "vf_loss_coeff 0.05, use_kl_loss, train batch 4,000 (the default); LSTM 256 after fcnet [256, 256], shared "
        "value layers, max_seq_len 50; 2 env runners x 8 envs (raylab's stateless_cartpole_ppo_lstm shape; the "
        "example's default is 3 env runners x 1 env)",
        mean_std_filter=True,
    ),
    **{
        f"popgym_{key}": RllibSetup(
            f"popgym:{task}",
            (2, 16),
            POPGYM_AS_RAYLAB,
            lstm_after_128(cell=256, seq_len=64),
            f"raylab's {experiment} settings in RLlib's names (RLlib has no tuned POPGym example, and its default "
            "model has no GRU: an LSTM in both): lr 3e-4, gamma 0.99, lambda 0.95, 4 epochs, train batch 8,192 "
            "(2 env runners x 16 envs x 256 steps), minibatch 1,024, vf_loss_coeff 1.0, no entropy bonus, clip "
            "0.2, grad clip 0.5, no KL term; fcnet [128] then LSTM 256, shared value layers, max_seq_len 64 "
            "(raylab's bptt)",
            rollout_fragment_length=256,
        )
        for key, task, experiment in (
            ("repeat_previous", "RepeatPreviousEasy", "popgym_repeat_previous_ppo_gru"),
            ("count_recall", "CountRecallEasy", "popgym_count_recall_ppo_lstm"),
        )
    },
    "minigrid_memory": RllibSetup(
        "minigrid:7:onehot",
        (2, 8),
        dict(
            lr=0.0003,
            gamma=0.99,
            lambda_=0.95,
            num_epochs=4,
            train_batch_size_per_learner=4096,
            minibatch_size=512,
            vf_loss_coeff=0.25,
            entropy_coeff=0.01,
            clip_param=0.2,
            grad_clip=0.5,
            use_kl_loss=False,
        ),
        lstm_after_128(cell=128, seq_len=32),
        "raylab's minigrid_memory_onehot_ppo_lstm settings in RLlib's names: lr 3e-4, gamma 0.99, lambda 0.95, 4 "
        "epochs, train batch 4,096 (2 env runners x 8 envs x 256 steps), minibatch 512, vf_loss_coeff 0.25, "
        "entropy 0.01, clip 0.2, grad clip 0.5, no KL term; fcnet [128] then LSTM 128, shared value layers, "
        "max_seq_len 32 (raylab's bptt)",
        rollout_fragment_length=256,
    ),
}
"""The RLlib peers, by Variant.rllib."""


STATELESS = "raylab.envs.memory_tasks:StatelessCartPole-v1"
POPGYM_PAPER = "Morad et al., POPGym (ICLR 2023), popgym/baselines/ppo.py, 15M env steps"
POPGYM_MMER: dict[str, float | None] = {"repeat_previous": None, "count_recall": None}
"""The paper's MMER of PPO-GRU on RepeatPreviousEasy and PPO-LSTM on CountRecallEasy (its appendix tables), for
the table's "published" column; None (shown as "—") until transcribed from the paper."""

GROUPS: dict[str, tuple[dict[str, Task], list[Variant]]] = {
    "stateless": (
        {
            "stateless_cartpole": Task(
                STATELESS,
                "train_return",
                350.0,
                2_000_000,
                "StatelessCartPole-v1 (CartPole-v1 without the velocities)",
                {
                    "source": "RLlib 2.x rllib/tuned_examples/ppo/stateless_cartpole_ppo.py (3 env runners x 1 env)",
                    "figure": "passes at a mean training return of 350 within 2M env steps (its test bar)",
                    "value": None,
                },
            ),
        },
        [
            Variant("ppo_lstm", "stateless_cartpole", "recurrent", ("+experiment=stateless_cartpole_ppo_lstm",)),
            Variant("appo_lstm", "stateless_cartpole", "recurrent", ("+experiment=stateless_cartpole_appo_lstm",)),
            Variant("a3c_gru", "stateless_cartpole", "recurrent", ("+experiment=stateless_cartpole_a3c_gru",)),
            Variant("ppo_mlp", "stateless_cartpole", "feed-forward control", ("+experiment=stateless_cartpole_ppo",)),
            Variant(
                "ppo_mlp_stack4",
                "stateless_cartpole",
                "frame stack",
                ("+experiment=stateless_cartpole_ppo", "env.frame_stack=4"),
            ),
            Variant("rllib_ppo_lstm", "stateless_cartpole", "peer", framework="rllib", rllib="stateless"),
        ],
    ),
    "r2d2": (
        {
            "stateless_cartpole": Task(
                STATELESS,
                "eval_return",
                350.0,
                1_000_000,
                "StatelessCartPole-v1: memory matters",
                {
                    "source": "none on this task",
                    "figure": "the peer is Ape-X with 4 stacked frames, in the same run",
                    "value": None,
                },
            ),
            "cartpole": Task(
                "CartPole-v1",
                "eval_return",
                475.0,
                500_000,
                "CartPole-v1: memory does not matter (the cost)",
                {
                    "source": "none on this task",
                    "figure": "the peer is feed-forward Ape-X (cartpole_dqn), in the same run",
                    "value": None,
                },
            ),
        },
        [
            Variant("r2d2_stateless", "stateless_cartpole", "recurrent", ("+experiment=stateless_cartpole_r2d2",)),
            Variant(
                "apex_stack4_stateless",
                "stateless_cartpole",
                "frame stack",
                (
                    "+experiment=cartpole_dqn",
                    f"env.id={STATELESS}",
                    "env.frame_stack=4",
                    # stateless_cartpole_r2d2's evaluation protocol, so that both stop alike
                    "eval.every_seconds=10",
                    "eval.episodes=10",
                    "eval.confirm_episodes=20",
                    "eval.final_episodes=50",
                ),
            ),
            Variant("r2d2_cartpole", "cartpole", "recurrent", ("+experiment=cartpole_r2d2",)),
            Variant("apex_cartpole", "cartpole", "feed-forward", ("+experiment=cartpole_dqn",)),
        ],
    ),
    "popgym": (
        {
            "repeat_previous": Task(
                "raylab.envs.memory_tasks:PopGym-RepeatPreviousEasy-v0",
                "budget",
                None,
                None,
                "POPGym RepeatPreviousEasy (uniform random play: -0.5)",
                {
                    "source": f"RLlib's PPO-LSTM at the same settings, in the same run; {POPGYM_PAPER}",
                    "figure": "the paper's PPO-GRU MMER is not given (its appendix tables could not be retrieved here)",
                    "value": POPGYM_MMER["repeat_previous"],
                },
            ),
            "count_recall": Task(
                "raylab.envs.memory_tasks:PopGym-CountRecallEasy-v0",
                "budget",
                None,
                None,
                "POPGym CountRecallEasy (uniform random play: about -0.93)",
                {
                    "source": f"RLlib's PPO-LSTM at the same settings, in the same run; {POPGYM_PAPER}",
                    "figure": "the paper's PPO-LSTM MMER is not given (its appendix tables could not be retrieved "
                    "here)",
                    "value": POPGYM_MMER["count_recall"],
                },
            ),
        },
        [
            Variant(
                "repeat_previous_gru", "repeat_previous", "recurrent", ("+experiment=popgym_repeat_previous_ppo_gru",)
            ),
            Variant(
                "repeat_previous_mlp",
                "repeat_previous",
                "feed-forward control",
                ("+experiment=popgym_repeat_previous_ppo_gru", *CONTROL),
            ),
            Variant("count_recall_lstm", "count_recall", "recurrent", ("+experiment=popgym_count_recall_ppo_lstm",)),
            Variant(
                "count_recall_mlp",
                "count_recall",
                "feed-forward control",
                ("+experiment=popgym_count_recall_ppo_lstm", *CONTROL),
            ),
            Variant(
                "rllib_repeat_previous_lstm",
                "repeat_previous",
                "peer",
                framework="rllib",
                rllib="popgym_repeat_previous",
            ),
            Variant("rllib_count_recall_lstm", "count_recall", "peer", framework="rllib", rllib="popgym_count_recall"),
        ],
    ),
    "popgym_ids": (
        {
            "repeat_previous": Task(
                "raylab.envs.memory_tasks:PopGym-RepeatPreviousEasy-v0",
                "budget",
                None,
                None,
                "POPGym RepeatPreviousEasy through raylab's wrapper id (the paper's observation: card, previous "
                "action, first-step flag)",
            ),
            "repeat_previous_own": Task(
                OWN_REPEAT_PREVIOUS,
                "budget",
                None,
                None,
                "POPGym RepeatPreviousEasy by its own id (its Discrete(4) card, one-hot; no previous action, no flag)",
            ),
        },
        [
            Variant("wrapper_gru", "repeat_previous", "recurrent", ("+experiment=popgym_repeat_previous_ppo_gru",)),
            Variant(
                "own_id_gru",
                "repeat_previous_own",
                "recurrent",
                ("+experiment=popgym_repeat_previous_ppo_gru", f"env.id={OWN_REPEAT_PREVIOUS}"),
            ),
            Variant(
                "own_id_lstm",
                "repeat_previous_own",
                "recurrent",
                ("+experiment=popgym_repeat_previous_ppo_gru", f"env.id={OWN_REPEAT_PREVIOUS}", *LSTM),
            ),
            Variant(
                "own_id_mlp",
                "repeat_previous_own",
                "feed-forward control",
                ("+experiment=popgym_repeat_previous_ppo_gru", f"env.id={OWN_REPEAT_PREVIOUS}", *CONTROL),
            ),
            Variant(
                "wrapper_mlp",
                "repeat_previous",
                "feed-forward control",
                ("+experiment=popgym_repeat_previous_ppo_gru", *CONTROL),
            ),
            Variant(
                "wrapper_lstm", "repeat_previous", "recurrent", ("+experiment=popgym_repeat_previous_ppo_gru", *LSTM)
            ),
        ],
    ),
    "minigrid": (
        {
            "memory_s7": Task(
                "raylab.envs.memory_tasks:MiniGridMemory-S7-v0",
                "budget",
                0.9,
                None,
                "MiniGrid Memory S7, 3x3 view as one-hot cell codes (a memoryless policy picks the right end half "
                "the time)",
                {
                    "source": "RLlib's PPO-LSTM at the same settings, in the same run",
                    "figure": "no published number on S7 with a 3x3 view (MarcoMeter/recurrent-ppo-truncated-bptt "
                    "plays S9 from 99 fixed seeds without resetting its LSTM between episodes)",
                    "value": None,
                },
            ),
        },
        [
            Variant(
                "memory_s7_lstm",
                "memory_s7",
                "recurrent",
                ("+experiment=minigrid_memory_onehot_ppo_lstm", "eval.final_episodes=0"),
            ),
            Variant(
                "memory_s7_mlp",
                "memory_s7",
                "feed-forward control",
                ("+experiment=minigrid_memory_onehot_ppo_lstm", "eval.final_episodes=0", *CONTROL),
            ),
            Variant("rllib_memory_s7_lstm", "memory_s7", "peer", framework="rllib", rllib="minigrid_memory"),
        ],
    ),
}
"""Each group: its tasks by key, and its variants in their first-seed order."""


# ---------------------------------------------------------------------------------------------------------------
# the commands


def order(variants: Sequence[Variant], k: int) -> list[Variant]:
    """The variants in the order of the ``k``-th seed: as listed for even k, reversed for odd."""
    return list(variants) if k % 2 == 0 else list(reversed(variants))


def run_overrides(variant: Variant, task: Task, cap_s: float, checkpoint_every: float | None = None) -> list[str]:
    """A raylab run's overrides: the variant's, then its task's stop (``checkpoint_every``: MiniGrid's periodic
    checkpoints, every one kept)."""
    if task.criterion == "train_return":
        stop = ["stop.mean_return=null", f"stop.train_return={task.target:g}", "eval.every_seconds=null"]
    elif task.criterion == "eval_return":
        stop = [f"stop.mean_return={task.target:g}", "stop.train_return=null"]
    else:
        stop = ["stop.mean_return=null", "stop.train_return=null", "eval.every_seconds=null"]
    stop.append(f"stop.env_steps={task.env_steps}" if task.env_steps else "stop.env_steps=null")
    if checkpoint_every is not None:
        stop += [f"checkpoint.every_seconds={checkpoint_every:g}", "checkpoint.keep=1000"]
    return [*variant.overrides, *stop, f"stop.seconds={cap_s:g}", "logger.console=false"]


def checkpoint_every(group: str, args: argparse.Namespace) -> float | None:
    return args.cap_s / args.minigrid_points if group == "minigrid" else None


def raylab_command(seed: int, run_dir: Path, overrides: list[str]) -> list[str]:
    """``python -m raylab.train`` for one run of ``overrides`` (run_overrides)."""
    return [sys.executable, "-m", "raylab.train", *overrides, f"seed={seed}", f"hydra.run.dir={run_dir.resolve()}"]


def rllib_command(args: argparse.Namespace, variant: Variant, task: Task, seed: int) -> list[str]:
    """An RLlib run in its own virtualenv: ``--rllib-run SETUP SEED CAP_S ENV_STEPS TARGET STOP_AT_TARGET``."""
    target = "nan" if task.target is None else f"{task.target:g}"
    stop_at_target = "1" if task.criterion == "train_return" else "0"
    spec = [variant.rllib, str(seed), f"{args.cap_s:g}", str(task.env_steps or 0), target, stop_at_target]
    return [args.rllib_python, __file__, "--rllib-time-limit", str(args.rllib_time_limit), "--rllib-run", *spec]


def checkpoints_command(run_dir: Path, episodes: int) -> list[str]:
    return [sys.executable, __file__, "--evaluate-checkpoints", str(run_dir.resolve()), str(episodes)]


def describe(variant: Variant, task: Task, args: argparse.Namespace, group: str) -> dict[str, Any]:
    """What a variant runs, for the JSON: raylab's overrides and resolved shape (topology, workers x envs,
    model), RLlib's config in words. Resolving checks every raylab run's config before the first run."""
    if variant.framework == "rllib":
        setup = RLLIB_SETUPS[variant.rllib]
        runners, envs = setup.shape
        if setup.env == "stateless":
            limit = "no TimeLimit (as the example)"
            if args.rllib_time_limit:
                limit = f"a {args.rllib_time_limit}-step TimeLimit"
            env_words = f"ray.rllib.examples.envs.classes.stateless_cartpole.StatelessCartPole under {limit}"
        else:
            env_words = f"{task.env_id} (raylab's env builder, imported from this checkout, the same env)"
        return {
            "framework": "rllib",
            "role": variant.role,
            "task": variant.task,
            "topology": "PPO (new API stack), 1 local learner",
            "workers": runners,
            "envs_per_worker": envs,
            "model": f"LSTM {setup.model.get('lstm_cell_size', 256)} after fcnet "
            f"{setup.model.get('fcnet_hiddens', [256, 256])}, shared value layers, max_seq_len "
            f"{setup.model['max_seq_len']}",
            "config": setup.words,
            "rllib_training": setup.training,
            "rllib_model": setup.model,
            "env": env_words,
        }
    import tempfile

    from raylab.config import resolve
    from raylab.train import check_overrides, compose

    overrides = run_overrides(variant, task, args.cap_s, checkpoint_every(group, args))
    check_overrides(overrides)
    cfg = resolve(compose(overrides), run_dir=tempfile.mkdtemp(prefix="raylab-bench-memory-"))
    if cfg.env.id != task.env_id:
        raise ValueError(f"variant {variant.name} plays {cfg.env.id}, not its task's {task.env_id}")
    model = f"{cfg.model.encoder} {list(cfg.model.hidden_sizes)}"
    if cfg.model.recurrent != "none":
        model += f", {cfg.model.recurrent.upper()} {cfg.model.recurrent_size}"
    bptt = getattr(cfg.algo, "bptt", None)
    return {
        "framework": "raylab",
        "role": variant.role,
        "task": variant.task,
        "overrides": overrides,
        "algo": cfg.algo.name,
        "topology": cfg.topology.name,
        "workers": cfg.topology.num_workers,
        "envs_per_worker": cfg.topology.envs_per_worker,
        "rollout_length": cfg.topology.rollout_length,
        "model": model + (f", BPTT {bptt}" if bptt else ""),
        "frame_stack": cfg.env.frame_stack,
    }


# ---------------------------------------------------------------------------------------------------------------
# one run


def run_process(cmd: list[str], timeout: float, grace: float, env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run ``cmd`` in a session of its own; past ``timeout`` seconds SIGTERM it (raylab stops and writes its
    outputs), past ``grace`` more SIGKILL its process group (Ray's processes with it)."""
    start = time.perf_counter()
    pipe = subprocess.PIPE
    proc = subprocess.Popen(cmd, stdout=pipe, stderr=pipe, text=True, env=env, start_new_session=True)
    killed = None
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        killed = "SIGTERM"
        proc.send_signal(signal.SIGTERM)
        try:
            out, err = proc.communicate(timeout=grace)
        except subprocess.TimeoutExpired:
            killed = "SIGKILL"
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
    return {
        "rc": proc.returncode,
        "stdout": out,
        "stderr": err,
        "seconds": time.perf_counter() - start,
        "killed": killed,
    }


def read_rows(run_dir: Path) -> list[dict[str, Any]]:
    path = run_dir / "metrics.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.is_file() else []


def training_curve(rows: Sequence[dict[str, Any]]) -> list[list[float]]:
    """``[env_steps, training seconds, return]`` of every metrics row that has a training return (the mean of the
    last 100 episodes)."""
    return [
        [int(r["env_steps"]), round(float(r["time_s"]), 2), round(float(r["episode/return_mean"]), 4)]
        for r in rows
        if r.get("episode/return_mean") is not None and math.isfinite(r["episode/return_mean"])
    ]


def thin(curve: list[list[float]], points: int = CURVE_POINTS) -> list[list[float]]:
    """At most ``points`` of ``curve``, evenly spaced by index, the first and the last always kept."""
    if len(curve) <= points:
        return curve
    step = (len(curve) - 1) / (points - 1)
    return [curve[round(i * step)] for i in range(points)]


def first_at(curve: Sequence[Sequence[float]], target: float | None) -> tuple[float | None, int | None]:
    """(seconds, env steps) of the first point of ``curve`` whose return is >= ``target``; (None, None) if none."""
    if target is None:
        return None, None
    for steps, seconds, value in curve:
        if value >= target:
            return seconds, int(steps)
    return None, None


STOPPED_BY = {"train_return": "training return", "eval_return": "eval return"}
"""The stop_reason a run reached its criterion with (raylab/driver/stop.py)."""


def raylab_result(run_dir: Path, task: Task) -> dict[str, Any]:
    """One finished raylab run's figures, from its benchmark_metrics.json and metrics.jsonl."""
    bm = json.loads((run_dir / "benchmark_metrics.json").read_text())
    curve = training_curve(read_rows(run_dir))
    train_s, env_steps = bm["duration_hours"] * 3600, int(bm["total_timesteps"])
    result: dict[str, Any] = {
        "ok": True,
        "stop_reason": bm["stop_reason"],
        "train_s": round(train_s, 2),
        "env_steps": env_steps,
        "updates": bm["total_updates"],
        "final_eval_return": bm["eval"]["return_mean"],
        "final_eval_std": bm["eval"]["return_std"],
        "final_eval_episodes": bm["eval"]["episodes"],
        "train_return_final": curve[-1][2] if curve else None,
        "train_return_max": max(c[2] for c in curve) if curve else None,
    }
    if task.criterion in STOPPED_BY:
        reached = str(bm["stop_reason"]).startswith(STOPPED_BY[task.criterion])
        result.update(reached=reached, seconds_to_target=result["train_s"] if reached else None,
                      env_steps_to_target=env_steps if reached else None)  # fmt: skip
    else:
        seconds, steps = first_at(curve, task.target)
        result.update(reached=None if task.target is None else seconds is not None, seconds_to_target=seconds,
                      env_steps_to_target=steps)  # fmt: skip
    result["curve"] = thin(curve)
    return result


def checkpoint_curve(
    evals: list[dict[str, Any]], rows: Sequence[dict[str, Any]], final_steps: int
) -> list[list[float]]:
    """``[env_steps, training seconds, success rate, mean return, episodes]`` per evaluated checkpoint; a periodic
    checkpoint's env steps are in its name, its seconds interpolated from the metrics rows."""
    import numpy as np

    times = [(int(r["env_steps"]), float(r["time_s"])) for r in rows if "env_steps" in r and "time_s" in r]
    out = []
    for e in evals:
        name = e["checkpoint"]
        steps = final_steps if name == "final.pt" else int(name.removeprefix("step_").removesuffix(".pt"))
        seconds = float(np.interp(steps, [t[0] for t in times], [t[1] for t in times])) if times else float("nan")
        out.append([steps, round(seconds, 2), round(e["success_rate"], 4), round(e["return_mean"], 4), e["episodes"]])
    return out


def evaluate_checkpoints(run_dir: Path, episodes: int) -> list[dict[str, Any]]:
    """Runs in a process of its own: every periodic checkpoint of ``run_dir``, then final.pt, evaluated over
    ``episodes`` episodes (raylab.evaluate, the run's own evaluation settings): success rate (return > 0) and
    mean return."""
    from raylab.evaluate import EvaluateArgs, evaluate

    directory = run_dir / "checkpoints"
    paths = [*sorted(directory.glob("step_*.pt")), directory / "final.pt"]
    out = []
    for path in (p for p in paths if p.is_file()):
        scored = evaluate(EvaluateArgs(run_dir=str(run_dir), checkpoint=path.name, episodes=episodes))
        returns = scored["returns"]
        out.append({
            "checkpoint": path.name, "policy_version": scored["policy_version"], "episodes": len(returns),
            "success_rate": sum(r > 0 for r in returns) / len(returns), "return_mean": sum(returns) / len(returns),
        })  # fmt: skip
    return out


def rllib_env(setup_name: str, time_limit: int, config: Any = None) -> Any:
    """The env of RLLIB_SETUPS[setup_name]: RLlib's StatelessCartPole (its example env class) under a TimeLimit of
    ``time_limit`` steps (0: none), or raylab's POPGym / MiniGrid builder from this checkout (numpy and gymnasium
    only: it imports in RLlib's virtualenv), so both frameworks play the same env."""
    import gymnasium as gym

    env_spec = RLLIB_SETUPS[setup_name].env
    if env_spec == "stateless":
        from ray.rllib.examples.envs.classes.stateless_cartpole import StatelessCartPole

        env = StatelessCartPole(config)
        return gym.wrappers.TimeLimit(env, time_limit) if time_limit else env
    root = str(Path(__file__).resolve().parents[1])
    if root not in sys.path:
        sys.path.insert(0, root)
    from raylab.envs import memory_tasks

    family, *rest = env_spec.split(":")
    if family == "popgym":
        return memory_tasks.popgym_env(rest[0])
    size, observation = rest
    return memory_tasks.minigrid_memory(int(size), observation=observation)


def rllib_config(setup_name: str, seed: int) -> Any:
    """RLLIB_SETUPS[setup_name] as RLlib 2.60's PPOConfig (new API stack)."""
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.connectors.env_to_module import MeanStdFilter
    from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig

    setup = RLLIB_SETUPS[setup_name]
    runners, envs = setup.shape
    connector = {}
    if setup.mean_std_filter:
        connector["env_to_module_connector"] = lambda env, spaces, device: MeanStdFilter()
    return (
        PPOConfig()
        .environment(RLLIB_ENV)
        .debugging(seed=seed)
        .env_runners(
            num_env_runners=runners,
            num_envs_per_env_runner=envs,
            rollout_fragment_length=setup.rollout_fragment_length,
            **connector,
        )
        .training(**setup.training)
        .rl_module(model_config=DefaultModelConfig(**setup.model))
    )


def rllib_run(setup_name: str, seed: int, cap_s: float, env_steps_cap: int, target: float, stop_at_target: bool,
              time_limit: int) -> dict[str, Any]:  # fmt: skip
    """Runs inside .venv-rllib: build the setup's PPO-LSTM and train until the cap or the env-step budget, or the
    target (``stop_at_target``; otherwise the time to it is read off the curve, as raylab's). The curve is one
    point per train() call; its return is RLlib's ``episode_return_mean`` (the last 100 episodes, as raylab's)."""
    import functools
    import logging

    import ray
    from ray.tune.registry import register_env

    runners = RLLIB_SETUPS[setup_name].shape[0]
    ray.init(num_cpus=max(os.cpu_count() or 1, runners + 1), include_dashboard=False, logging_level=logging.ERROR)
    register_env(RLLIB_ENV, functools.partial(rllib_env, setup_name, time_limit))
    algo = rllib_config(setup_name, seed).build_algo()
    start = time.perf_counter()
    stopped_at_target, steps, curve = False, 0, []
    while time.perf_counter() - start < cap_s and (not env_steps_cap or steps < env_steps_cap):
        result = algo.train()
        runners_result = result.get("env_runners", {})
        ret = float(runners_result.get("episode_return_mean", float("nan")))
        steps = int(
            runners_result.get("num_env_steps_sampled_lifetime", result.get("num_env_steps_sampled_lifetime", 0))
        )
        if math.isfinite(ret):
            curve.append([steps, round(time.perf_counter() - start, 2), round(ret, 4)])
        if stop_at_target and ret >= target:
            stopped_at_target = True
            break
    seconds = time.perf_counter() - start
    algo.stop()
    ray.shutdown()
    seconds_to, steps_to = first_at(curve, None if math.isnan(target) else target)
    if stopped_at_target:
        stop = f"training return {curve[-1][2]:.1f} (last 100 episodes) >= {target:g}"
    elif env_steps_cap and steps >= env_steps_cap:
        stop = f"env steps {steps} >= {env_steps_cap}"
    else:
        stop = f"{seconds:.0f} s >= the cap of {cap_s:g} s"
    return {
        "ok": True,
        "stop_reason": stop,
        "reached": None if math.isnan(target) else seconds_to is not None,
        "train_s": round(seconds, 2),
        "env_steps": steps,
        "seconds_to_target": round(seconds, 2) if stopped_at_target else seconds_to,
        "env_steps_to_target": steps if stopped_at_target else steps_to,
        "final_eval_return": None,
        "train_return_final": curve[-1][2] if curve else None,
        "train_return_max": max((c[2] for c in curve), default=None),
        "curve": thin(curve),
    }


def last_lines(text: str, n: int = 5) -> list[str]:
    return (text or "").strip().splitlines()[-n:]


def run_one(
    variant: Variant, task: Task, seed: int, run_dir: Path, args: argparse.Namespace, group: str
) -> dict[str, Any]:
    """One run, with the load average before and after it; a failed run is recorded as such."""
    record: dict[str, Any] = {"variant": variant.name, "task": variant.task, "seed": seed, "run_dir": str(run_dir)}
    record["loadavg_before"] = [round(x, 2) for x in os.getloadavg()]
    env = {**os.environ, "WANDB_MODE": os.environ.get("WANDB_MODE", "disabled")}
    timeout = args.cap_s + args.grace_s
    if variant.framework == "rllib":
        proc = run_process(rllib_command(args, variant, task, seed), timeout, 30.0, env)
        lines = [line for line in (proc["stdout"] or "").splitlines() if line.startswith("RESULT ")]
        if proc["rc"] == 0 and lines:
            record.update(json.loads(lines[-1].removeprefix("RESULT ")))
        else:
            record.update(ok=False, error=last_lines(proc["stderr"] or proc["stdout"]))
    else:
        overrides = run_overrides(variant, task, args.cap_s, checkpoint_every(group, args))
        proc = run_process(raylab_command(seed, run_dir, overrides), timeout, args.grace_s, env)
        if (run_dir / "benchmark_metrics.json").is_file():
            record.update(raylab_result(run_dir, task))
        else:
            record.update(ok=False, error=last_lines(proc["stderr"] or proc["stdout"]))
    record["loadavg_after"] = [round(x, 2) for x in os.getloadavg()]
    record.update(process_s=round(proc["seconds"], 2), rc=proc["rc"], killed=proc["killed"])
    if record["ok"]:
        record["env_steps_per_s"] = round(record["env_steps"] / max(record["train_s"], 1e-9), 1)
    if record["ok"] and group == "minigrid":
        record.update(minigrid_evals(run_dir, args, timeout, env, record["env_steps"]))
    return record


def minigrid_evals(
    run_dir: Path, args: argparse.Namespace, timeout: float, env: dict[str, str], steps: int
) -> dict[str, Any]:
    """The checkpoints' success rates (a process of its own, after the run; not training time)."""
    proc = run_process(checkpoints_command(run_dir, args.minigrid_episodes), timeout, 30.0, env)
    lines = [line for line in (proc["stdout"] or "").splitlines() if line.startswith("RESULT ")]
    if proc["rc"] != 0 or not lines:
        return {"checkpoint_evals": [], "checkpoint_eval_error": last_lines(proc["stderr"] or proc["stdout"])}
    curve = checkpoint_curve(json.loads(lines[-1].removeprefix("RESULT ")), read_rows(run_dir), steps)
    final = curve[-1] if curve else None
    return {
        "checkpoint_evals": curve,
        "checkpoint_eval_s": round(proc["seconds"], 2),
        "final_success_rate": final[2] if final else None,
        "final_eval_return": final[3] if final else None,
        "final_eval_episodes": final[4] if final else 0,
    }


# ---------------------------------------------------------------------------------------------------------------
# the report


def _median(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return round(statistics.median(present), 4) if present else None


def summarize(runs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """A variant's runs: reached k of n, and medians (``median_train_s`` over every run, a missed run counting its
    whole time; the times and env steps *to the target* over the runs that reached it)."""
    done = [r for r in runs if r.get("ok")]

    def med(key: str) -> float | None:
        return _median([r.get(key) for r in done])

    return {
        "runs": len(runs),
        "failed": len(runs) - len(done),
        "reached": sum(bool(r.get("reached")) for r in done),
        "median_train_s": med("train_s"),
        "median_seconds_to_target": med("seconds_to_target"),
        "median_env_steps_to_target": med("env_steps_to_target"),
        "median_env_steps": med("env_steps"),
        "median_env_steps_per_s": med("env_steps_per_s"),
        "median_process_s": med("process_s"),
        "median_final_eval_return": med("final_eval_return"),
        "median_train_return_final": med("train_return_final"),
        "median_train_return_max": med("train_return_max"),
        "median_final_success_rate": med("final_success_rate"),
    }


PROTOCOL = {
    "stateless": "StatelessCartPole-v1: raylab's recurrent policies, its MLP control and its frame-stack baseline "
    "beside RLlib's tuned PPO-LSTM, to the mean return of the last 100 training episodes >= 350 within 2M env "
    "steps or the cap; greedy evaluations off while training (a final greedy evaluation after it, raylab only).",
    "r2d2": "R2D2 against Ape-X DQN with 4 stacked frames: where memory matters (StatelessCartPole-v1) and where it "
    "does not (CartPole-v1, against feed-forward Ape-X), each to its experiment's confirmed greedy target.",
    "popgym": "POPGym: each recurrent PPO beside its MLP control (model.recurrent=none algo.bptt=null) and RLlib's "
    "PPO-LSTM at the same settings for the same training seconds; MMER: the largest mean training-episode return "
    "(last 100 episodes) over the run.",
    "popgym_ids": "POPGym RepeatPreviousEasy by POPGym's own gymnasium id (its Discrete observation one-hot "
    "encoded by raylab's space module) against raylab's wrapper id (the paper's observation wrappers), each with "
    "popgym_repeat_previous_ppo_gru's GRU and its MLP control, for the same training seconds; MMER: the largest "
    "mean training-episode return (last 100 episodes) over the run.",
    "minigrid": "MiniGrid Memory S7: PPO-LSTM beside its MLP control and RLlib's PPO-LSTM for the same training "
    "seconds; the success rate (return > 0) of sampled episodes of each periodic checkpoint and of final.pt (raylab), "
    "and the training return.",
}


def build_report(
    group: str,
    args: argparse.Namespace,
    variants: dict[str, dict[str, Any]],
    runs: list[dict[str, Any]],
    machine: dict[str, Any],
    complete: bool,
    rllib_version: str | None = None,
) -> dict[str, Any]:
    tasks, listed = GROUPS[group]
    report: dict[str, Any] = {
        "benchmark": f"memory_tasks_{group}",
        "group": group,
        "complete": complete,
        "protocol": PROTOCOL[group],
        "command": shlex.join(sys.argv),
        "cap_s": args.cap_s,
        "seeds": args.seeds,
        "tasks": {
            key: {
                "env_id": t.env_id,
                "what": t.what,
                "criterion": t.criterion_text(),
                "target": t.target,
                "env_step_budget": t.env_steps,
                "published": t.published,
            }
            for key, t in tasks.items()
        },
        "variants": variants,
        "machine": machine,
        "summary": {v.name: summarize([r for r in runs if r["variant"] == v.name]) for v in listed},
        "runs": runs,
    }
    if rllib_version:
        report["rllib"] = rllib_version
    if group == "minigrid":
        report["checkpoint_eval"] = {"episodes": args.minigrid_episodes, "checkpoints": args.minigrid_points}
    return report


def _interp_median(curves: list[tuple[Any, Any]]) -> tuple[Any, Any]:
    """Every curve interpolated onto one time grid (from the first point every curve has, to the longest's end; a
    curve that ended early holds its last value), and their median."""
    import numpy as np

    grid = np.linspace(max(t[0] for t, _ in curves), max(t[-1] for t, _ in curves), 200)
    return grid, np.median(np.stack([np.interp(grid, t, y) for t, y in curves]), axis=0)


def plot(report: dict[str, Any], path: Path) -> None:
    """One panel per task (MiniGrid: the training return and the checkpoints' success rate): the training return
    over training seconds, one colour per variant, each seed thin, the median over seeds bold, the target dashed."""
    import numpy as np

    from raylab.bench import plots

    tasks = report["tasks"]
    panels = [(key, "return") for key in tasks]
    if report["group"] == "minigrid":
        panels.append((next(iter(tasks)), "success"))
    fig, axes = plots.figure(6.0 * len(panels), 4.2, 1, len(panels))
    names = list(report["variants"])
    row = [axes] if len(panels) == 1 else list(axes[0])  # one panel: figure() gives the Axes itself
    for ax, (task, kind) in zip(row, panels, strict=True):
        for i, name in enumerate(names):
            if report["variants"][name]["task"] != task:
                continue
            color = f"C{i % 10}"
            runs = [r for r in report["runs"] if r["variant"] == name and r.get("ok")]
            points = [r.get("curve" if kind == "return" else "checkpoint_evals") or [] for r in runs]
            curves = [(np.array([p[1] for p in c]), np.array([p[2] for p in c])) for c in points if c]
            for t, y in curves:
                ax.plot(t, y, color=color, lw=0.8, alpha=0.35)
            if curves:
                grid, median = _interp_median(curves)
                ax.plot(grid, median, color=color, lw=2.2, label=f"{name}: median of {len(curves)}")
        target = tasks[task]["target"]
        if kind == "return" and target is not None:
            ax.axhline(target, color="gray", ls="--", lw=1, label=f"target {target:g}")
        ax.set_xlabel("training time (s)")
        ax.set_ylabel("training return, last 100 episodes" if kind == "return" else "success rate (checkpoints)")
        env = tasks[task]["env_id"].split(":")[-1]
        ax.set_title(env if kind == "return" else f"{env}: success rate of the checkpoints", fontsize=9)
        ax.grid(alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7, title="thin: one seed each", title_fontsize=7)
    fig.suptitle(f"memory tasks, {report['group']} (benchmarks/memory_tasks.py)", fontsize=9)
    plots.save(fig, path)


def headline(report: dict[str, Any]) -> dict[str, Any]:
    keys = ("reached", "runs", "median_seconds_to_target", "median_env_steps_to_target", "median_train_return_max",
            "median_final_success_rate")  # fmt: skip
    return {name: {k: s[k] for k in keys if s.get(k) is not None} for name, s in report["summary"].items()}


def _line(r: dict[str, Any]) -> str:
    if not r.get("ok"):
        return f"{r['variant']} seed {r['seed']}: FAILED: {' / '.join(r.get('error') or [])}"
    outcome = "ran" if r.get("reached") is None else ("reached" if r["reached"] else "MISSED")
    extra = f", best training return {r['train_return_max']:.3g}" if r.get("train_return_max") is not None else ""
    if r.get("final_success_rate") is not None:
        extra += f", final success rate {r['final_success_rate']:.2f}"
    return (
        f"{r['variant']} seed {r['seed']}: {outcome} ({r['stop_reason']}) in {r['train_s']:.1f} s train / "
        f"{r['process_s']:.1f} s process, {r['env_steps']:,} env steps ({r['env_steps_per_s']:,.0f}/s){extra}; "
        f"load {r['loadavg_before'][0]:.2f} -> {r['loadavg_after'][0]:.2f}"
    )


# ---------------------------------------------------------------------------------------------------------------
# main


def run_group(group: str, args: argparse.Namespace) -> int:
    """Run (or, with --dry-run, print) every run of ``group``; its JSON and PNG."""
    tasks, variants = GROUPS[group]
    output = Path(f"{args.output}_{group}.json")
    runs_dir = Path(args.runs_dir) / group
    described = {v.name: describe(v, tasks[v.task], args, group) for v in variants}  # every config checked first
    if any(v.framework == "rllib" for v in variants) and not Path(args.rllib_python).is_file():
        message = f"{args.rllib_python} not found: the {group} group's RLlib runs need it (make bench-memory builds it)"
        if not args.dry_run:
            print(f"memory_tasks: error: {message}", file=sys.stderr)
            return 2
        print(f"# warning: {message}")
    plan = [(seed, v) for k, seed in enumerate(args.seeds) for v in order(variants, k)]
    if args.dry_run:
        print(f"# group {group} -> {output} and {output.with_suffix('.png')} ({len(plan)} runs, cap {args.cap_s:g} s)")
        for seed, v in plan:
            run_dir = runs_dir / f"{v.name}_seed{seed}"
            if v.framework == "rllib":
                print(shlex.join(rllib_command(args, v, tasks[v.task], seed)))
                continue
            print(shlex.join(raylab_command(seed, run_dir, described[v.name]["overrides"])))
            if group == "minigrid":
                print("  then " + shlex.join(checkpoints_command(run_dir, args.minigrid_episodes)))
        return 0

    from raylab.bench.learn import check_no_runs_over
    from raylab.bench.machine import machine_info
    from raylab.bench.plots import write_report
    from raylab.driver.outputs import atomic_write

    check_no_runs_over(runs_dir, [f"{v.name}_seed{seed}" for seed, v in plan if v.framework == "raylab"], False)
    rllib_version = None
    if any(v.framework == "rllib" for v in variants):
        version = [args.rllib_python, "-c", "import ray; print(ray.__version__)"]
        rllib_version = subprocess.run(version, capture_output=True, text=True).stdout.strip()
    machine = machine_info()
    output.parent.mkdir(parents=True, exist_ok=True)
    runs: list[dict[str, Any]] = []
    for seed, v in plan:
        result = run_one(v, tasks[v.task], seed, runs_dir / f"{v.name}_seed{seed}", args, group)
        runs.append(result)
        print(_line(result), flush=True)
        partial = build_report(group, args, described, runs, machine, False, rllib_version)
        atomic_write(output, json.dumps(partial, indent=2) + "\n")  # a run lost to a crash later stays recorded
    report = build_report(group, args, described, runs, machine, True, rllib_version)
    write_report(output, report, plot, headline(report))
    return 0 if all(r.get("ok") for r in runs) else 1


DEFAULT_CAP_S = {"stateless": 1200.0, "r2d2": 600.0, "popgym": 600.0, "popgym_ids": 120.0, "minigrid": 600.0}
"""Training seconds per run unless --cap-s: stateless's leaves RLlib's PPO-LSTM room for its 2M env steps on 2
cores (at RLlib's ~2k env steps/s); popgym_ids's are the spaces issue's 120 s; the others are the issue's 600 s."""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--groups", nargs="+", choices=list(GROUPS), default=list(GROUPS))
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--cap-s", type=float, default=None,
                        help="training seconds per run (default: 1200 for stateless, 120 for popgym_ids, 600 for the "
                        "others)")  # fmt: skip
    parser.add_argument("--grace-s", type=float, default=300.0,
                        help="process seconds past the cap before a run is stopped from outside (start-up, final "
                        "evaluation, writing)")  # fmt: skip
    parser.add_argument("--output", default="benchmarks/memory_tasks", help="prefix: <output>_<group>.json and .png")
    parser.add_argument("--runs-dir", default="outputs/bench/memory_tasks", help="the runs' directories, per group")
    parser.add_argument("--rllib-python", default=".venv-rllib/bin/python")
    parser.add_argument("--rllib-time-limit", type=int, default=500,
                        help="RLlib's StatelessCartPole under a TimeLimit of this many steps, as raylab's id (0: "
                        "none, as RLlib's example registers it)")  # fmt: skip
    parser.add_argument("--minigrid-points", type=int, default=6, help="periodic checkpoints over the cap (MiniGrid)")
    parser.add_argument("--minigrid-episodes", type=int, default=50, help="episodes per checkpoint evaluation")
    parser.add_argument("--dry-run", action="store_true", help="print each run's command (configs checked), run none")
    parser.add_argument("--replot", metavar="JSON", help="redraw a group's PNG from its JSON, beside it")
    parser.add_argument("--rllib-run", nargs=6,
                        metavar=("SETUP", "SEED", "CAP_S", "ENV_STEPS", "TARGET", "STOP_AT_TARGET"),
                        help=argparse.SUPPRESS)  # fmt: skip
    parser.add_argument("--evaluate-checkpoints", nargs=2, metavar=("RUN_DIR", "EPISODES"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.rllib_run:
        setup, seed, cap, steps, target, stop_at_target = args.rllib_run
        result = rllib_run(setup, int(seed), float(cap), int(steps), float(target), stop_at_target == "1",
                           args.rllib_time_limit)  # fmt: skip
        print("RESULT " + json.dumps(result), flush=True)
        return 0
    if args.evaluate_checkpoints:
        run_dir, episodes = args.evaluate_checkpoints
        print("RESULT " + json.dumps(evaluate_checkpoints(Path(run_dir), int(episodes))), flush=True)
        return 0
    if args.replot:
        plot(json.loads(Path(args.replot).read_text()), Path(args.replot).with_suffix(".png"))
        print(f"wrote {Path(args.replot).with_suffix('.png')}")
        return 0
    status = 0
    cap = args.cap_s
    for group in args.groups:
        args.cap_s = cap if cap is not None else DEFAULT_CAP_S[group]
        status = max(status, run_group(group, args))
    return status


if __name__ == "__main__":
    sys.exit(main())

"""``snake_dqn_loop``: the Snake DQN reference loop's throughput measurement, with raylab's components.

    python -m raylab.bench snake_dqn_loop --output benchmarks/snake_dqn_loop.json

Seed 004's loop, in one process: 100 episodes of at most 50 steps, an epsilon-greedy action each step, a
transition stored each step, one DQN update on a batch of 32 every 4 env steps. Seed 004 reports ~2,050
steps/s on 2 CPU cores, counting 5000 / elapsed (every episode as 50 steps, though most end sooner); here
steps/s counts the env steps actually taken, and the seed's formula is recorded beside it.

Variants, alternated round by round (medians over rounds):
- ``reference``: the reference loop, a hand-optimized DQN agent (deque memory, random.sample, batch
  tensors built from numpy arrays, inference_mode acting, zero_grad(set_to_none=True), in-place ReLU, a
  target net, torch on every core), re-implemented here so both run on this machine in the same run.
- ``raylab_1env``: raylab's RolloutWorker (1 env, chunks of 4 steps), ReplayBuffer and Learner (fused Adam,
  double DQN, Polyak target, gradient clipping): one update per chunk.
- ``raylab_8env``: the same with 8 envs stepped as one vector env, one chunk per vector step and two updates
  per chunk: still one update of 32 every 4 env steps (the same updates per sample), fewer calls per step.
- ``raylab_8env_seedalgo``: ``raylab_8env`` doing the reference loop's update (vanilla DQN target, hard target copy
  every 100 updates, no gradient clipping) instead of raylab's default (double DQN, Polyak target every
  update, clipping), so that the loop machinery is compared on equal work.
- ``raylab_8env_autograd``: ``raylab_8env`` as it ran before ``learner.fused`` and DQN's NumPy acting
  (``learner.fused=false model.numpy_inference=false``): the update through autograd, acting in torch.

raylab's variants make one learner call per chunk for the updates it owes, its batches drawn from the replay as
the learner takes them, as the apex_dqn flow does in ``topology=local``.

Every variant uses the same network: raylab's ``snake_dqn`` model (MLP 128x128 on the 11 Snake features).
"""

from __future__ import annotations

import argparse
import copy
import os
import random
import statistics
import time
from collections import deque
from pathlib import Path
from typing import Any

import numpy as np

from raylab.bench import plots
from raylab.bench.checks import count, output_file
from raylab.bench.machine import machine_info
from raylab.driver.outputs import atomic_write

REFERENCE_STEPS_PER_S = 2050
EPISODES, MAX_STEPS, TRAIN_EVERY, BATCH = 100, 50, 4, 32
VARIANTS = (
    "reference", "raylab_1env", "raylab_8env", "raylab_8env_seedalgo", "raylab_8env_autograd",
)  # fmt: skip
SEED_ALGO = ("algo.double=false", "algo.target_update_every=100", "algo.target_tau=1.0", "learner.max_grad_norm=null")
"""Seed 004's update: vanilla DQN target, a hard target copy every 100 updates, no gradient clipping."""
EXTRA = {
    "raylab_8env_seedalgo": SEED_ALGO,
    "raylab_8env_autograd": ("learner.fused=false", "model.numpy_inference=false"),
}
"""Overrides of each raylab variant beyond its number of envs."""


def add_parser(commands: Any) -> None:
    p = commands.add_parser(
        "snake_dqn_loop", help="the Snake DQN reference loop and raylab's: env steps/s in one process"
    )
    p.add_argument("--rounds", type=count, default=5, help="measurements per variant (alternating)")
    p.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=VARIANTS)
    p.add_argument("--output", type=output_file, required=True, help="JSON to write; the PNG goes next to it")
    p.set_defaults(func=run)


def _config(num_envs: int, seed: int, extra: tuple[str, ...] = ()) -> Any:
    from raylab.config import resolve
    from raylab.train import compose

    overrides = [
        "+experiment=snake_dqn", "topology=local", "topology.num_workers=1", f"topology.envs_per_worker={num_envs}",
        f"topology.rollout_length={max(1, TRAIN_EVERY // num_envs)}", f"env.max_episode_steps={MAX_STEPS}",
        f"learner.batch_size={BATCH}", "learner.prefetch=false", "algo.n_step=1", "replay.min_size=32",
        "logger.console=false", f"seed={seed}", *extra,
    ]  # fmt: skip
    return resolve(compose(overrides), run_dir="/tmp/raylab-bench-snake")


class RaylabLoop:
    """raylab's worker, replay and learner in the reference loop (updates every TRAIN_EVERY env steps)."""

    def __init__(self, num_envs: int, seed: int, extra: tuple[str, ...] = ()):
        from raylab.builders import build_learner, build_replay, build_rollout_worker
        from raylab.envs import env_spaces

        cfg = _config(num_envs, seed, extra)
        spaces = env_spaces(cfg.env)
        self.worker = build_rollout_worker(cfg, spaces, 0)
        self.replay = build_replay(cfg, spaces)
        self.learner = build_learner(cfg, spaces)
        self.worker.set_weights(self.learner.get_weights())

    def run(self) -> tuple[int, float, float]:
        """(env steps, seconds, mean return) for EPISODES episodes."""
        steps = episodes = 0
        owed = 0.0
        returns: list[float] = []
        start = time.perf_counter()
        while episodes < EPISODES:
            chunk, stats = self.worker.sample()
            self.replay.add_chunk(chunk)
            steps += stats.num_steps
            episodes += len(stats.episodes)
            returns.extend(stats.episodes.returns.tolist())
            owed += stats.num_steps / TRAIN_EVERY
            due = int(owed) if len(self.replay) >= BATCH else 0
            if due:  # one learner call for the chunk's updates, its batches drawn as it takes them (apex_dqn's)
                learned = self.learner.update_many(self.replay.sample(BATCH) for _ in range(due))
                owed -= due
                if learned.published:
                    self.worker.set_weights(self.learner.get_weights())
        return steps, time.perf_counter() - start, float(np.mean(returns[:EPISODES]))


class Seed004Loop:
    """Seed 004's optimized DQNAgent, as its document describes it, on the same Snake env and network."""

    def __init__(self, seed: int):
        import torch
        from torch import nn

        from raylab.envs.registry import env_spaces, make_env

        torch.set_num_threads(os.cpu_count() or 1)  # the reference: "use all available CPU cores"
        torch.manual_seed(seed)
        cfg = _config(1, seed)
        self.env = make_env(cfg.env, seed=seed)
        spaces = env_spaces(cfg.env)
        obs_dim = int(np.prod(spaces.obs_shape))
        assert spaces.num_actions is not None
        self.n_actions = spaces.num_actions
        self.model = nn.Sequential(
            nn.Linear(obs_dim, 128), nn.ReLU(inplace=True), nn.Linear(128, 128), nn.ReLU(inplace=True),
            nn.Linear(128, self.n_actions),
        )  # fmt: skip
        self.target = copy.deepcopy(self.model)
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=5e-4)
        self.memory: deque[tuple[np.ndarray, int, float, np.ndarray, bool]] = deque(maxlen=100_000)
        self.epsilon, self.gamma, self.replays = 1.0, 0.99, 0
        self.rng = random.Random(seed)
        self.torch = torch

    def act(self, state: np.ndarray) -> int:
        if self.rng.random() < self.epsilon:
            return self.rng.randrange(self.n_actions)
        with self.torch.inference_mode():
            return int(self.model(self.torch.from_numpy(state).unsqueeze(0)).argmax(1).item())

    def learn(self) -> None:
        torch = self.torch
        batch = self.rng.sample(self.memory, BATCH)
        states = torch.from_numpy(np.array([b[0] for b in batch], np.float32))
        actions = torch.from_numpy(np.array([b[1] for b in batch], np.int64))
        rewards = torch.from_numpy(np.array([b[2] for b in batch], np.float32))
        next_states = torch.from_numpy(np.array([b[3] for b in batch], np.float32))
        dones = torch.from_numpy(np.array([b[4] for b in batch], np.float32))
        q = self.model(states).gather(1, actions.unsqueeze(1)).squeeze(1)
        with torch.no_grad():
            target = rewards + self.gamma * self.target(next_states).max(1).values * (1 - dones)
        loss = torch.nn.functional.mse_loss(q, target)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.optimizer.step()
        self.replays += 1
        if self.replays % 100 == 0:
            self.target.load_state_dict(self.model.state_dict())
        self.epsilon = max(0.01, self.epsilon * 0.995)

    def run(self) -> tuple[int, float, float]:
        steps = 0
        returns = []
        start = time.perf_counter()
        for _ in range(EPISODES):
            obs, _ = self.env.reset()
            state = obs.reshape(-1).astype(np.float32)
            total = 0.0
            for step in range(MAX_STEPS):
                action = self.act(state)
                obs, reward, terminated, truncated, _ = self.env.step(action)
                next_state = obs.reshape(-1).astype(np.float32)
                self.memory.append((state, action, float(reward), next_state, bool(terminated)))
                state, total, steps = next_state, total + float(reward), steps + 1
                if step % TRAIN_EVERY == 0 and len(self.memory) > BATCH:
                    self.learn()
                if terminated or truncated:
                    break
            returns.append(total)
        return steps, time.perf_counter() - start, float(np.mean(returns))


def _make(variant: str, seed: int) -> RaylabLoop | Seed004Loop:
    if variant == "reference":
        return Seed004Loop(seed)
    import torch

    torch.set_num_threads(1)  # raylab's learner default (learner.num_threads)
    return RaylabLoop(1 if variant == "raylab_1env" else 8, seed, EXTRA.get(variant, ()))


def run(args: argparse.Namespace, overrides: list[str]) -> int:
    if overrides:
        raise SystemExit(f"raylab bench snake_dqn_loop: error: unexpected arguments {overrides}")
    samples: dict[str, list[dict[str, float]]] = {v: [] for v in args.variants}
    for round_ in range(args.rounds):
        order = args.variants if round_ % 2 == 0 else list(reversed(args.variants))
        for variant in order:
            steps, seconds, mean_return = _make(variant, seed=round_).run()
            samples[variant].append(
                {"env_steps": steps, "seconds": seconds, "steps_per_s": steps / seconds,
                 "seed_formula_steps_per_s": EPISODES * MAX_STEPS / seconds, "mean_return": mean_return}
            )  # fmt: skip
            print(f"round {round_ + 1} {variant:12s} {steps / seconds:8.0f} env steps/s ({steps} steps)", flush=True)
    medians = {v: statistics.median(s["steps_per_s"] for s in runs) for v, runs in samples.items()}
    report: dict[str, Any] = {
        "benchmark": "snake_dqn_loop",
        "protocol": (
            f"{EPISODES} episodes x up to {MAX_STEPS} steps, one update of batch {BATCH} every {TRAIN_EVERY} env "
            f"steps, single process; variants alternate over {args.rounds} rounds; medians"
        ),
        "reference_published_steps_per_s": REFERENCE_STEPS_PER_S,
        "reference_machine": "2 CPU cores (the reference loop's own, not this one); counted as 5000 / elapsed",
        "machine": machine_info(),
        "median_steps_per_s": medians,
        "vs_reference_published": {v: m / REFERENCE_STEPS_PER_S for v, m in medians.items()},
        "runs": samples,
    }
    if "reference" in medians:
        report["vs_reference_same_machine"] = {v: m / medians["reference"] for v, m in medians.items()}
    output = Path(args.output)
    atomic_write(output, _json(report))
    _plot(medians, samples, output.with_suffix(".png"))
    for v, m in medians.items():
        print(f"{v:12s} median {m:8.0f} env steps/s = {m / REFERENCE_STEPS_PER_S:.2f}x the reference's published 2,050")
    print(f"wrote {output} and {output.with_suffix('.png')}")
    return 0


def _json(report: dict[str, Any]) -> str:
    import json

    return json.dumps(report, indent=2) + "\n"


def _plot(medians: dict[str, float], samples: dict[str, list[dict[str, float]]], path: Path) -> None:
    """Env steps/s per loop: the median bar, each round a dot, the reference loop's published figure dashed."""
    fig, ax = plots.figure(7, 4.2)
    names = list(medians)
    ax.bar(range(len(names)), [medians[n] for n in names], color=[f"C{i % 10}" for i in range(len(names))], alpha=0.7)
    for i, n in enumerate(names):
        ax.scatter([i] * len(samples[n]), [s["steps_per_s"] for s in samples[n]], color="k", s=10, zorder=3,
                   label="one round" if i == 0 else None)  # fmt: skip
    published = f"reference loop's published {REFERENCE_STEPS_PER_S:,}"
    ax.axhline(REFERENCE_STEPS_PER_S, color="tab:red", ls="--", label=published)
    plots.slanted_labels(ax, names)
    plots.short_ticks(ax, "y")
    ax.set_ylabel("env steps / s (bar: median)")
    ax.set_title("Snake DQN loop, one process: env steps/s per implementation\n(1 update of batch 32 per 4 env steps)",
                 fontsize=10)  # fmt: skip
    ax.legend(fontsize=8, loc="upper left")
    plots.save(fig, path)

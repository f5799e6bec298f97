"""The Learner with the PPO objective, without Ray: joining a round's chunks on its device, and learning the fake
task with real rollout workers."""

from __future__ import annotations

import numpy as np
import torch

from raylab.algos.actor_critic import ActorCriticPolicy
from raylab.envs.fake import FakeEnv
from raylab.envs.vector import SerialVectorEnv
from raylab.learner.rounds import RoundLoader
from raylab.models.encoders import MLPEncoder
from raylab.models.factory import ActorCritic
from raylab.rollout.worker import RolloutWorker
from raylab.types import Chunk
from tests.factories import actor_critic_learner


def chunk(envs: int, final_at: tuple[int, int] | None = None, crash_at: tuple[int, int] | None = None) -> Chunk:
    steps = 3
    truncated = np.zeros((steps, envs), bool)
    final_obs, final_index = np.zeros((0, 2), np.float32), np.zeros((0, 2), np.int64)
    if final_at is not None:
        truncated[final_at] = True
        final_obs, final_index = np.ones((1, 2), np.float32), np.array([final_at])
    restarted = None
    if crash_at is not None:
        restarted = np.zeros((steps, envs), bool)
        restarted[crash_at] = True
    return Chunk(
        obs=np.zeros((steps + 1, envs, 2), np.float32), actions=np.zeros((steps, envs), np.int64),
        rewards=np.zeros((steps, envs), np.float32), terminated=np.zeros((steps, envs), bool), truncated=truncated,
        final_obs=final_obs, final_index=final_index, policy_version=3, worker_id=0, seq=0, restarted=restarted,
    )  # fmt: skip


def test_the_round_loader_puts_envs_side_by_side_and_shifts_final_indices():
    loader = RoundLoader(torch.device("cpu"))
    joined = loader.load([chunk(2, final_at=(1, 1)), chunk(3, final_at=(2, 0), crash_at=(0, 2))])
    assert joined.obs.shape == (4, 5, 2) and joined.actions.shape == (3, 5)
    np.testing.assert_array_equal(joined.final_index.numpy(), [[1, 1], [2, 2]])  # second chunk's env 0 is env 2
    assert joined.truncated[1, 1] and joined.truncated[2, 2]
    assert joined.crashed is not None and joined.crashed.sum() == 1 and joined.crashed[0, 4]
    again = loader.load([chunk(2), chunk(3)])  # the same shapes: the same buffers, refilled
    assert again.obs.data_ptr() == joined.obs.data_ptr() and again.crashed is None
    assert not again.truncated.any() and again.final_index.shape == (0, 2)


def fake_worker(worker_id: int, seed: int) -> RolloutWorker:
    env = SerialVectorEnv(
        [lambda: FakeEnv(num_actions=3, episode_length=10) for _ in range(4)], seeds=[seed * 10 + i for i in range(4)]
    )
    policy = ActorCriticPolicy(ActorCritic(MLPEncoder((4,), (32,)), 3), seed=seed)
    return RolloutWorker(env, policy, worker_id=worker_id, rollout_length=32)


def test_ppo_learns_the_fake_task_without_ray():
    learner = actor_critic_learner(
        "ppo", (4,), 3, hidden=(32,), settings={"gamma": 0.5, "entropy_coef": 0.0}, lr=3e-3, adam_eps=1e-5,
        max_grad_norm=0.5,
    )  # fmt: skip
    workers = [fake_worker(i, i) for i in range(2)]
    returns: list[float] = []
    for _ in range(40):
        weights = learner.get_weights()
        chunks = []
        for w in workers:
            w.set_weights(weights)
            c, stats = w.sample()
            chunks.append(c)
            returns.extend(stats.episodes.returns.tolist())
        out = learner.update_many(chunks)
    assert out.version == 40 and out.updates == 16 and out.published
    assert np.mean(returns[-20:]) >= 8.0, np.mean(returns[-20:])  # reading the label: 10; chance: 3.3
    assert 0.0 <= out.metrics["clip_fraction"] <= 1.0 and np.isfinite(out.metrics["approx_kl"])

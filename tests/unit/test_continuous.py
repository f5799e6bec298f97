"""Continuous (Box) actions without Ray: the Gaussian's maths, the model and its normalizer, the rollout path,
the objectives, and the one-line refusals."""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import pytest
import torch

from raylab.algos.actor_critic import ActorCriticPolicy
from raylab.builders import build_learner, build_rollout_worker
from raylab.config import EnvConfig, ModelConfig
from raylab.envs.registry import env_spaces, make_vector_env
from raylab.errors import ConfigError
from raylab.models import build_actor_critic
from raylab.models.distributions import Categorical, DiagGaussian
from raylab.models.normalize import RunningNorm
from raylab.rollout.worker import RolloutWorker
from raylab.train import check_spaces
from tests.conftest import make_config

PENDULUM = EnvConfig(id="Pendulum-v1")


def test_gaussian_log_prob_and_entropy_match_torch_distributions():
    torch.manual_seed(0)
    mean, log_std = torch.randn(5, 3), torch.randn(5, 3) * 0.3
    params, actions = torch.cat([mean, log_std], 1), torch.randn(5, 3)
    normal = torch.distributions.Normal(mean, log_std.exp())
    d = DiagGaussian(3)
    torch.testing.assert_close(d.log_prob(params, actions), normal.log_prob(actions).sum(1))
    torch.testing.assert_close(d.entropy(params), normal.entropy().sum(1))
    assert torch.equal(d.mode(params), mean)


def test_gaussian_samples_have_the_policys_moments_and_are_seeded():
    d = DiagGaussian(2)
    params = torch.tensor([[1.0, -2.0, math.log(0.5), math.log(2.0)]]).expand(20000, 4)
    a = d.sample(params, torch.Generator().manual_seed(1))
    torch.testing.assert_close(a.mean(0), torch.tensor([1.0, -2.0]), atol=0.05, rtol=0)
    torch.testing.assert_close(a.std(0), torch.tensor([0.5, 2.0]), atol=0.05, rtol=0)
    assert torch.equal(a, d.sample(params, torch.Generator().manual_seed(1)))
    actions, log_probs = d.sample_with_log_prob(params[:4], torch.Generator().manual_seed(2))
    torch.testing.assert_close(log_probs, d.log_prob(params[:4], actions))


def test_categorical_is_the_softmax_policy():
    logits, actions = torch.tensor([[0.0, math.log(3.0)], [0.0, 0.0]]), torch.tensor([1, 0])
    log_probs, entropy = Categorical(2).log_prob_and_entropy(logits, actions)
    torch.testing.assert_close(log_probs, torch.tensor([math.log(0.75), math.log(0.5)]))
    h = lambda p: -(p * math.log(p) + (1 - p) * math.log(1 - p))  # noqa: E731
    torch.testing.assert_close(entropy, torch.tensor([h(0.75), h(0.5)]))


def test_running_norm_merges_batches_like_one_big_batch():
    rng = np.random.default_rng(0)
    batches = [rng.normal(3.0, 2.0, size=(n, 4)) for n in (7, 1, 50, 13)]
    norm = RunningNorm((4,))
    for b in batches:
        norm.update(torch.from_numpy(b).float())
    whole = np.concatenate(batches)
    np.testing.assert_allclose(norm.mean.numpy(), whole.mean(0), rtol=1e-5)
    np.testing.assert_allclose(norm.var.numpy(), whole.var(0), rtol=1e-4)
    out = norm(torch.from_numpy(whole).float())
    np.testing.assert_allclose(out.mean(0).numpy(), 0.0, atol=1e-4)
    assert float(out.abs().max()) <= 10.0


def test_pendulum_spaces_model_and_published_state():
    spaces = env_spaces(PENDULUM)
    assert spaces.continuous and spaces.action_dim == 1 and spaces.num_actions is None
    model = build_actor_critic(ModelConfig(hidden_sizes=(16,), normalize_obs=True, log_std_init=-0.5), spaces)
    params, value = model(torch.zeros(3, 3))
    assert params.shape == (3, 2) and value.shape == (3,)
    assert torch.allclose(params[:, 1], torch.tensor(-0.5))  # the state-independent log-std
    state = model.state_dict()
    assert {"log_std", "obs_norm.mean", "obs_norm.var", "obs_norm.count"} <= set(state)
    assert all(t.device.type == "cpu" for t in state.values())


def test_rollouts_store_the_unclipped_sample_and_the_env_gets_it_clipped():
    spaces = env_spaces(PENDULUM)
    model = build_actor_critic(ModelConfig(hidden_sizes=(16,), log_std_init=math.log(5.0)), spaces)  # wide: clips
    policy = ActorCriticPolicy(model, seed=0)
    worker = RolloutWorker(make_vector_env(PENDULUM, 4, seed=0), policy, worker_id=0, rollout_length=16)
    chunk, _ = worker.sample()
    assert chunk.actions.shape == (16, 4, 1) and chunk.actions.dtype == np.float32
    assert np.abs(chunk.actions).max() > 2.0  # outside Pendulum's [-2, 2]: the env clipped what it got
    assert chunk.log_probs is not None and chunk.log_probs.shape == (16, 4)
    params, _ = model(torch.from_numpy(chunk.obs[:16].reshape(64, 3)))
    expected = model.dist.log_prob(params, torch.from_numpy(chunk.actions.reshape(64, 1)))
    np.testing.assert_allclose(chunk.log_probs.reshape(-1), expected.numpy(), rtol=1e-5, atol=1e-5)


def test_greedy_policy_acts_with_the_mean():
    spaces = env_spaces(PENDULUM)
    model = build_actor_critic(ModelConfig(hidden_sizes=(16,)), spaces)
    obs = np.random.default_rng(0).normal(size=(5, 3)).astype(np.float32)
    actions = ActorCriticPolicy(model, seed=0, greedy=True).act(obs)
    np.testing.assert_allclose(actions, model(torch.from_numpy(obs))[0][:, :1].detach().numpy())


@pytest.mark.parametrize("algo", ["ppo", "appo"])
def test_the_learner_trains_box_actions_and_ships_its_normalizer(tmp_path, algo):
    cfg = make_config(
        tmp_path, "env.id=Pendulum-v1", "model.normalize_obs=true", f"algo={algo}", f"topology={algo}",
        "topology.rollout_length=32", "topology.envs_per_worker=4", "algo.epochs=1", "algo.minibatches=2",
        "stop.mean_return=null",
    )  # fmt: skip
    spaces = env_spaces(cfg.env)
    learner = build_learner(cfg, spaces)
    workers = [build_rollout_worker(cfg, spaces, i) for i in range(cfg.topology.num_workers)]
    chunks = [w.sample()[0] for w in workers]
    before = {k: v.copy() for k, v in learner.get_weights().params.items()}
    stats = learner.update_many(chunks)
    assert stats.updates == 2 and math.isfinite(stats.metrics["policy_loss"])
    after = learner.get_weights()
    steps = sum(c.size for c in chunks)
    assert float(after.params["obs_norm.count"]) == steps  # the round's observations, merged by the learner
    assert not np.array_equal(after.params["log_std"], before["log_std"])  # the exploration noise is learned
    for worker in workers:  # actors load it all, statistics included
        worker.set_weights(after)
        assert float(worker.policy.model.obs_norm.count) == steps


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        (["algo=dqn"], "algo=dqn needs discrete actions but Pendulum-v1 has Box"),
        (["algo=a3c", "topology=a3c", "model.normalize_obs=true"], "model.normalize_obs=true applies to algo=ppo/appo"),
    ],
)
def test_what_cannot_act_in_a_box_is_refused_in_one_line(tmp_path, overrides, expected):
    with pytest.raises(ConfigError, match=expected):  # the config refuses the second, the env's spaces the first
        cfg = make_config(tmp_path, "env.id=Pendulum-v1", "stop.mean_return=null", *overrides)
        check_spaces(cfg, env_spaces(cfg.env))


def test_box_actions_of_more_than_one_axis_are_refused():
    class Grid(gym.Env):
        observation_space = gym.spaces.Box(-1, 1, (2,))
        action_space = gym.spaces.Box(-1, 1, (2, 2))

        def reset(self, *, seed=None, options=None):
            return np.zeros(2, np.float32), {}

    gym.register("RaylabTestGridActions-v0", entry_point=Grid)
    with pytest.raises(ConfigError, match="one-dimensional Box actions: flatten the action space"):
        env_spaces(EnvConfig(id="RaylabTestGridActions-v0"))

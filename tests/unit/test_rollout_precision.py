"""model.rollout_precision=bf16: rollout actors act through a bfloat16 copy of a CNN, loaded from each published
fp32 version; its action distribution stays within bf16 rounding of the fp32 network's, DQN's greedy actions
agree with fp32's wherever the Q values are not near-ties, and the rest (evaluation, A3C) stays fp32."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from raylab.algos.actor_critic import ActorCriticPolicy
from raylab.algos.dqn.policy import EpsilonGreedyPolicy, EpsilonSchedule
from raylab.config.schema import ModelConfig
from raylab.models.factory import build_actor_critic, build_q_network
from raylab.types import EnvSpaces, Weights
from tests.conftest import make_config

FRAMES = EnvSpaces((4, 84, 84), np.dtype(np.uint8), 6, "Discrete(6)", frames_per_step=4)
CNN = ModelConfig(encoder="nature_cnn", hidden_sizes=(512,))


def weights_of(net: torch.nn.Module, version: int) -> Weights:
    return Weights(version, {k: v.detach().numpy().copy() for k, v in net.state_dict().items()})


def frames(n: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (n, *FRAMES.obs_shape), dtype=np.uint8)


def test_the_bf16_copy_acts_with_the_fp32_networks_distribution_and_follows_new_versions():
    torch.manual_seed(0)
    net = build_actor_critic(CNN, FRAMES)
    with torch.no_grad():
        net.policy.weight.normal_(0.0, 0.5)  # away from the near-uniform start
    policy = ActorCriticPolicy(build_actor_critic(CNN, FRAMES), seed=0, precision="bf16")
    assert policy.set_weights(weights_of(net, 1))
    assert all(p.dtype == torch.bfloat16 for p in policy.model.encoder.parameters())
    assert policy.model.policy.weight.dtype == policy.model.value.weight.dtype == torch.float32  # heads stay fp32
    obs = frames(32)
    with torch.no_grad():
        want = torch.softmax(net(torch.from_numpy(obs))[0], -1)
        got = torch.softmax(policy.model(torch.from_numpy(obs))[0].float(), -1)
    assert float((want - got).abs().max()) < 0.02 and float((want - got).abs().max()) > 0  # bf16, not fp32
    assert float((want - 1 / 6).abs().max()) > 0.05  # the test compares something
    actions = policy.act(obs)
    assert actions.shape == (32,) and actions.dtype == np.int64 and set(actions) <= set(range(6))
    assert policy.last_log_probs is not None and policy.last_log_probs.dtype == np.float32
    with torch.no_grad():
        net.policy.bias.add_(torch.tensor([9.0, 0, 0, 0, 0, 0]))  # a new version that always picks action 0
    policy.set_weights(weights_of(net, 2))
    assert (policy.act(obs) == 0).all()


def test_dqn_greedy_actions_in_bf16_match_fp32_away_from_near_ties():
    torch.manual_seed(1)
    net = build_q_network(CNN, FRAMES)
    schedule = EpsilonSchedule(final=np.zeros(64), initial=0.0, anneal_env_steps=0)
    policy = EpsilonGreedyPolicy(build_q_network(CNN, FRAMES), schedule, 6, seed=0, precision="bf16")
    policy.set_weights(weights_of(net, 1))
    assert all(p.dtype == torch.bfloat16 for p in policy.q_net.encoder.parameters())
    assert all(p.dtype == torch.float32 for p in policy.q_net.head.parameters())
    obs = frames(64, seed=2)
    with torch.no_grad():
        q = net(torch.from_numpy(obs))
        got = policy.q_net(torch.from_numpy(obs))
    assert got.dtype == torch.float32 and len(set(got[0].tolist())) == 6  # fp32 Q values: no bf16 ties
    top2 = q.topk(2, dim=1).values
    clear = (top2[:, 0] - top2[:, 1]) > 0.02 * q.abs().max()
    assert clear.sum() >= 16
    np.testing.assert_array_equal(policy.act(obs)[clear.numpy()], q.argmax(1).numpy()[clear.numpy()])


def test_the_impala_cnn_acts_in_channels_last_with_the_same_distribution_through_new_versions():
    spaces = EnvSpaces((3, 64, 64), np.dtype(np.uint8), 15, "Discrete(15)")
    cfg = ModelConfig(encoder="impala_cnn", hidden_sizes=(256,))
    torch.manual_seed(2)
    net = build_actor_critic(cfg, spaces)
    with torch.no_grad():
        net.policy.weight.normal_(0.0, 0.5)
    policy = ActorCriticPolicy(build_actor_critic(cfg, spaces), seed=0)
    for version in (1, 2):
        with torch.no_grad():
            net.value.bias.add_(1.0)
        policy.set_weights(weights_of(net, version))
        weights4d = [p for p in policy.model.parameters() if p.dim() == 4]
        assert weights4d and all(p.is_contiguous(memory_format=torch.channels_last) for p in weights4d)
        obs = np.random.default_rng(version).integers(0, 256, (8, 3, 64, 64), dtype=np.uint8)
        with torch.no_grad():
            want_logits, want_value = net(torch.from_numpy(obs))
            got_logits, got_value = policy.model(torch.from_numpy(obs))
        torch.testing.assert_close(got_logits, want_logits, rtol=1e-4, atol=1e-4)
        torch.testing.assert_close(got_value, want_value, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("experiment", ["pong_ppo", "breakout_appo", "pong_apex_dqn"])
def test_the_setting_reaches_every_rollout_actors_policy(experiment, tmp_path):
    from raylab.builders.components import build_rollout_worker
    from raylab.envs.registry import env_spaces

    cfg = make_config(tmp_path, f"+experiment={experiment}", "model.rollout_precision=bf16")
    worker = build_rollout_worker(cfg, env_spaces(cfg.env), 0)
    policy = worker.policy
    module = policy.q_net if hasattr(policy, "q_net") else policy.model
    assert {p.dtype for p in module.encoder.parameters()} == {torch.bfloat16}
    worker.env.close()


@pytest.mark.parametrize("overrides", [("+experiment=cartpole_a3c",), ("+experiment=cartpole_ppo",)])
def test_rollout_precision_is_refused_where_nothing_acts_with_a_copy(overrides, tmp_path):
    with pytest.raises(Exception, match=r"model\.rollout_precision"):
        make_config(tmp_path, *overrides, "model.rollout_precision=bf16")


def test_evaluation_stays_fp32(tmp_path):
    from raylab.builders.algorithms import actor_critic_eval_policy

    cfg = make_config(tmp_path, "+experiment=pong_ppo", "model.rollout_precision=bf16")
    assert {p.dtype for p in actor_critic_eval_policy(cfg, FRAMES, 2).model.parameters()} == {torch.float32}

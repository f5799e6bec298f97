"""model.numpy_inference: a NumPy copy of a plain MLP actor-critic acts with the distribution torch's model
defines (the same parameters within float32 rounding, samples with those frequencies, log-probabilities as
torch computes them) and follows every new weights version; other models stay in torch."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from raylab.algos.actor_critic import ActorCriticPolicy
from raylab.config.schema import ModelConfig
from raylab.models import numpy_policy
from raylab.models.factory import build_actor_critic
from raylab.types import EnvSpaces, Weights

DISCRETE = EnvSpaces((4,), np.dtype(np.float32), 3, "Discrete(3)")
BOX = EnvSpaces((3,), np.dtype(np.float32), None, "Box(-2.0, 2.0, (2,), float32)", action_dim=2)


def model(spaces: EnvSpaces, normalize: bool = False, seed: int = 0) -> torch.nn.Module:
    torch.manual_seed(seed)
    net = build_actor_critic(ModelConfig(hidden_sizes=(16, 16), normalize_obs=normalize), spaces)
    with torch.no_grad():  # a policy head away from its near-uniform start, so the test has something to match
        net.policy.weight.normal_(0.0, 1.0)
        if net.obs_norm is not None:
            net.obs_norm.update(torch.randn(64, *spaces.obs_shape, dtype=torch.float64) * 3 + 1)
    return net


def weights_of(net: torch.nn.Module, version: int) -> Weights:
    return Weights(version, {k: v.detach().numpy().copy() for k, v in net.state_dict().items()})


@pytest.mark.parametrize("spaces", [DISCRETE, BOX], ids=["categorical", "gaussian"])
@pytest.mark.parametrize("normalize", [False, True], ids=["raw", "normalized"])
def test_the_copy_computes_torchs_distribution_parameters(spaces, normalize):
    net = model(spaces, normalize)
    assert numpy_policy.supports(net)
    copy = numpy_policy.NumpyActor(net, seed=0)
    obs = np.random.default_rng(1).normal(0, 2, (32, *spaces.obs_shape)).astype(np.float32)
    with torch.no_grad():
        want, _ = net(torch.from_numpy(obs))
    got = copy.params(obs)
    np.testing.assert_allclose(got, want[:, : got.shape[1]].numpy(), rtol=1e-5, atol=1e-5)


def test_uint8_observations_are_scaled_as_torch_scales_them():
    grid = EnvSpaces((3, 5, 5), np.dtype(np.uint8), 4, "Discrete(4)")  # env=snake observation=grid, model=mlp
    net = model(grid)
    obs = np.random.default_rng(3).integers(0, 256, (16, 3, 5, 5), dtype=np.uint8)
    with torch.no_grad():
        want, _ = net(torch.from_numpy(obs))
    np.testing.assert_allclose(numpy_policy.NumpyActor(net, seed=0).params(obs), want.numpy(), rtol=1e-5, atol=1e-5)


def test_categorical_samples_follow_the_softmax_and_their_log_probs_are_torchs():
    net = model(DISCRETE)
    copy = numpy_policy.NumpyActor(net, seed=0)
    obs = np.tile(np.array([[0.3, -1.0, 2.0, 0.5]], np.float32), (20_000, 1))
    actions, log_probs = copy.sample(obs)
    with torch.no_grad():
        logits, _ = net(torch.from_numpy(obs[:1]))
        probs = torch.softmax(logits, 1)[0].numpy()
        want = net.dist.log_prob(torch.cat([logits] * len(obs)), torch.from_numpy(actions)).numpy()
    assert actions.dtype == np.int64 and set(np.unique(actions)) <= {0, 1, 2}
    np.testing.assert_allclose(np.bincount(actions, minlength=3) / len(obs), probs, atol=0.012)  # ~3.5 sigma
    np.testing.assert_allclose(log_probs, want, atol=1e-5)


def test_gaussian_samples_have_the_policys_mean_and_std_and_torchs_log_probs():
    net = model(BOX)
    with torch.no_grad():
        net.log_std.copy_(torch.tensor([-0.5, 0.3]))
    copy = numpy_policy.NumpyActor(net, seed=0)
    obs = np.tile(np.array([[0.3, -1.0, 2.0]], np.float32), (20_000, 1))
    actions, log_probs = copy.sample(obs)
    with torch.no_grad():
        params, _ = net(torch.from_numpy(obs))
        want = net.dist.log_prob(params, torch.from_numpy(actions)).numpy()
    mean = params[0, :2].numpy()
    np.testing.assert_allclose(actions.mean(0), mean, atol=0.03)
    np.testing.assert_allclose(actions.std(0), np.exp([-0.5, 0.3]), rtol=0.03)
    np.testing.assert_allclose(log_probs, want, atol=1e-4)


def test_the_policy_reloads_the_copy_with_each_new_weights_version():
    net = model(DISCRETE, normalize=True)
    policy = ActorCriticPolicy(net, seed=0, greedy=True, numpy_inference=True)
    torch_policy = ActorCriticPolicy(model(DISCRETE, normalize=True), seed=0, greedy=True)
    assert policy.numpy is not None and torch_policy.numpy is None
    obs = np.random.default_rng(2).normal(0, 2, (256, 4)).astype(np.float32)
    newer = weights_of(model(DISCRETE, normalize=True, seed=7), version=3)
    assert policy.set_weights(newer) and torch_policy.set_weights(newer)
    np.testing.assert_array_equal(policy.act(obs), torch_policy.act(obs))  # greedy: the same argmax
    stochastic = ActorCriticPolicy(model(DISCRETE), seed=0, numpy_inference=True)
    actions = stochastic.act(obs)
    assert actions.shape == (256,) and stochastic.last_log_probs is not None
    assert stochastic.last_log_probs.shape == (256,) and np.all(stochastic.last_log_probs <= 0)


def test_models_that_are_not_plain_mlps_and_trained_in_place_ones_stay_in_torch():
    cnn = build_actor_critic(ModelConfig(encoder="nature_cnn", hidden_sizes=(32,)),
                             EnvSpaces((4, 84, 84), np.dtype(np.uint8), 3, "Discrete(3)"))  # fmt: skip
    assert not numpy_policy.supports(cnn)
    assert ActorCriticPolicy(cnn, seed=0, numpy_inference=True).numpy is None
    a3c = ActorCriticPolicy(model(DISCRETE), seed=0, frozen=False, numpy_inference=True)  # A3C trains it in place
    assert a3c.numpy is None


def test_only_linear_relu_pairs_are_the_plain_mlp_shape():
    """The NumPy copies and the fused updates put a ReLU after every Linear of the trunk: a reordered or extended
    stack in an MLPEncoder is not that shape and stays in torch."""
    for layers in ([torch.nn.Linear(6, 8), torch.nn.Linear(8, 8)], [torch.nn.ReLU(), torch.nn.Linear(6, 8)],
                   [torch.nn.Linear(6, 8), torch.nn.Tanh()]):  # fmt: skip
        net = model(DISCRETE)
        net.encoder.net = torch.nn.Sequential(torch.nn.Flatten(), *layers)
        assert numpy_policy.mlp_linears(net.encoder.net) is None and not numpy_policy.supports(net)
    plain = model(DISCRETE)
    assert numpy_policy.supports(plain) and len(numpy_policy.mlp_linears(plain.encoder.net) or []) == 2


def _arrays(copy: numpy_policy.NumpyActor) -> list[np.ndarray | None]:
    norm = list(copy.norm) if copy.norm is not None else []
    return [a for layer in [*copy.layers, copy.head] for a in layer] + norm + [copy.log_std]


def _torchs(net: torch.nn.Module) -> list[np.ndarray | None]:
    """What the copy must hold, computed by torch from the module itself: each Linear's W^T and bias, the
    normalizer's float32 mean and std (RunningNorm.forward's sqrt(var + eps) in float64), the log-std."""
    linears = [*numpy_policy.mlp_linears(net.encoder.net), net.policy]
    arrays: list[np.ndarray | None] = [
        a for m in linears for a in (m.weight.detach().T.numpy(), m.bias.detach().numpy())
    ]
    if net.obs_norm is not None:
        norm = net.obs_norm
        arrays += [norm.mean.to(torch.float32).numpy(), torch.sqrt(norm.var + norm.eps).to(torch.float32).numpy()]
    arrays.append(net.log_std.detach().numpy() if hasattr(net, "log_std") else None)
    return arrays


@pytest.mark.parametrize("spaces", [DISCRETE, BOX], ids=["categorical", "gaussian"])
@pytest.mark.parametrize("normalize", [False, True], ids=["raw", "normalized"])
def test_weights_loaded_straight_into_the_copy_are_the_modules_exactly(spaces, normalize):
    """set_weights loads the copy from the arrays (load_params), never through the module: the copy must
    hold, bit for bit, what torch computes from a module holding the same weights."""
    source = model(spaces, normalize, seed=5)
    with torch.no_grad():
        if source.obs_norm is not None:  # sqrt(9.7 + eps) in float32 is one ulp off the float64 result's rounding
            source.obs_norm.var.fill_(9.7)
        if hasattr(source, "log_std"):
            source.log_std.copy_(torch.tensor([-0.7, 0.2]))
    straight = numpy_policy.NumpyActor(model(spaces, normalize, seed=1), seed=0)
    straight.load_params(weights_of(source, version=1).params)
    got, want = _arrays(straight), _torchs(source)
    assert len(got) == len(want)
    for a, b in zip(got, want, strict=True):
        if b is None:
            assert a is None
        else:
            assert a is not None and a.dtype == np.float32 and a.flags.c_contiguous
            np.testing.assert_array_equal(a, b)


def test_the_module_receives_the_weights_the_copy_acts_with_when_asked_for():
    """With the NumPy copy acting, set_weights leaves the torch module for later: whatever reads ``model``
    must still get the newest weights."""
    policy = ActorCriticPolicy(model(DISCRETE, normalize=True), seed=0, numpy_inference=True)
    for version, seed in ((1, 7), (2, 8)):
        newer = weights_of(model(DISCRETE, normalize=True, seed=seed), version)
        assert policy.set_weights(newer)
    assert not policy.set_weights(weights_of(model(DISCRETE, seed=9), version=2))  # not newer: ignored
    state = policy.model.state_dict()
    assert set(state) == set(newer.params)
    for k, v in state.items():
        np.testing.assert_array_equal(v.numpy(), newer.params[k])
    obs = np.random.default_rng(2).normal(0, 2, (64, 4)).astype(np.float32)
    with torch.no_grad():
        logits, _ = policy.model(torch.from_numpy(obs))
    np.testing.assert_allclose(policy.numpy.params(obs), logits.numpy(), rtol=1e-5, atol=1e-5)

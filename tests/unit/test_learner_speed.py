"""The learner's speed options change speed, not results: parity with eager fp32 within stated tolerances.

Tolerances (one update, same batch, same initial weights):
- torch.compile vs eager fp32: loss and gradients equal to rtol 1e-4 (kernel fusion reorders float sums).
- bf16 autocast vs fp32: loss within 1 % and gradient cosine similarity >= 0.99 (bf16 keeps 8 mantissa bits;
  the loss itself is computed in fp32 from the networks' outputs).
- gradient accumulation over micro-batches vs one batch: equal to rtol 1e-5.
"""

import numpy as np
import pytest
import torch

from raylab.config import DQNConfig, ModelConfig
from raylab.errors import ConfigError
from raylab.learner.learner import Prefetcher
from raylab.models import build_q_network
from tests.factories import discrete_spaces, dqn_learner, frame_spaces, replay_batch

VECTOR = discrete_spaces(6, 3)
IMAGE = frame_spaces((4, 84, 84), 6)


def make_learner(spaces=VECTOR, model=None, algo=None, **opts):
    opts.setdefault("fused", False)  # the autograd path these options apply to (the fused one: test_dqn_fused.py)
    return dqn_learner(spaces, model=model, algo=algo, **opts)


def make_batch(spaces=VECTOR, n=64, seed=0, weights=False):
    return replay_batch(spaces, n, seed, weights=weights, first_index=100)


def grads(learner):
    return torch.cat([p.grad.reshape(-1) for p in learner.params])


def params(learner):
    return torch.cat([p.detach().reshape(-1) for p in learner.params])


def one_update(learner, batch):
    metrics = learner.update(batch)
    return metrics, grads(learner).clone(), params(learner).clone()


def test_grad_accumulation_matches_one_batch():
    batch = make_batch(weights=True)
    m1, g1, p1 = one_update(make_learner(), batch)
    m4, g4, p4 = one_update(make_learner(grad_accumulation=4), batch)
    assert m4["loss"] == pytest.approx(m1["loss"], rel=1e-5)
    torch.testing.assert_close(g4, g1, rtol=1e-5, atol=1e-7)
    torch.testing.assert_close(p4, p1, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("loss", ["huber", "quantile"])
def test_bf16_autocast_matches_fp32(loss):
    algo = DQNConfig(loss=loss, num_quantiles=16)
    model = ModelConfig(encoder="nature_cnn", hidden_sizes=(64,), dueling=True)
    batch = make_batch(IMAGE, n=16, weights=True)
    m32, g32, _ = one_update(make_learner(IMAGE, model, algo), batch)
    m16, g16, _ = one_update(make_learner(IMAGE, model, algo, precision="bf16"), batch)
    assert m16["loss"] == pytest.approx(m32["loss"], rel=1e-2)
    assert torch.nn.functional.cosine_similarity(g16, g32, dim=0) >= 0.99


def test_compiled_update_matches_eager():
    batch = make_batch(weights=True)
    eager, compiled = make_learner(), make_learner(compile=True)
    for seed in range(3):  # the second and third steps run the compiled graphs again (no recompiles)
        b = make_batch(seed=seed, weights=True) if seed else batch
        me, ge, pe = one_update(eager, b)
        mc, gc, pc = one_update(compiled, b)
        assert mc["loss"] == pytest.approx(me["loss"], rel=1e-4)
        torch.testing.assert_close(gc, ge, rtol=1e-4, atol=1e-6)
        torch.testing.assert_close(pc, pe, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("fused", [False, True], ids=["autograd", "fused"])
def test_update_many_returns_priorities_by_key_only_for_prioritized_batches(fused):
    learner = make_learner(prefetch=True, fused=fused)
    assert learner.fused == fused
    stats = learner.update_many([make_batch(seed=s, weights=True) for s in range(3)])
    assert stats.updates == 3 and stats.samples == 192
    assert stats.priorities is not None and len(stats.priorities) == 192
    np.testing.assert_array_equal(stats.priorities.keys, np.tile(np.arange(64) + 100, 3))
    assert (stats.priorities.td_errors >= 0).all() and stats.priorities.td_errors.dtype == np.float32
    assert fused or (stats.timings and "batch_wait_s" in stats.timings)  # the fused update draws inline
    uniform = learner.update_many([make_batch(seed=4)])
    assert uniform.priorities is None


def test_prefetch_and_eager_paths_train_identically():
    batches = [make_batch(seed=s) for s in range(4)]
    a, b = make_learner(prefetch=True), make_learner(prefetch=False)
    sa, sb = a.update_many(iter(batches)), b.update_many(batches)
    assert sa.metrics == pytest.approx(sb.metrics)
    torch.testing.assert_close(params(a), params(b))


def test_prefetcher_reraises_errors_and_stops_early():
    def source():
        yield 1
        raise RuntimeError("replay broke")

    with pytest.raises(RuntimeError, match="replay broke"):
        list(Prefetcher(source(), lambda x: x))
    pulled = []
    fetcher = Prefetcher(range(1000), lambda x: pulled.append(x) or x, depth=2)
    assert next(iter(fetcher)) == 0
    fetcher.close()
    assert len(pulled) < 10  # it stopped instead of converting everything


def test_fp16_on_cpu_and_bad_accumulation_are_config_errors():
    with pytest.raises(ConfigError, match=r"use learner\.precision=bf16"):
        make_learner(precision="fp16")
    from raylab.config import LearnerConfig

    with pytest.raises(ConfigError, match=r"must be >= 1 and divide learner\.batch_size"):
        LearnerConfig(batch_size=64, grad_accumulation=3)


def test_batchnorm_cnn_trains_in_train_mode_and_acts_with_running_statistics():
    model = ModelConfig(encoder="nature_cnn", hidden_sizes=(32,), norm="batch")
    learner = make_learner(IMAGE, model)
    bn = [m for m in learner.objective.q_net.modules() if isinstance(m, torch.nn.BatchNorm2d)]
    assert len(bn) == 3 and learner.objective.q_net.training and not learner.objective.target_net.training
    learner.update(make_batch(IMAGE, n=8))
    assert bn[0].num_batches_tracked.item() >= 1
    weights = learner.get_weights()
    assert any("running_mean" in k for k in weights.params)  # workers get the statistics with the weights
    from raylab.algos.dqn import EpsilonGreedyPolicy, EpsilonSchedule

    actor = build_q_network(model, IMAGE)
    policy = EpsilonGreedyPolicy(actor, EpsilonSchedule(np.zeros(2)), 6, seed=0)
    policy.set_weights(weights)
    obs = make_batch(IMAGE, n=2).obs
    single = [policy.act(obs[i : i + 1])[0] for i in range(2)]
    assert list(policy.act(obs)) == single  # eval mode: an action does not depend on the rest of the batch

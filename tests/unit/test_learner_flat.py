"""The Learner's flat buffers, its metric sums and its weights publisher: the same update as torch's own Adam
and clipping, state dicts in torch's format both ways, weights that own their memory, one host sync per call."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from raylab.learner import Learner
from raylab.learner.flat import FlatParams
from raylab.learner.publish import WeightsPublisher
from raylab.learner.step import MetricSums
from raylab.models.encoders import MLPEncoder
from raylab.models.factory import ActorCritic
from raylab.models.normalize import RunningNorm
from tests.factories import actor_critic_learner, discrete_spaces, dqn_learner
from tests.unit.test_learner_objectives import batch, rounds

needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")


def net(seed: int = 0) -> torch.nn.Module:
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(5, 7), torch.nn.ReLU(), torch.nn.Linear(7, 3))


def flat_and_reference(max_norm: float | None = 0.05, lr: float = 1e-2):
    model, ref = net(), net()
    opt = torch.optim.Adam(model.parameters(), lr=lr, eps=1e-5, fused=True)
    ref_opt = torch.optim.Adam(ref.parameters(), lr=lr, eps=1e-5, fused=True)
    return model, FlatParams(list(model.parameters()), opt), ref, ref_opt


@pytest.mark.parametrize("max_norm", [0.05, None])
@pytest.mark.parametrize("kernel", ["fused", "math"])
def test_flat_adam_and_clipping_equal_torch_per_parameter(max_norm, kernel):
    model, flat, ref, ref_opt = flat_and_reference(max_norm)
    x = torch.randn(5, 11, 5)
    for k in range(5):
        flat.zero_grad()
        model(x[k]).square().mean().backward()  # into the flat gradient's views
        norm = flat.clip_(max_norm)
        flat.adam_step() if kernel == "fused" else flat.adam_math()
        ref_opt.zero_grad()
        ref(x[k]).square().mean().backward()
        want = torch.nn.utils.get_total_norm([p.grad for p in ref.parameters()])
        if max_norm is not None:
            torch.nn.utils.clip_grad_norm_(ref.parameters(), max_norm)
        ref_opt.step()
        torch.testing.assert_close(norm, want, rtol=1e-6, atol=0)
        for got, exp in zip(model.parameters(), ref.parameters(), strict=True):
            torch.testing.assert_close(got, exp, rtol=1e-5, atol=1e-7)
    assert all(p.data_ptr() - flat.flat.data_ptr() < flat.flat.numel() * 4 for p in model.parameters())


def test_a_flat_state_dict_is_torchs_and_loads_both_ways():
    model, flat, ref, ref_opt = flat_and_reference()
    for _ in range(3):
        flat.zero_grad()
        model(torch.randn(4, 5)).sum().backward()
        flat.adam_step()
    flat.sync()
    state = flat.optimizer.state_dict()
    assert [float(s["step"]) for s in state["state"].values()] == [3.0] * 4
    ref_opt.load_state_dict(copy.deepcopy(state))  # a plain torch Adam takes it
    for p, s in zip(ref.parameters(), ref_opt.state.values(), strict=True):
        assert s["exp_avg"].shape == p.shape
    _, other_flat, _, _ = flat_and_reference()
    other_flat.optimizer.load_state_dict(copy.deepcopy(state))  # and back into flat buffers
    other_flat.bind_optimizer_state()
    torch.testing.assert_close(other_flat.exp_avg, flat.exp_avg, rtol=0, atol=0)
    assert float(other_flat.step) == 3.0


def test_metric_sums_read_only_what_the_call_added_in_one_sync():
    sums = MetricSums(torch.device("cpu"))
    sums.add({"loss": torch.tensor(1.0), "kl": torch.tensor(0.5)})
    sums.add({"loss": torch.tensor(2.0), "kl": torch.tensor(0.25)}, weight=0.5)
    sums.add({"grad_norm": torch.tensor(3.0, dtype=torch.bfloat16)})
    assert sums.read() == pytest.approx({"loss": 2.0, "kl": 0.625, "grad_norm": 3.0})
    sums.zero()
    sums.add({"loss": torch.tensor(4.0), "kl": torch.tensor(1.0)})
    assert sums.read() == {"loss": 4.0, "kl": 1.0}  # grad_norm was not added since zero()


def test_published_weights_own_their_memory_and_carry_buffers():
    model = ActorCritic(MLPEncoder((6,), (8,)), 4, obs_norm=RunningNorm((6,)))
    opt = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=1e-2)
    flat = FlatParams([p for p in model.parameters() if p.requires_grad], opt)
    publisher = WeightsPublisher(model, flat)
    assert publisher.span.stop - publisher.span.start == flat.size  # the policy's parameters: one slice
    first = publisher.weights(1)
    assert set(first.params) == set(model.state_dict())
    for name, tensor in model.state_dict().items():
        np.testing.assert_array_equal(first.params[name], tensor.numpy())
    flat.flat.add_(1.0)
    second = publisher.weights(2)
    assert not np.shares_memory(first.params["policy.weight"], second.params["policy.weight"])
    np.testing.assert_array_equal(second.params["policy.weight"], first.params["policy.weight"] + 1.0)


def small_learner(algo: str, device: str, **opts) -> Learner:
    """A DQN learner over an MLP of 8 units, or an APPO one that keeps every chunk (test_learner_objectives'
    spaces: 6 observations, 4 actions)."""
    if algo == "dqn":
        return dqn_learner(discrete_spaces(6, 4), hidden=(8,), device=device, **opts)
    return actor_critic_learner("appo", (6,), 4, hidden=(8,), settings={"max_policy_lag": 100}, device=device, **opts)


@pytest.mark.parametrize("algo", ["dqn", "appo"])
def test_publish_every_counts_versions(algo):
    """DQN publishes every publish_every optimizer steps, APPO every publish_every (learner.publish_every_calls)
    calls; a call reports whether it published."""
    if algo == "dqn":
        calls, every, steps = [[batch(k) for k in range(3)] for _ in range(4)], 4, 3
    else:
        calls, every, steps = rounds(4), 2, 1
    learner = small_learner(algo, "cpu", publish_every=every, fused=False)
    published = [learner.update_many(call).published for call in calls]
    versions = [steps * (k + 1) for k in range(4)]
    assert published == [v // every > (v - steps) // every for v in versions]
    assert any(published) and not all(published)


@needs_cuda
@pytest.mark.gpu
@pytest.mark.parametrize("algo", ["dqn", "appo"])
def test_no_host_sync_inside_a_call_but_the_one_at_its_end(algo):
    """The steps of a call run without one device-to-host sync (CUDA's sync debug mode raises on any); the
    metrics are read once, after the last step."""
    data = [batch(k) for k in range(3)] if algo == "dqn" else rounds(1)[0]
    learner = small_learner(algo, "cuda", prefetch=False)
    learner.update_many(data)  # warm-up: cuDNN and the allocator settle
    steps = learner._autograd.step

    def strict(batch):
        torch.cuda.set_sync_debug_mode("error")
        try:
            return steps(batch)
        finally:
            torch.cuda.set_sync_debug_mode("default")

    learner._autograd.step = strict  # type: ignore[method-assign]
    assert learner.update_many(data).updates > 0


def test_buffers_the_step_writes_are_marked_static_for_cuda_graphs_and_stay_so_after_a_load():
    """CUDA graphs capture the compiled clip and Adam step only when the buffers it writes in place are static
    inputs (an H200 run logged "skipping cudagraphs due to mutated inputs" without this); a checkpoint's load
    makes new moments, which must be marked as well."""

    def marked(flat: FlatParams) -> list[bool]:
        buffers = (flat.flat, flat.grad, flat.exp_avg, flat.exp_avg_sq, flat.step, flat.lr)
        return [getattr(t, "_dynamo_static_input_type", None) is not None for t in buffers]

    _, flat, _, _ = flat_and_reference()
    assert not any(marked(flat))
    flat.mark_static()
    assert all(marked(flat))
    flat.optimizer.load_state_dict(copy.deepcopy(flat.optimizer.state_dict()))
    flat.bind_optimizer_state()
    assert all(marked(flat))


def test_a_compiled_clip_and_adam_on_static_buffers_equals_eager_across_a_load():
    """The compiled step reads and writes the marked buffers in place (traced here with aot_eager: Dynamo and
    AOTAutograd as on a GPU, without Inductor's code generation) and gives eager's parameters and moments,
    also after a checkpoint's load gave it new moments."""
    _, flat, ref, _ = flat_and_reference(max_norm=0.05)
    ref_flat = FlatParams(list(ref.parameters()), torch.optim.Adam(ref.parameters(), lr=1e-2, eps=1e-5, fused=True))
    flat.mark_static()

    def clip_and_adam(f: FlatParams) -> torch.Tensor:
        norm = f.clip_(0.05)
        f.adam_math()
        return norm

    compiled = torch.compile(clip_and_adam, backend="aot_eager", dynamic=False)
    gen = torch.Generator().manual_seed(0)
    for step in range(6):
        grad = torch.randn(flat.size, generator=gen)
        flat.grad.copy_(grad)
        ref_flat.grad.copy_(grad)
        torch.testing.assert_close(compiled(flat), clip_and_adam(ref_flat))
        torch.testing.assert_close(flat.flat, ref_flat.flat)
        torch.testing.assert_close(flat.exp_avg_sq, ref_flat.exp_avg_sq)
        if step == 2:  # a checkpoint's load: new moment buffers, re-marked
            for f in (flat, ref_flat):
                f.sync()
                f.optimizer.load_state_dict(copy.deepcopy(f.optimizer.state_dict()))
                f.bind_optimizer_state()
    assert float(flat.step) == 6.0

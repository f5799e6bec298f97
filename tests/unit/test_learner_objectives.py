"""One Learner for every algorithm: PPO and APPO through the same speed options as DQN, CPU-only state,
CUDA-graph-safe results, and learner options refused where they do not apply.

Parity tolerances (PPO and APPO, 2 calls of 2 epochs x 4 minibatches = 16 optimizer steps on a fixed
problem, against eager fp32 without prefetch; the deviations measured on this machine in brackets):
- prefetch (DQN's replay batches): exactly equal (the same operations in the same order; only the thread
  differs) [0]. PPO's and APPO's minibatches are gathered on the device, inline, never in a thread.
- torch.compile: parameters to rtol 1e-4, atol 1e-6, metrics to rel 1e-4, abs 1e-6 (Inductor fuses kernels
  and reorders float sums, nothing more) [parameters 3e-8 abs; metrics <= 3e-6 rel, explained_variance,
  which is near 0, 1.3e-5 rel = 7e-8 abs].
- grad_accumulation=3 (unequal micro-batches): parameters to rtol 1e-5, atol 1e-7 (sums in another order)
  [3e-8 abs].
- bf16 autocast, alone or with compile and prefetch: bf16 keeps 8 mantissa bits (~3 significant digits) in
  the networks; the losses are computed in fp32 from their outputs. After 16 Adam steps the parameters
  cannot match elementwise (Adam divides each gradient by its own running scale, so bf16 noise in a tiny
  gradient becomes a full-size step), so the test bounds the direction of the whole update: cosine
  similarity of (params - initial) with fp32's >= 0.99 [0.997]. Metrics: loss, value_loss and grad_norm
  within 1 % [3e-4 rel], entropy within 0.1 % [3e-7 rel], rho_mean within 0.1 % [1e-6 rel]; quantities near
  zero by absolute error: policy_loss and approx_kl 1e-3 [3e-6], explained_variance 1e-2 [4e-5], and
  clip_fraction 0.05 (a share of samples: one sample crossing the clip boundary moves it by 1/64) [0].
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from raylab.config import (
    A3CConfig,
    APPOConfig,
    DQNConfig,
    LearnerConfig,
    PPOConfig,
    RunConfig,
    TopologyConfig,
)
from raylab.config.applicability import check_applicable
from raylab.errors import ConfigError
from raylab.learner import Learner, LossOutput
from raylab.learner.prefetch import Prefetcher, StreamPrefetcher, prefetcher_class
from raylab.types import Batch, Chunk
from tests.conftest import FAKE, make_config
from tests.factories import actor_critic_learner, discrete_spaces, dqn_learner, replay_batch, rollout_rounds

OBS, ACTIONS, STEPS, ENVS = 6, 4, 16, 8
VECTOR = discrete_spaces(OBS, ACTIONS)
ALGOS = ("dqn", "qr-dqn", "ppo", "appo")

needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")


# -- a small fixed problem -----------------------------------------------------------------------------------
def rounds(calls: int = 2) -> list[list[Chunk]]:
    """Two workers' chunks a call, of the call's own policy version; behaviour log-probabilities near uniform
    (APPO reads them)."""
    return rollout_rounds(calls, lag=0, obs_shape=(OBS,), steps=STEPS, envs=ENVS, actions=ACTIONS, spread=0.1)


def batch(seed: int, n: int = 32) -> Batch:
    return replay_batch(VECTOR, n, seed, weights=True, discount=0.9)


def make(algo: str, device: str = "cpu", **opts) -> Learner:
    opts.setdefault("prefetch", False)
    # the autograd path these options apply to (the fused one: test_dqn_fused.py, test_ppo_fused.py)
    opts.setdefault("fused", False)
    common = {"lr": 1e-3, "adam_eps": 1e-5, "max_grad_norm": 0.5, "device": device, **opts}
    if algo in ("dqn", "qr-dqn"):
        cfg = DQNConfig(loss="quantile", num_quantiles=8) if algo == "qr-dqn" else DQNConfig()
        return dqn_learner(VECTOR, hidden=(32,), algo=cfg, **common)
    settings = {"epochs": 2, "minibatches": 4, **({"max_policy_lag": 4} if algo == "appo" else {})}
    return actor_critic_learner(algo, (OBS,), ACTIONS, hidden=(64, 64), settings=settings, **common)


def inputs(algo: str, calls: int = 2) -> list:
    """What each call trains on: a round of chunks (PPO/APPO) or 3 replay batches (DQN)."""
    if algo in ("ppo", "appo"):
        return rounds(calls)
    return [[batch(3 * c + k) for k in range(3)] for c in range(calls)]


def params(learner: Learner) -> torch.Tensor:
    return torch.cat([p.detach().reshape(-1).float().cpu() for p in learner.params])


def train(algo: str, **opts):
    learner = make(algo, **opts)
    initial = params(learner).clone()
    stats = [learner.update_many(data) for data in inputs(algo)]
    return learner, initial, stats


# -- (a) parity of the speed options with eager fp32, for PPO and APPO ---------------------------------------
BF16_REL = {"loss": 1e-2, "value_loss": 1e-2, "grad_norm": 1e-2, "entropy": 1e-3, "rho_mean": 1e-3}
BF16_ABS = {"policy_loss": 1e-3, "approx_kl": 1e-3, "explained_variance": 1e-2, "clip_fraction": 0.05}


@pytest.mark.parametrize("algo", ["dqn", "qr-dqn"])
def test_prefetch_trains_exactly_like_no_prefetch(algo):
    ref, _, ref_stats = train(algo)
    pre = make(algo, prefetch=True)
    initial = params(pre).clone()
    stats = [pre.update_many(data) for data in inputs(algo)]
    torch.testing.assert_close(params(pre), params(ref), rtol=0, atol=0)
    assert not torch.equal(params(pre), initial)
    for got, want in zip(stats, ref_stats, strict=True):
        assert got.metrics == want.metrics
        assert (got.updates, got.samples, got.version) == (3, 96, want.version)
        assert got.timings is not None and "batch_wait_s" in got.timings  # the prefetcher ran


@pytest.mark.parametrize("algo", ["ppo", "appo"])
def test_cpu_learners_gather_ppo_minibatches_inline(algo):
    """learner.prefetch on a CPU learner starts no thread for PPO's and APPO's minibatches (gathered from
    tensors in memory, faster than two threads hand them over): the same steps, no batch_wait."""
    ref, _, ref_stats = train(algo)
    inline, _, stats = train(algo, prefetch=True)
    torch.testing.assert_close(params(inline), params(ref), rtol=0, atol=0)
    for got, want in zip(stats, ref_stats, strict=True):
        assert got.metrics == want.metrics
        assert got.timings is None or "batch_wait_s" not in got.timings


@pytest.mark.parametrize("algo", ["ppo", "appo"])
def test_grad_accumulation_matches_whole_minibatches(algo):
    ref, _, ref_stats = train(algo)
    acc, _, stats = train(algo, grad_accumulation=3)  # 64-sample minibatches: micro-batches of 22, 22, 20
    torch.testing.assert_close(params(acc), params(ref), rtol=1e-5, atol=1e-7)
    for got, want in zip(stats, ref_stats, strict=True):
        assert got.metrics == pytest.approx(want.metrics, rel=1e-5, abs=1e-7)


@pytest.mark.parametrize("algo", [pytest.param("ppo", marks=pytest.mark.slow), "appo"])  # 8 s each
def test_compile_matches_eager(algo):
    ref, _, ref_stats = train(algo)
    compiled, _, stats = train(algo, compile=True)
    torch.testing.assert_close(params(compiled), params(ref), rtol=1e-4, atol=1e-6)
    for got, want in zip(stats, ref_stats, strict=True):
        assert got.metrics == pytest.approx(want.metrics, rel=1e-4, abs=1e-6)


@pytest.mark.parametrize("options", [{"precision": "bf16"}, {"precision": "bf16", "compile": True, "prefetch": True}])
@pytest.mark.parametrize("algo", ["ppo", "appo"])
def test_bf16_alone_and_with_compile_and_prefetch_follows_fp32(algo, options):
    ref, initial, ref_stats = train(algo)
    low, initial_low, stats = train(algo, **options)
    torch.testing.assert_close(initial_low, initial, rtol=0, atol=0)
    cosine = torch.nn.functional.cosine_similarity(params(low) - initial, params(ref) - initial, dim=0)
    assert cosine >= 0.99, cosine
    for got, want in zip(stats, ref_stats, strict=True):
        assert set(got.metrics) == set(want.metrics)
        for name, value in want.metrics.items():
            if name in BF16_ABS:
                assert got.metrics[name] == pytest.approx(value, abs=BF16_ABS[name]), name
            else:
                assert got.metrics[name] == pytest.approx(value, rel=BF16_REL.get(name, 0.0), abs=1e-12), name


def test_ppo_and_appo_report_their_metrics_and_versions():
    ppo = make("ppo")
    stats = [ppo.update_many(data) for data in rounds(2)]
    assert [s.version for s in stats] == [1, 2] and all(s.published and s.updates == 8 for s in stats)
    assert set(stats[0].metrics) == {
        "loss", "policy_loss", "value_loss", "entropy", "approx_kl", "clip_fraction", "grad_norm",
        "explained_variance",
    }  # fmt: skip
    appo = make("appo")
    stats = [appo.update_many(data) for data in rounds(2)]
    assert set(stats[1].metrics) == {
        "loss", "policy_loss", "value_loss", "entropy", "approx_kl", "clip_fraction", "grad_norm",
        "dropped_chunks", "lag_mean", "rho_mean",
    }  # fmt: skip
    assert stats[1].metrics["lag_mean"] == 0.0 and stats[1].samples == 2 * STEPS * ENVS * 2


# -- prefetch: which path a device takes -------------------------------------------------------------------
def test_prefetch_path_follows_the_device():
    assert prefetcher_class(torch.device("cpu")) is Prefetcher
    assert prefetcher_class(torch.device("cuda")) is StreamPrefetcher  # side stream + pinned buffers
    learner = make("dqn", prefetch=True, fused=False)
    assert learner.io.tensors({"a": np.ones(3, np.float32)})["a"].device.type == "cpu"
    stats = learner.update_many(iter([batch(0), batch(1)]))
    assert stats.timings is not None and "batch_wait_s" in stats.timings
    fused = make("dqn", prefetch=True, fused="auto")  # the fused update draws inline: steps shorter than hand-offs
    assert fused.fused
    stats = fused.update_many(iter([batch(0), batch(1)]))
    assert stats.updates == 2 and "batch_wait_s" not in (stats.timings or {})


# -- learner.fused: the Learner's own options that keep autograd, the same for every algorithm ---------------
LEARNER_UNFUSED = {
    "grad_accumulation": ({"grad_accumulation": 2}, "grad_accumulation"),
    "compile": ({"compile": True}, "compile"),
    "bf16": ({"precision": "bf16"}, "fp32"),
}


@pytest.mark.parametrize("opts, reason", list(LEARNER_UNFUSED.values()), ids=list(LEARNER_UNFUSED))
@pytest.mark.parametrize("algo", ["dqn", "ppo", "appo"])
def test_learner_options_without_a_fused_path_fall_back_under_auto_and_are_refused_under_true(algo, opts, reason):
    """Each algorithm's model-level cases: test_dqn_fused.py, test_ppo_fused.py."""
    learner = make(algo, fused="auto", **opts)
    assert not learner.fused and reason in learner.fused_reason
    assert learner.update_many(inputs(algo, 1)[0]).updates > 0  # autograd trains it
    with pytest.raises(ConfigError, match=r"learner.fused=true, but .*: set learner.fused=auto or false"):
        make(algo, fused=True, **opts)


# -- (b) learner state and published weights are CPU-only --------------------------------------------------
def assert_all_on_cpu(value, path="state"):
    if isinstance(value, torch.Tensor):
        assert value.device.type == "cpu", f"{path} is on {value.device}"
    elif isinstance(value, dict):
        for k, v in value.items():
            assert_all_on_cpu(v, f"{path}[{k!r}]")
    elif isinstance(value, list | tuple):
        for i, v in enumerate(value):
            assert_all_on_cpu(v, f"{path}[{i}]")
    else:
        assert not dataclasses.is_dataclass(value), path


def check_cpu_state(algo: str, device: str, **opts) -> None:
    learner = make(algo, device=device, **opts)
    for data in inputs(algo):
        learner.update_many(data)
    state = learner.state_dict()
    assert state["optimizer"]["state"], "no optimizer state to check"
    assert_all_on_cpu(state)
    weights = learner.get_weights()
    assert weights.params and all(isinstance(a, np.ndarray) for a in weights.params.values())
    # a fresh CPU learner resumes from it and takes the same next step
    restored = make(algo)
    restored.load_state_dict(state)
    assert restored.version == learner.version
    for name, array in weights.params.items():
        np.testing.assert_array_equal(array, restored.get_weights().params[name])


@pytest.mark.parametrize("algo", ALGOS)
def test_state_dict_and_weights_are_on_the_cpu(algo):
    check_cpu_state(algo, "cpu")


@pytest.mark.gpu
@needs_cuda
@pytest.mark.parametrize("algo", ALGOS)
def test_state_dict_and_weights_of_a_cuda_learner_are_on_the_cpu(algo):
    check_cpu_state(algo, "cuda")
    check_cpu_state(algo, "cuda", precision="fp16")  # the GradScaler's state too


@pytest.mark.gpu
@needs_cuda
@pytest.mark.parametrize("algo", ALGOS)
def test_cuda_side_stream_prefetch_equals_no_prefetch(algo):
    ref, _, ref_stats = train(algo, device="cuda")
    pre, _, stats = train(algo, device="cuda", prefetch=True)
    torch.testing.assert_close(params(pre), params(ref), rtol=0, atol=0)
    for got, want in zip(stats, ref_stats, strict=True):
        assert got.metrics == want.metrics
        if want.priorities is not None:
            assert got.priorities is not None
            np.testing.assert_array_equal(got.priorities.td_errors, want.priorities.td_errors)


@pytest.mark.gpu
@needs_cuda
@pytest.mark.parametrize("algo", ALGOS)
def test_cuda_graphs_reduce_overhead_matches_eager(algo):
    ref, _, ref_stats = train(algo, device="cuda")
    graphs, _, stats = train(algo, device="cuda", compile=True, compile_mode="reduce-overhead", prefetch=True)
    torch.testing.assert_close(params(graphs), params(ref), rtol=1e-4, atol=1e-5)
    for got, want in zip(stats, ref_stats, strict=True):
        assert got.metrics == pytest.approx(want.metrics, rel=1e-3, abs=1e-5)
        if want.priorities is not None:
            assert got.priorities is not None
            np.testing.assert_allclose(got.priorities.td_errors, want.priorities.td_errors, rtol=1e-3, atol=1e-5)


# -- (c) nothing a compiled call returns is kept past the next call ----------------------------------------
class _IntoStatic(torch.autograd.Function):
    """Copies ``value`` into ``buffer`` and returns ``buffer`` itself, with ``value``'s gradient."""

    @staticmethod
    def forward(ctx, value, buffer):
        buffer.copy_(value)
        ctx.mark_dirty(buffer)
        return buffer

    @staticmethod
    def backward(ctx, grad):
        return grad, None


def like_cuda_graphs(fn):
    """What CUDA graphs (compile_mode=reduce-overhead) do to a compiled function's outputs, on the CPU: every
    call writes them into the same static tensors, so anything a caller keeps from call k without copying it
    (or adding it into a tensor of its own) changes on call k + 1."""
    static: dict = {}

    def into(name, value):
        if value is None:
            return None
        buffer = static.get((name, value.shape))
        if buffer is None:
            buffer = static[(name, value.shape)] = torch.empty_like(value.detach())
        if value.requires_grad:
            return _IntoStatic.apply(value, buffer.detach())
        return buffer.copy_(value)

    def wrapped(*args):
        out = fn(*args)
        if isinstance(out, LossOutput):
            metrics = {k: into(k, v) for k, v in out.metrics.items()}
            return LossOutput(into("loss", out.loss), metrics, into("td_errors", out.td_errors))
        return into("out", out)

    return wrapped


@pytest.mark.parametrize("algo", ALGOS)
@pytest.mark.parametrize("grad_accumulation", [1, 2])
def test_results_do_not_alias_what_a_later_update_overwrites(algo, grad_accumulation):
    eager = make(algo, grad_accumulation=grad_accumulation)
    graphs = make(algo, grad_accumulation=grad_accumulation)
    step = graphs._autograd  # the hooks torch.compile replaces
    step._loss, step._rows_loss = like_cuda_graphs(step._loss), like_cuda_graphs(step._rows_loss)
    step._apply = like_cuda_graphs(step._apply)
    first_data, second_data = inputs(algo)
    first = graphs.update_many(first_data)
    kept = (dict(first.metrics), None if first.priorities is None else first.priorities.td_errors.copy())
    assert first.metrics == pytest.approx(eager.update_many(first_data).metrics, rel=1e-6)
    second, second_eager = graphs.update_many(second_data), eager.update_many(second_data)
    assert second.metrics == pytest.approx(second_eager.metrics, rel=1e-6)
    if algo in ("dqn", "qr-dqn"):  # per-sample TD errors of every step, not the last step's repeated
        assert first.priorities is not None and second.priorities is not None
        assert second_eager.priorities is not None
        np.testing.assert_allclose(second.priorities.td_errors, second_eager.priorities.td_errors, rtol=1e-6)
        np.testing.assert_array_equal(first.priorities.td_errors, kept[1])
    assert first.metrics == kept[0]  # call 1's results did not change with call 2


# -- (d) options that do not apply are refused in one line -------------------------------------------------
@pytest.mark.parametrize(
    "option", [{"precision": "bf16"}, {"compile": True}, {"grad_accumulation": 2}, {"prefetch": False}]
)
def test_learner_speed_options_with_a3c_are_refused_in_one_line(option):
    learner = LearnerConfig(**option)
    with pytest.raises(ConfigError, match=r"applies to algo=dqn/ppo/appo .*, not algo=a3c: remove it") as err:
        check_applicable(on(A3CConfig(), "a3c", learner))
    assert "\n" not in str(err.value) and f"learner.{next(iter(option))}=" in str(err.value)
    for algo, topology in ((DQNConfig(), "apex_dqn"), (PPOConfig(), "ppo"), (APPOConfig(), "appo")):
        check_applicable(on(algo, topology, learner))  # they all apply there
    check_applicable(on(A3CConfig(), "a3c", LearnerConfig()))  # defaults are fine


def on(algo, topology: str, learner: LearnerConfig) -> RunConfig:
    return RunConfig(algo=algo, topology=TopologyConfig(name=topology), learner=learner)


def test_refusal_comes_from_the_config_and_the_builder(tmp_path):
    with pytest.raises(ConfigError, match=r"learner\.precision=bf16 applies to algo=dqn/ppo/appo .*, not algo=a3c"):
        make_config(tmp_path, *FAKE, "algo=a3c", "topology=a3c", "learner.precision=bf16", "learner.compile=true")
    cfg = make_config(tmp_path, *FAKE, "algo=a3c", "topology=a3c")
    bad = dataclasses.replace(cfg, learner=LearnerConfig(precision="bf16"))
    from raylab.builders import build_learner
    from raylab.envs import env_spaces

    with pytest.raises(ConfigError, match=r"learner\.precision=bf16 applies to .*, not algo=a3c"):
        build_learner(bad, env_spaces(cfg.env))
    with pytest.raises(ConfigError, match=r"add learner\.compile=true or remove learner\.compile_mode"):
        make_config(tmp_path, *FAKE, "learner.compile_mode=reduce-overhead")


@pytest.mark.parametrize("algo", ["dqn", "ppo", "appo"])
def test_build_learner_passes_every_option(tmp_path, algo):
    from raylab.builders import build_learner
    from raylab.envs import env_spaces

    topology = {"dqn": "apex_dqn", "ppo": "ppo", "appo": "appo"}[algo]
    cfg = make_config(
        tmp_path, *FAKE, f"algo={algo}", f"topology={topology}", "learner.precision=bf16", "learner.compile=true",
        "learner.compile_mode=max-autotune-no-cudagraphs", "learner.grad_accumulation=4", "learner.prefetch=false",
        "learner.tf32=false", "learner.max_grad_norm=0.5", "learner.lr=0.01", "learner.device=cpu",
    )  # fmt: skip
    learner = build_learner(cfg, env_spaces(cfg.env))
    assert (learner.precision, learner.grad_accumulation, learner.prefetch) == ("bf16", 4, False)
    assert learner._autograd._loss is not learner.objective.loss  # compiled
    assert learner.max_grad_norm == 0.5 and learner.optimizer.param_groups[0]["lr"] == 0.01
    assert learner.device.type == "cpu"

"""learner.fused for PPO and APPO: the clipped objective's update written out in NumPy trains exactly as torch's
autograd path does.

Two learners start from the same weights and take the same rounds, one through autograd and torch's fused Adam,
one through raylab/algos/ppo/fused.py. After every call their metrics, parameters and Adam moments agree to
float32 rounding (the two paths order some float sums differently), for PPO and APPO, discrete and Gaussian
policies, and each option that changes the loss or its gradient. Checkpoints are interchangeable both ways, and
a model or option the fused step does not implement falls back to autograd under auto and is refused in one
line under true.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from raylab.algos.ppo.appo import APPO
from raylab.algos.ppo.objective import PPO
from raylab.config import APPOConfig, PPOConfig
from raylab.errors import ConfigError
from raylab.learner import Learner
from raylab.models.distributions import DiagGaussian
from raylab.models.encoders import MLPEncoder, NatureCNN
from raylab.models.factory import ActorCritic
from raylab.models.normalize import RunningNorm
from raylab.types import Chunk

OBS, ACTIONS, DIM, STEPS, ENVS = 5, 3, 2, 16, 8
TOL = {"rtol": 1e-4, "atol": 2e-6}
METRICS = {"loss", "policy_loss", "value_loss", "entropy", "approx_kl", "clip_fraction", "grad_norm"}


def chunk(seed: int, version: int, gaussian: bool, spread: float, outliers: bool = False) -> Chunk:
    """A worker's chunk of random steps, some episodes terminated or truncated; behaviour log-probabilities
    ``spread`` away from the policy's (so that ratios leave the clip range); with ``outliers``, a few
    observations far enough out that model.normalize_obs clips them."""
    rng = np.random.default_rng(seed)
    obs = rng.normal(0.5, 2, (STEPS + 1, ENVS, OBS)).astype(np.float32)
    if outliers:
        obs[rng.integers(0, STEPS), rng.integers(0, ENVS), 0] = 400.0  # ~12 standard deviations out
    terminated = rng.random((STEPS, ENVS)) < 0.05
    truncated = (rng.random((STEPS, ENVS)) < 0.05) & ~terminated
    final_index = np.argwhere(truncated)
    if gaussian:
        actions = rng.normal(0, 1, (STEPS, ENVS, DIM)).astype(np.float32)
        base = -DIM * (0.5 + 0.5 * np.log(2 * np.pi))
    else:
        actions = rng.integers(0, ACTIONS, (STEPS, ENVS))
        base = np.log(1 / ACTIONS)
    return Chunk(
        obs=obs, actions=actions,
        rewards=rng.normal(0, 3, (STEPS, ENVS)).astype(np.float32), terminated=terminated, truncated=truncated,
        final_obs=rng.normal(0.5, 2, (len(final_index), OBS)).astype(np.float32), final_index=final_index,
        policy_version=version, worker_id=0, seq=seed,
        log_probs=(base + spread * rng.standard_normal((STEPS, ENVS))).astype(np.float32),
    )  # fmt: skip


def rounds(calls: int, gaussian: bool = False, spread: float = 0.3, outliers: bool = False) -> list[list[Chunk]]:
    """Two workers' chunks per call; APPO's are one version behind (in max_policy_lag)."""
    return [[chunk(2 * c + k, max(c - 1, 0), gaussian, spread, outliers) for k in range(2)] for c in range(calls)]


def make(
    algo: str = "ppo",
    hidden: tuple[int, ...] = (32, 32),
    gaussian: bool = False,
    norm: bool = False,
    cfg: dict | None = None,
    model: torch.nn.Module | None = None,
    **opts,
) -> Learner:
    torch.manual_seed(0)
    dist = DiagGaussian(DIM) if gaussian else ACTIONS
    if model is None:
        model = ActorCritic(MLPEncoder((OBS,), hidden), dist, obs_norm=RunningNorm((OBS,)) if norm else None)
    settings = {"epochs": 2, "minibatches": 4, **(cfg or {})}
    objective = PPO(model, PPOConfig(**settings)) if algo == "ppo" else APPO(model, APPOConfig(**settings))
    opts.setdefault("max_grad_norm", 0.5)
    opts.setdefault("lr", 3e-2)  # large steps: within a call ratios leave the clip range
    return Learner(objective, adam_eps=1e-5, device="cpu", prefetch=False, **opts)


def state(learner: Learner) -> dict[str, torch.Tensor]:
    """The model's parameters and buffers and Adam's moments and steps, flat by name."""
    out = {f"model.{k}": v.clone() for k, v in learner.objective.modules()["model"].state_dict().items()}
    for i, s in learner.optimizer.state_dict()["state"].items():
        out.update({f"adam.{i}.{k}": torch.as_tensor(v).clone() for k, v in s.items()})
    return out


def assert_same(fused: Learner, ref: Learner) -> None:
    got, want = state(fused), state(ref)
    assert got.keys() == want.keys()
    for name in want:
        torch.testing.assert_close(got[name], want[name], **TOL, msg=name)


def train_both(fused: Learner, ref: Learner, calls: list[list[Chunk]]) -> dict[str, list[float]]:
    """Both learners through the same calls, compared after each; the fused learner's metrics per call."""
    assert fused.fused and not ref.fused
    seen: dict[str, list[float]] = {}
    for data in calls:
        got, want = fused.update_many(data), ref.update_many(data)
        assert (got.updates, got.samples, got.version, got.published) == (
            want.updates, want.samples, want.version, want.published,
        )  # fmt: skip
        assert got.metrics.keys() == want.metrics.keys() and got.metrics.keys() >= METRICS
        for name, value in want.metrics.items():
            assert got.metrics[name] == pytest.approx(value, rel=1e-4, abs=2e-6), name
            seen.setdefault(name, []).append(got.metrics[name])
        assert_same(fused, ref)
    return seen


CASES = {
    "defaults": {},
    "entropy_bonus": {"cfg": {"entropy_coef": 0.05}},
    "tight_value_clip": {"cfg": {"value_clip": 0.01}},
    "no_value_clip": {"cfg": {"value_clip": None}},
    "raw_advantages": {"cfg": {"normalize_advantages": False}},
    "clipping_active": {"max_grad_norm": 0.05},
    "no_clipping": {"max_grad_norm": None},
    "obs_norm": {"norm": True},
}


@pytest.mark.parametrize("case", list(CASES.values()), ids=list(CASES))
@pytest.mark.parametrize("gaussian", [False, True], ids=["categorical", "gaussian"])
def test_fused_ppo_trains_like_autograd(case, gaussian):
    fused, ref = make(gaussian=gaussian, fused=True, **case), make(gaussian=gaussian, fused=False, **case)
    seen = train_both(fused, ref, rounds(4, gaussian, outliers="norm" in case))
    assert max(seen["clip_fraction"]) > 0  # the clipped branch of the surrogate was taken


APPO_CASES = {
    "defaults": {},
    "entropy_bonus": {"cfg": {"entropy_coef": 0.05}},
    "obs_norm": {"norm": True},
}


@pytest.mark.parametrize("case", list(APPO_CASES.values()), ids=list(APPO_CASES))
@pytest.mark.parametrize("gaussian", [False, True], ids=["categorical", "gaussian"])
def test_fused_appo_trains_like_autograd(case, gaussian):
    fused, ref = (
        make("appo", gaussian=gaussian, fused=True, **case),
        make("appo", gaussian=gaussian, fused=False, **case),
    )
    seen = train_both(fused, ref, rounds(4, gaussian, outliers="norm" in case))
    assert max(seen["clip_fraction"]) > 0
    assert {"rho_mean", "lag_mean", "dropped_chunks"} <= seen.keys()  # the plan's own metrics pass through


def test_the_value_clip_branch_is_exercised():
    """With a tight value clip some samples take the clipped error (the two paths then differ unless the
    fused step routes the gradient as torch.max and clamp do); without it the value loss is the plain one."""
    ref = make(cfg={"value_clip": 0.01}, fused=False)
    plain = make(cfg={"value_clip": None}, fused=False)
    data = rounds(2)
    for call in data:
        ref.update_many(call)
        plain.update_many(call)
    assert not torch.allclose(state(ref)["model.value.weight"], state(plain)["model.value.weight"])


@pytest.mark.parametrize("hidden", [(), (16,), (8, 16, 8)], ids=["linear", "one_hidden", "three_hidden"])
def test_any_depth_of_mlp(hidden):
    fused, ref = make(hidden=hidden, fused=True), make(hidden=hidden, fused=False)
    train_both(fused, ref, rounds(3))


def test_a_changed_learning_rate_is_followed():
    fused, ref = make(fused=True), make(fused=False)
    for learner in (fused, ref):
        learner.optimizer.param_groups[0]["lr"] = 1e-4
    train_both(fused, ref, rounds(2))


def test_published_weights_are_the_trained_parameters():
    learner = make(fused=True)
    before = learner.get_weights()
    stats = learner.update_many(rounds(1)[0])
    after = learner.get_weights()
    assert stats.published and after.version == before.version + 1
    model = learner.objective.modules()["model"]
    for name, value in model.state_dict().items():
        np.testing.assert_array_equal(after.params[name], value.numpy())
        assert not np.shares_memory(after.params[name], value.numpy())  # a copy, not the live buffer
    assert any(not np.array_equal(after.params[k], before.params[k]) for k in after.params)


@pytest.mark.parametrize("direction", ["fused_to_autograd", "autograd_to_fused"])
def test_checkpoints_are_interchangeable(direction):
    source = make(fused=direction == "fused_to_autograd")
    source.update_many(rounds(1)[0])
    checkpoint = source.state_dict()
    fused, ref = make(fused=True), make(fused=False)
    fused.load_state_dict(checkpoint)
    ref.load_state_dict(checkpoint)
    assert_same(fused, ref)
    train_both(fused, ref, rounds(3)[1:])


def test_a_loaded_learner_does_not_share_adam_state_with_another():
    checkpoint = make(fused=True)
    checkpoint.update_many(rounds(1)[0])
    state_dict = checkpoint.state_dict()
    a, b = make(fused=True), make(fused=True)
    a.load_state_dict(state_dict)
    b.load_state_dict(state_dict)
    a.update_many(rounds(2)[1])
    assert not torch.equal(state(a)["adam.0.exp_avg"], state(b)["adam.0.exp_avg"])


UNFUSED = {
    "cnn": ({"model": ActorCritic(NatureCNN((4, 84, 84), (32,)), ACTIONS)}, "plain MLP actor-critic"),
    "grad_accumulation": ({"grad_accumulation": 2}, "grad_accumulation"),
    "compile": ({"compile": True}, "compile"),
    "bf16": ({"precision": "bf16"}, "fp32"),
}


@pytest.mark.parametrize("opts, reason", list(UNFUSED.values()), ids=list(UNFUSED))
def test_what_is_not_fused_falls_back_under_auto_and_is_refused_under_true(opts, reason):
    learner = make(**dict(opts), fused="auto")
    assert not learner.fused and reason in learner.fused_reason
    with pytest.raises(ConfigError, match=r"learner.fused=true, but .*: set learner.fused=auto or false"):
        make(**dict(opts), fused=True)


def test_auto_fuses_a_plain_mlp():
    assert make(fused="auto").fused and make("appo", gaussian=True, fused="auto").fused
    assert make(fused=False).fused_reason == "learner.fused=false"


def test_a_diverging_step_is_quiet(recwarn):
    """Like torch, the fused step lets an overflow produce inf/NaN without warnings: the driver stops the run
    in one line naming the fix."""
    learner = make(fused=True, max_grad_norm=None)
    step = learner._fused
    assert step is not None
    n = 16
    huge = np.full(n, 3e38, np.float32)
    minibatch = {
        "obs": np.full((n, OBS), 3e38, np.float32), "actions": np.zeros(n, np.int64),
        "old_log_probs": -huge, "old_values": huge, "advantages": huge, "returns": -huge,
    }  # fmt: skip
    out = step.step(minibatch)
    assert not np.isfinite(out.metrics["loss"])
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]

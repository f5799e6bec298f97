"""learner.fused for PPO and APPO: the clipped objective's update written out in NumPy trains as torch's autograd
path does, to float32 rounding.

Two learners start from the same weights and take the same rounds, one through autograd and torch's fused Adam,
one through raylab/learner/fused/ppo.py. After every call their metrics, parameters and Adam moments agree to
float32 rounding (the two paths order some float sums differently), for PPO and APPO, discrete and Gaussian
policies, vector and uint8 observations, and each option that changes the loss or its gradient. Checkpoints are
interchangeable both ways, and a model or option the fused step does not implement falls back to autograd under
auto and is refused in one line under true.

Not compared: a ratio within an ulp of a clip bound could take the other branch in the two paths, so random data
never lands there and the conventions at the bounds (torch's min/max/clamp gradients, which the step follows)
are left to the derivation in the module's docstring.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from raylab.builders import build_learner, build_rollout_worker
from raylab.envs.registry import env_spaces
from raylab.learner import Learner
from raylab.learner.rounds import minibatch_rows
from raylab.models.encoders import NatureCNN
from raylab.models.factory import ActorCritic
from raylab.types import Chunk
from tests.conftest import make_config
from tests.factories import actor_critic_learner, rollout_rounds
from tests.unit.fused_kit import FusedKit

OBS, ACTIONS, DIM, STEPS, ENVS = 5, 3, 2, 16, 8
FRAME = (2, 3, 3)
"""uint8 observations of more than one axis (Snake's grid with model=mlp is such)."""
TOL = {"rtol": 1e-4, "atol": 2e-6}
METRICS = {"loss", "policy_loss", "value_loss", "entropy", "approx_kl", "clip_fraction", "grad_norm"}


def rounds(
    calls: int, gaussian: bool = False, spread: float = 0.3, outliers: bool = False, frames: bool = False
) -> list[list[Chunk]]:
    """Two workers' chunks per call, one version behind (in max_policy_lag); behaviour log-probabilities
    ``spread`` away from the policy's (so that ratios leave the clip range); with ``outliers``, a few
    observations far enough out that model.normalize_obs clips them; with ``frames``, uint8 frames of FRAME."""
    return rollout_rounds(
        calls, obs_shape=FRAME if frames else (OBS,), steps=STEPS, envs=ENVS, actions=ACTIONS,
        gaussian_dim=DIM if gaussian else 0, frames=frames, obs_loc=0.5, obs_scale=2.0, reward_scale=3.0,
        spread=spread, outliers=outliers,
    )  # fmt: skip


def make(
    algo: str = "ppo",
    hidden: tuple[int, ...] = (32, 32),
    gaussian: bool = False,
    norm: bool = False,
    cfg: dict | None = None,
    model: torch.nn.Module | None = None,
    frames: bool = False,
    **opts,
) -> Learner:
    opts.setdefault("max_grad_norm", 0.5)
    opts.setdefault("lr", 3e-2)  # large steps: within a call ratios leave the clip range
    # Adam eps 1e-3, not 1e-5: on a gradient element of ~1e-5 (a sum of larger terms that cancel), the two paths
    # differ by ~1e-9 (float sums in another order), and Adam's first steps scale that by eps / (|g| + eps)^2 (~1e4
    # at eps 1e-5): 1e-6 in the parameters after a few steps, which depends on the minibatch draw, not on the math
    return actor_critic_learner(
        algo, FRAME if frames else (OBS,), ACTIONS, hidden=hidden, gaussian_dim=DIM if gaussian else 0, norm=norm,
        settings={"epochs": 2, "minibatches": 4, **(cfg or {})}, model=model, adam_eps=1e-3, prefetch=False, **opts,
    )  # fmt: skip


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
        # Adam's second moments are ~1e-8..1e-5, below TOL's atol: compare them relative to their own size
        tol = {"rtol": 1e-3, "atol": 1e-12} if name.endswith("exp_avg_sq") else TOL
        torch.testing.assert_close(got[name], want[name], **tol, msg=name)


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
    "uint8_frames": {"frames": True},
    "uint8_frames_obs_norm": {"frames": True, "norm": True},
}


@pytest.mark.parametrize("case", list(CASES.values()), ids=list(CASES))
@pytest.mark.parametrize("gaussian", [False, True], ids=["categorical", "gaussian"])
def test_fused_ppo_trains_like_autograd(case, gaussian):
    fused, ref = make(gaussian=gaussian, fused=True, **case), make(gaussian=gaussian, fused=False, **case)
    data = rounds(4, gaussian, outliers="norm" in case and "frames" not in case, frames="frames" in case)
    seen = train_both(fused, ref, data)
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


def test_the_value_clip_changes_the_fused_update():
    """The tight value clip's parity case above means something only if the clip acts: through the fused step,
    the value head trains differently with it than without it."""
    clipped, plain = make(cfg={"value_clip": 0.01}, fused=True), make(cfg={"value_clip": None}, fused=True)
    for call in rounds(2):
        clipped.update_many(call)
        plain.update_many(call)
    assert not torch.allclose(state(clipped)["model.value.weight"], state(plain)["model.value.weight"])


def test_minibatches_never_empty():
    generator = torch.Generator().manual_seed(0)
    sets = list(minibatch_rows(3, epochs=2, minibatches=4, generator=generator, device=torch.device("cpu")))
    assert len(sets) == 6 and all(len(rows) for rows in sets)  # 3 single samples per epoch, no empty fourth
    assert sorted(torch.cat(sets[:3]).tolist()) == [0, 1, 2]


def test_a_call_with_fewer_samples_than_minibatches_trains_both_paths_alike():
    """One small chunk (2 steps of 1 env) under 4 minibatches: each path takes 2 steps per epoch and stays
    finite (a step on an empty minibatch would make every gradient NaN)."""
    small = [
        dataclasses.replace(
            c,
            obs=c.obs[:3, :1],
            actions=c.actions[:2, :1],
            rewards=c.rewards[:2, :1],
            terminated=c.terminated[:2, :1],
            truncated=np.zeros((2, 1), bool),
            final_obs=c.final_obs[:0],
            final_index=np.zeros((0, 2), np.int64),
            log_probs=c.log_probs[:2, :1] if c.log_probs is not None else None,
        )
        for c in rounds(1)[0][:1]
    ]
    for algo in ("ppo", "appo"):
        fused, ref = make(algo, fused=True), make(algo, fused=False)
        stats = train_both(fused, ref, [small])
        assert fused.version == 1 and all(np.isfinite(v).all() for v in stats["loss"])
        assert all(torch.isfinite(p).all() for p in fused.params)


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
}


def test_auto_fuses_a_plain_mlp():
    assert make(fused="auto").fused and make("appo", gaussian=True, fused="auto").fused
    assert make(fused=False).fused_reason == "learner.fused=false"


def test_a_diverging_step_is_quiet(recwarn):
    """Like torch, the fused step lets an overflow produce inf/NaN without warnings: the driver stops the run
    in one line naming the fix."""
    learner = make(fused=True, max_grad_norm=None)
    assert learner._fused is not None
    step = learner._fused.fused
    n = 16
    huge = np.full(n, 3e38, np.float32)
    minibatch = {
        "obs": np.full((n, OBS), 3e38, np.float32), "actions": np.zeros(n, np.int64),
        "old_log_probs": -huge, "old_values": huge, "advantages": huge, "returns": -huge,
    }  # fmt: skip
    out = step.step(minibatch)
    assert not np.isfinite(out.metrics["loss"])
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]


def test_obs_norm_learns_the_statistics_of_the_frames_the_model_sees():
    """uint8 frames reach the normalizer scaled to [0, 1], as ActorCritic.forward scales them: its running mean
    is the frames' mean / 255, not the raw 0-255 mean."""
    learner = make(frames=True, norm=True, fused=True)
    data = rounds(1, frames=True)[0]
    learner.update_many(data)
    norm = learner.objective.modules()["model"].obs_norm
    frames = np.concatenate([c.obs[: c.num_steps].reshape(-1, *FRAME) for c in data]).astype(np.float64) / 255.0
    np.testing.assert_allclose(norm.mean.numpy(), frames.mean(0), rtol=1e-6)
    np.testing.assert_allclose(norm.var.numpy(), frames.var(0), rtol=1e-5)


@pytest.mark.parametrize("experiment", ["cartpole_ppo", "cartpole_appo", "pendulum_ppo", "halfcheetah_ppo"])
def test_the_experiments_own_learners_agree_on_real_chunks(experiment, tmp_path):
    """Each shipped plain-MLP experiment, as configured (its model, loss options, epochs x minibatches), on
    chunks its own rollout workers sampled: after every call the two paths' parameters agree to float32
    rounding. The two learners are put back in lockstep after each call, so the comparison is per call."""
    if experiment.startswith("halfcheetah"):
        pytest.importorskip("mujoco")
    cfg = make_config(tmp_path, f"+experiment={experiment}", "logger.console=false")
    spaces = env_spaces(cfg.env)
    learners = []
    for fused in (False, True):
        torch.manual_seed(0)
        learners.append(
            build_learner(dataclasses.replace(cfg, learner=dataclasses.replace(cfg.learner, fused=fused)), spaces)
        )
    ref, fused = learners
    assert fused.fused, fused.fused_reason
    workers = [build_rollout_worker(cfg, spaces, i) for i in range(cfg.topology.num_workers)]
    for _ in range(2):
        for worker in workers:
            worker.set_weights(ref.get_weights())
        chunks = [dataclasses.replace(w.sample()[0], policy_version=ref.version) for w in workers]
        got, want = fused.update_many(chunks), ref.update_many(chunks)
        for name, value in want.metrics.items():
            assert got.metrics[name] == pytest.approx(value, rel=1e-4, abs=1e-5), name
        for a, b in zip(fused.params, ref.params, strict=True):
            torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-6)
        fused.load_state_dict(ref.state_dict())
    for worker in workers:
        worker.env.close()


def kit(algo: str) -> FusedKit:
    """``algo`` ("ppo" or "appo") in the shared fused-update tests (test_fused_contract.py): two workers' chunks
    a call."""
    return FusedKit(
        make=lambda **opts: make(algo, **opts), calls=rounds, train_both=train_both, assert_same=assert_same,
        unfused=UNFUSED,
    )  # fmt: skip


KIT, APPO_KIT = kit("ppo"), kit("appo")

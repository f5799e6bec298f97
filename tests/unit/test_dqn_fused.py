"""learner.fused: DQN's update written out in NumPy trains exactly as torch's autograd path does.

Two learners start from the same weights and take the same batches, one through autograd and torch's fused Adam,
one through raylab/learner/fused/dqn.py; after every call their losses, metrics, priorities, parameters, target
networks and Adam moments agree to float32 rounding (the two paths order some float sums differently). Their
checkpoints are interchangeable both ways, and a network or option the fused step does not implement falls
back to autograd under auto and is refused in one line under true.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from raylab.algos.dqn.policy import EpsilonGreedyPolicy, EpsilonSchedule
from raylab.config import DQNConfig, LearnerConfig, ModelConfig, resolve
from raylab.errors import ConfigError
from raylab.learner import Learner
from raylab.models import build_q_network, numpy_policy
from raylab.types import Batch, Weights
from tests.factories import discrete_spaces, dqn_learner, frame_spaces, replay_batch
from tests.unit.fused_kit import FusedKit

VECTOR = discrete_spaces(7, 4)
GRID = frame_spaces((2, 4, 4), 3)  # env=snake observation=grid, model=mlp
TOL = {"rtol": 1e-4, "atol": 2e-6}


def make(spaces=VECTOR, hidden=(32, 32), algo: DQNConfig | None = None, **opts) -> Learner:
    opts.setdefault("prefetch", False)
    opts.setdefault("max_grad_norm", 10.0)
    return dqn_learner(spaces, hidden=hidden, algo=algo, lr=3e-3, adam_eps=1e-5, **opts)


def batch(spaces=VECTOR, seed=0, n=32, weights=False) -> Batch:
    """Wide observations and rewards, a fifth of them terminal."""
    return replay_batch(spaces, n, seed, weights=weights, obs_scale=2.0, reward_scale=3.0, terminal_share=0.2)


def state(learner: Learner) -> dict[str, torch.Tensor]:
    """Online and target parameters and Adam's moments and steps, flat by name."""
    out = {}
    for name, module in learner.objective.modules().items():
        out.update({f"{name}.{k}": v.clone() for k, v in module.state_dict().items()})
    for i, s in learner.optimizer.state_dict()["state"].items():
        out.update({f"adam.{i}.{k}": torch.as_tensor(v).clone() for k, v in s.items()})
    return out


def assert_same(fused: Learner, ref: Learner, adam: bool = True) -> None:
    got, want = state(fused), state(ref)
    if not adam:  # before any step torch's Adam holds no state yet; the fused step's starts at zero moments
        got, want = ({k: v for k, v in d.items() if not k.startswith("adam.")} for d in (got, want))
    assert got.keys() == want.keys()
    for name in want:
        torch.testing.assert_close(got[name], want[name], **TOL, msg=name)


def train_both(fused: Learner, ref: Learner, calls: list[list[Batch]]) -> None:
    assert fused.fused and not ref.fused
    for data in calls:
        got, want = fused.update_many(data), ref.update_many(data)
        assert (got.updates, got.samples, got.version, got.published) == (
            want.updates, want.samples, want.version, want.published,
        )  # fmt: skip
        assert got.metrics.keys() == want.metrics.keys() == {"loss", "td_error", "q", "grad_norm"}
        for name, value in want.metrics.items():
            assert got.metrics[name] == pytest.approx(value, rel=1e-4, abs=1e-6), name
        if want.priorities is None:
            assert got.priorities is None
        else:
            assert got.priorities is not None
            np.testing.assert_array_equal(got.priorities.keys, want.priorities.keys)
            np.testing.assert_allclose(got.priorities.td_errors, want.priorities.td_errors, **TOL)
        assert_same(fused, ref)


CASES = {
    "double_polyak_clip": ({}, {}),
    "vanilla_hard_copy": ({"double": False, "target_update_every": 3, "target_tau": 1.0}, {}),
    "clipping_active": ({}, {"max_grad_norm": 0.05}),
    "no_clipping": ({}, {"max_grad_norm": None}),
    "small_huber_delta": ({"huber_delta": 0.3}, {}),
}


@pytest.mark.parametrize("algo_opts, learner_opts", list(CASES.values()), ids=list(CASES))
@pytest.mark.parametrize("weights", [False, True], ids=["uniform", "prioritized"])
def test_the_fused_update_trains_like_autograd(algo_opts, learner_opts, weights):
    algo = DQNConfig(**algo_opts)
    fused, ref = make(algo=algo, fused=True, **learner_opts), make(algo=algo, fused=False, **learner_opts)
    assert_same(fused, ref, adam=False)  # the same start
    calls = [[batch(seed=3 * c + k, weights=weights) for k in range(3)] for c in range(5)]
    train_both(fused, ref, calls)
    moved = {k: v for k, v in state(fused).items() if k.startswith("q_net.")}
    assert any(not torch.equal(v, state(make(algo=algo))[k]) for k, v in moved.items())  # it learned


def test_uint8_frames_are_scaled_as_torch_scales_them():
    fused, ref = make(GRID, fused=True), make(GRID, fused=False)
    train_both(fused, ref, [[batch(GRID, seed=s) for s in range(2 * c, 2 * c + 2)] for c in range(3)])


def test_a_fused_learners_state_pickles_at_the_size_of_an_autograd_learners():
    """Its tensors are views of flat buffers; pickled (as Ray sends a checkpoint) each would carry the whole
    buffer unless the state dict copies them."""
    import pickle

    sizes = {}
    for fused in (True, False):
        learner = make(hidden=(128, 128), fused=fused)
        learner.update_many([batch(seed=0)])
        sizes[fused] = len(pickle.dumps(learner.state_dict()))
    assert sizes[True] < 1.05 * sizes[False], sizes


def test_a_checkpoint_holds_copies_not_the_live_tensors():
    learner = make(fused=True)
    learner.update_many([batch(seed=0)])
    state = learner.state_dict()
    before = {k: v.clone() for k, v in state["modules"]["q_net"].items()}
    learner.update_many([batch(seed=1)])
    for name, tensor in state["modules"]["q_net"].items():
        torch.testing.assert_close(tensor, before[name], rtol=0, atol=0)


def test_the_checkpoint_is_a_snapshot_after_a_resume_and_more_steps():
    """After load_state_dict the fused step writes Adam's state in place again: a checkpoint taken later holds
    the later moments (not the loaded ones), and the state dict just loaded is not written through."""
    source = make(fused=True)
    source.update_many([batch(seed=s) for s in range(2)])
    saved = source.state_dict()
    loaded = {i: {k: torch.as_tensor(v).clone() for k, v in s.items()} for i, s in saved["optimizer"]["state"].items()}
    learner = make(fused=True)
    learner.load_state_dict(saved)
    learner.update_many([batch(seed=5)])
    for i, s in learner.state_dict()["optimizer"]["state"].items():
        assert float(s["step"]) == 3.0
        assert not torch.equal(s["exp_avg"], loaded[i]["exp_avg"])
    for i, s in saved["optimizer"]["state"].items():
        torch.testing.assert_close(torch.as_tensor(s["exp_avg"]), loaded[i]["exp_avg"], rtol=0, atol=0)


UNFUSED = {
    "dueling": ({"model": ModelConfig(hidden_sizes=(16,), dueling=True)}, "plain MLP"),
    "quantile": ({"algo": DQNConfig(loss="quantile", num_quantiles=8)}, "quantile"),
}


def test_fused_is_an_option_of_the_algorithms_with_a_learner():
    def config(algo: str, fused: bool) -> dict:
        return {
            "algo": {"name": algo},
            "topology": {"name": "local"},
            "learner": {"fused": fused},
            "stop": {"seconds": 1},
        }

    for algo in ("dqn", "ppo", "appo"):  # PPO's and APPO's fused step: tests/unit/test_ppo_fused.py
        resolve(config(algo, True))
    with pytest.raises(ConfigError, match=r"learner\.fused=false applies to algo=dqn/ppo/appo .*, not algo=a3c"):
        resolve(config("a3c", False))


# -- acting: NumPy Q values for epsilon-greedy workers (model.numpy_inference) ----------------------------------
@pytest.mark.parametrize("spaces", [VECTOR, GRID], ids=["vector", "uint8"])
def test_numpy_q_values_are_torchs(spaces):
    torch.manual_seed(1)
    net = build_q_network(ModelConfig(hidden_sizes=(16, 16)), spaces)
    assert numpy_policy.q_linears(net) is not None
    obs = batch(spaces, seed=2, n=64).obs
    with torch.no_grad():
        want = net(torch.from_numpy(obs)).numpy()
    np.testing.assert_allclose(numpy_policy.NumpyQ(net).values(obs), want, rtol=1e-5, atol=1e-6)


def test_other_q_networks_act_in_torch():
    for model, atoms in ((ModelConfig(hidden_sizes=(8,), dueling=True), 1), (ModelConfig(hidden_sizes=(8,)), 4)):
        net = build_q_network(model, VECTOR, atoms=atoms)
        assert numpy_policy.q_linears(net) is None
        policy = EpsilonGreedyPolicy(net, EpsilonSchedule(np.zeros(4)), 4, seed=0, numpy_inference=True)
        assert policy.numpy is None


def test_epsilon_greedy_acts_alike_in_numpy_and_torch_and_follows_new_weights():
    def policy(numpy_inference: bool) -> EpsilonGreedyPolicy:
        torch.manual_seed(3)
        net = build_q_network(ModelConfig(hidden_sizes=(16,)), VECTOR)
        schedule = EpsilonSchedule(np.array([0.0, 0.0, 0.3, 1.0]))
        return EpsilonGreedyPolicy(net, schedule, 4, seed=5, numpy_inference=numpy_inference)

    fast, slow = policy(True), policy(False)
    assert fast.numpy is not None and slow.numpy is None
    obs = batch(seed=4, n=4).obs
    for step in range(40):
        if step == 20:  # a new version: the NumPy copy must follow it
            torch.manual_seed(9)
            new = build_q_network(ModelConfig(hidden_sizes=(16,)), VECTOR)
            weights = Weights(1, {k: v.numpy().copy() for k, v in new.state_dict().items()})
            assert fast.set_weights(weights) and slow.set_weights(weights)
        np.testing.assert_array_equal(fast.act(obs), slow.act(obs))
        obs = obs[::-1].copy() if step % 2 else obs + 0.5


def test_epsilon_greedy_hands_out_the_newest_weights_in_its_module_and_copy():
    """With the NumPy copy acting, set_weights loads the copy straight from the arrays and the torch module
    only when asked for (``q_net``): both must hold the newest version, the copy bit for bit."""
    torch.manual_seed(3)
    policy = EpsilonGreedyPolicy(
        build_q_network(ModelConfig(hidden_sizes=(16,)), VECTOR), EpsilonSchedule(np.zeros(4)), 4, 0, True
    )
    torch.manual_seed(9)
    new = build_q_network(ModelConfig(hidden_sizes=(16,)), VECTOR)
    assert policy.set_weights(Weights(1, {k: v.numpy().copy() for k, v in new.state_dict().items()}))
    assert policy.numpy is not None
    linears = numpy_policy.q_linears(new)
    assert linears is not None
    for got, m in zip(policy.numpy.layers, linears, strict=True):  # the copy holds torch's W^T and bias exactly
        np.testing.assert_array_equal(got[0], m.weight.detach().T.numpy())
        np.testing.assert_array_equal(got[1], m.bias.detach().numpy())
    for k, v in policy.q_net.state_dict().items():
        np.testing.assert_array_equal(v.numpy(), new.state_dict()[k].numpy())


@pytest.mark.parametrize("value", [0, 1, 1.0, "yes"])
def test_learner_fused_takes_auto_true_or_false_only(value):
    """0 == False and 1 == True in Python: a Literal of booleans must still refuse them (0 would fuse)."""
    from raylab.config.coerce import build

    with pytest.raises(ConfigError, match=r"learner\.fused must be one of auto, true, false"):
        build(LearnerConfig, {"fused": value}, "learner")
    assert build(LearnerConfig, {"fused": False}, "learner").fused is False


@pytest.mark.parametrize("opts", [opts for opts, _ in UNFUSED.values()], ids=list(UNFUSED))
def test_what_is_not_fused_trains_through_autograd(opts):
    assert make(**dict(opts), fused="auto").update_many([batch(seed=0)]).updates == 1


KIT = FusedKit(
    make=make,
    calls=lambda n: [[batch(seed=3 * c + i, weights=c % 2 == 1) for i in range(3)] for c in range(n)],
    train_both=train_both,
    assert_same=assert_same,
    unfused=UNFUSED,
)
"""DQN in the shared fused-update tests (test_fused_contract.py): 3 batches a call, uniform and prioritized."""

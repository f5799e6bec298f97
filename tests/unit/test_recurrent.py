"""Recurrent policies without Ray: the core's unroll against its step loop, state kept per slot and reset at
episode ends (crashes too), each chunk's initial_state, the learner's sequences (their start states, masks and
minibatches of whole sequences), APPO and A3C on them, evaluation, and learning a task that needs memory."""

from __future__ import annotations

import copy
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch

from raylab.algos.a3c.loss import chunk_loss
from raylab.algos.actor_critic import ActorCriticPolicy
from raylab.algos.objective import Round, Targets
from raylab.algos.ppo.objective import RoundValues, round_values, sequence_units
from raylab.builders.algorithms import build_appo, build_ppo
from raylab.config import APPOConfig, ModelConfig, PPOConfig, resolve
from raylab.envs.fake import FakeEnv
from raylab.envs.vector import SerialVectorEnv
from raylab.errors import ConfigError
from raylab.learner import Learner
from raylab.learner.rounds import Gather, RoundLoader, minibatch_rows
from raylab.models.factory import RecurrentActorCritic, build_actor_critic
from raylab.models.recurrent import RecurrentCore
from raylab.rollout.evaluator import Evaluator
from raylab.rollout.policies import PolicySet
from raylab.rollout.worker import RolloutWorker
from raylab.types import Chunk, EnvSpaces, Weights


class RecallEnv(gym.Env[np.ndarray, Any]):
    """The first observation shows a label (one-hot), the next ones show nothing, the last one asks for it: the
    action equal to the label there earns 1, anything else 0. A policy without memory earns 1 / num_actions per
    episode, one that remembers 1."""

    def __init__(self, num_actions: int = 3, length: int = 4):
        self.num_actions, self.length = num_actions, length
        self.observation_space = gym.spaces.Box(0.0, 1.0, (num_actions + 1,), np.float32)
        self.action_space = gym.spaces.Discrete(num_actions)
        self._t, self._label = 0, 0

    def _obs(self) -> np.ndarray:
        obs = np.zeros(self.num_actions + 1, np.float32)
        if self._t == 0:
            obs[self._label] = 1.0
        if self._t == self.length - 1:
            obs[-1] = 1.0
        return obs

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self._t, self._label = 0, int(self.np_random.integers(self.num_actions))
        return self._obs(), {}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        last = self._t == self.length - 1
        reward = float(last and int(action) == self._label)
        self._t += 1
        return self._obs(), reward, last, False, {}


SPACES = EnvSpaces(obs_shape=(4,), obs_dtype=np.dtype(np.float32), num_actions=3, action_space="Discrete(3)")


CPU = torch.device("cpu")


def loaded(*chunks: Chunk) -> Round:
    """The chunks as the Learner joins them into a round (on the CPU)."""
    return RoundLoader(CPU).load(chunks)


def values_of(net: RecurrentActorCritic, *chunks: Chunk) -> RoundValues:
    with torch.no_grad():
        return round_values(net, loaded(*chunks))


def targets_of(objective: Any, *chunks: Chunk) -> Targets:
    with torch.no_grad():
        return objective.targets(loaded(*chunks))


def model(kind: str = "lstm", size: int = 8, seed: int = 0) -> RecurrentActorCritic:
    torch.manual_seed(seed)
    net = build_actor_critic(ModelConfig(hidden_sizes=(16,), recurrent=kind, recurrent_size=size), SPACES)
    assert isinstance(net, RecurrentActorCritic)
    return net


def recall_worker(net: RecurrentActorCritic, envs: int = 4, steps: int = 12, seed: int = 0, **env) -> RolloutWorker:
    vec = SerialVectorEnv([lambda: RecallEnv(**env) for _ in range(envs)], seeds=[seed * 10 + i for i in range(envs)])
    return RolloutWorker(vec, ActorCriticPolicy(copy.deepcopy(net), seed=seed), worker_id=0, rollout_length=steps)


@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_unroll_equals_the_step_loop_with_resets(kind: str):
    torch.manual_seed(0)
    core = RecurrentCore(kind, 5, 6)
    assert core.state_size == (12 if kind == "lstm" else 6)
    x, s0 = torch.randn(7, 3, 5), torch.randn(3, core.state_size)
    reset = torch.zeros(7, 3, dtype=torch.bool)
    reset[3, 1] = reset[5, 0] = True
    out, last, after = core.unroll(x, s0, reset, keep=True)
    state, expected = s0, []
    for t in range(7):
        state = state * (~reset[t]).unsqueeze(-1).float()
        y, state = core.step(x[t], state)
        expected.append(y)
    torch.testing.assert_close(out, torch.stack(expected))
    torch.testing.assert_close(last, state)
    assert after is not None and after.shape == (7, 3, core.state_size)
    # after a reset, env 1's outputs are those of a fresh start at step 3
    fresh, _, _ = core.unroll(x[3:, 1:2], torch.zeros(1, core.state_size), None)
    torch.testing.assert_close(out[3:, 1:2], fresh)
    # no resets: one fused call, the same outputs as the loop
    fused, fused_last, _ = core.unroll(x, s0, None)
    looped, looped_last, _ = core.unroll(x, s0, None, keep=True)
    torch.testing.assert_close(fused, looped)
    torch.testing.assert_close(fused_last, looped_last)


@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_the_packed_unroll_equals_the_loop_outputs_last_states_and_gradients(kind: str):
    torch.manual_seed(1)
    core = RecurrentCore(kind, 3, 5)
    x0, s0 = torch.randn(9, 4, 3), torch.randn(4, core.state_size)
    reset = torch.zeros(9, 4, dtype=torch.bool)
    reset[0, 2] = reset[2, 0] = reset[3, 0] = reset[8, 1] = reset[4, 2] = reset[7, 2] = True  # column 3: none
    results = []
    for packed in (True, False):
        core.packed = packed
        x, s = x0.clone().requires_grad_(True), s0.clone().requires_grad_(True)
        out, last, _ = core.unroll(x, s, reset)
        (out.pow(2).sum() + last.sum()).backward()
        grads = [p.grad.clone() for p in core.parameters()]
        core.zero_grad()
        results.append((out.detach(), last.detach(), x.grad, s.grad, grads))
    core.packed = True
    (out_p, last_p, gx_p, gs_p, gp_p), (out_l, last_l, gx_l, gs_l, gp_l) = results
    torch.testing.assert_close(out_p, out_l)
    torch.testing.assert_close(last_p, last_l)
    torch.testing.assert_close(gx_p, gx_l)
    torch.testing.assert_close(gs_p, gs_l)  # column 2 resets at step 0: no gradient reaches its start state
    assert float(gs_p[2].abs().sum()) == 0.0 and float(gs_p[3].abs().sum()) > 0
    for a, b in zip(gp_p, gp_l, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)


def test_a_recurrent_model_has_no_stateless_forward():
    with pytest.raises(TypeError, match="needs its state"):
        model()(torch.zeros(2, 4))


def test_policy_keeps_a_state_per_slot_and_zeroes_ended_slots():
    policy = ActorCriticPolicy(model(), seed=0)
    assert policy.state_size == 16
    np.testing.assert_array_equal(policy.states(3), np.zeros((3, 16), np.float32))
    obs = np.eye(4, dtype=np.float32)[:3]
    policy.act(obs)
    after = policy.states(3)
    assert np.abs(after).min(axis=1).max() > 0 or np.abs(after).sum(axis=1).min() > 0
    policy.reset_states(np.array([False, True, False]))
    now = policy.states(3)
    np.testing.assert_array_equal(now[1], 0.0)
    np.testing.assert_array_equal(now[[0, 2]], after[[0, 2]])
    assert now is not policy.states(3)  # copies: the worker keeps them while the policy moves on


@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_chunks_carry_the_states_their_slots_acted_from(kind: str):
    net = model(kind)
    worker = recall_worker(net, steps=6)  # episodes of 4 steps: resets inside chunks and at their edges
    first, _ = worker.sample()
    second, _ = worker.sample()
    np.testing.assert_array_equal(first.initial_state, 0.0)
    # the learner's unroll of the first chunk ends in the state the second one starts from
    ended = first.terminated | first.truncated
    reset = torch.from_numpy(np.concatenate([np.zeros((1, 4), bool), ended]))
    with torch.no_grad():
        _, _, _, after = net.unroll(
            torch.from_numpy(first.obs[:-1]), torch.from_numpy(first.initial_state), reset[:-1], keep=True
        )
    assert after is not None
    expected = after[-1].numpy() * ~ended[-1][:, None]
    np.testing.assert_allclose(second.initial_state, expected, atol=1e-6)
    # the same weights' round pass gives back the acting log-probabilities exactly
    for chunk in (first, second):
        r = values_of(net, chunk)
        np.testing.assert_allclose(r.log_probs, chunk.log_probs, atol=1e-6)


def test_a_crashed_env_restarts_its_slot_from_zeros():
    net = build_actor_critic(ModelConfig(hidden_sizes=(8,), recurrent="gru", recurrent_size=4), SPACES)
    vec = SerialVectorEnv(
        [lambda: FakeEnv(num_actions=3, episode_length=50, crash_every=4), lambda: FakeEnv(num_actions=3)],
        seeds=[0, 1],
    )
    policy = ActorCriticPolicy(net, seed=0)
    worker = RolloutWorker(vec, policy, worker_id=0, rollout_length=4)
    chunk, _ = worker.sample()  # env 0 crashes on its 4th step: the chunk's last
    assert chunk.restarted is not None and chunk.restarted[3, 0]
    state = policy.states(2)
    np.testing.assert_array_equal(state[0], 0.0)
    assert np.abs(state[1]).sum() > 0


def test_reset_zeroes_every_state():
    worker = recall_worker(model(), steps=3)
    worker.sample()
    worker.reset()
    chunk, _ = worker.sample()
    np.testing.assert_array_equal(chunk.initial_state, 0.0)


def test_policy_set_splits_states_by_policy():
    nets = [model(seed=1), model("gru", seed=2)]
    vec = SerialVectorEnv([lambda: RecallEnv() for _ in range(4)], seeds=[0, 1, 2, 3])
    slots = [np.array([0, 2]), np.array([1, 3])]
    policies = PolicySet([ActorCriticPolicy(copy.deepcopy(n), seed=0) for n in nets], slots)
    worker = RolloutWorker(vec, policies, worker_id=0, rollout_length=5)
    worker.sample_each()
    parts, _ = worker.sample_each()
    for net, part, policy in zip(nets, parts, policies.policies, strict=True):
        assert part.initial_state is not None and part.initial_state.shape == (2, net.state_size)
        assert np.abs(part.initial_state).sum() > 0
        r = values_of(net, part)
        np.testing.assert_allclose(r.log_probs, part.log_probs, atol=1e-6)
        assert policy.states(2).shape == (2, net.state_size)


def test_sequences_start_from_the_states_the_full_unroll_reaches():
    net = model()
    chunk, _ = recall_worker(net, envs=3, steps=12).sample()
    objective = build_ppo(net, PPOConfig(epochs=2, minibatches=3, bptt=4))
    targets = targets_of(objective, chunk)
    r = values_of(net, chunk)
    assert r.sequences is not None
    data = targets.data
    assert data["obs"].shape == (9, 4, 4) and data["state0"].shape == (9, 16)
    # sequence (segment j, env e) starts from the state step 4j of env e acted from in the full unroll
    states = r.sequences.states
    for j in range(3):
        for e in range(3):
            torch.testing.assert_close(data["state0"][j * 3 + e], states[4 * j, e])
    np.testing.assert_array_equal(data["reset_before"][:, 0].numpy(), False)
    # the sequences' own unroll gives the round's values: cutting into sequences loses nothing
    time_major = data["obs"].transpose(0, 1)
    with torch.no_grad():
        _, values, _, _ = net.unroll(time_major, data["state0"], data["reset_before"].transpose(0, 1))
    np.testing.assert_allclose(
        values.reshape(4, 9).transpose(0, 1).numpy(), sequence_units(r.values, 4).numpy(), atol=1e-5
    )
    # minibatches are whole sequences; each sequence once per epoch
    rows = minibatch_rows(9, targets.epochs, targets.minibatches, torch.Generator().manual_seed(0), CPU)
    seen = [idx.tolist() for idx in rows]
    assert len(seen) == 6
    for epoch in (seen[:3], seen[3:]):
        assert sorted(i for mb in epoch for i in mb) == list(range(9))
    batch = Gather()(data, torch.tensor([0, 4]))
    assert targets.steps_per_row == 4 and batch["obs"].shape == (2, 4, 4)


def test_first_epoch_ratio_is_one_and_steps_before_a_reset_do_not_reach_after_it():
    net = model("gru")
    chunk, _ = recall_worker(net, envs=2, steps=8).sample()
    objective = build_ppo(net, PPOConfig(epochs=1, minibatches=1))
    out = objective.loss(objective.finish_minibatch(targets_of(objective, chunk).data))
    assert float(out.metrics["approx_kl"]) == pytest.approx(0.0, abs=1e-6)
    assert float(out.metrics["clip_fraction"]) == 0.0
    # changing what env 0 saw before its first reset leaves the outputs after it unchanged
    ends = np.flatnonzero(chunk.terminated[:, 0])
    assert len(ends)
    t = int(ends[0]) + 1
    obs = torch.from_numpy(chunk.obs[:-1]).clone()
    reset = torch.from_numpy(np.concatenate([np.zeros((1, 2), bool), chunk.terminated[:-1]]))
    state0 = torch.from_numpy(chunk.initial_state)
    with torch.no_grad():
        a, _, _, _ = net.unroll(obs, state0, reset)
        obs[:t, 0] += 5.0
        b, _, _, _ = net.unroll(obs, state0, reset)
    a, b = a.reshape(8, 2, -1), b.reshape(8, 2, -1)
    torch.testing.assert_close(a[t:, 0], b[t:, 0])
    assert not torch.allclose(a[: t - 1, 0], b[: t - 1, 0])


def test_crashed_steps_are_masked_not_dropped():
    net = model("gru")
    chunk, _ = recall_worker(net, envs=2, steps=8).sample()
    chunk.restarted = np.zeros((8, 2), bool)
    chunk.restarted[5, 1] = True
    chunk.truncated[5, 1] = True
    batch = targets_of(build_ppo(net, PPOConfig(epochs=1, minibatches=1)), chunk).data
    assert batch["obs"].shape == (2, 8, 4)
    assert not bool(batch["valid"][1, 5]) and int(batch["valid"].sum()) == 15


def test_appo_on_policy_weights_are_one_and_chunks_must_agree():
    net = model()
    worker = recall_worker(net, envs=2, steps=8)
    chunks = [worker.sample()[0] for _ in range(2)]
    targets = targets_of(build_appo(net, APPOConfig(bptt=4)), *chunks)
    assert float(targets.metrics["rho_mean"]) == pytest.approx(1.0)
    joined = loaded(*chunks).initial_state
    assert joined is not None and joined.shape == (4, 16)
    chunks[1].initial_state = None
    with pytest.raises(ValueError, match="recurrent policy, or none"):
        loaded(*chunks)


def test_a3c_loss_unrolls_from_the_chunk_state():
    net = model()
    worker = recall_worker(net, envs=2, steps=6)
    worker.sample()
    chunk, _ = worker.sample()
    loss = chunk_loss(net, chunk, gamma=0.9, value_coef=0.5, entropy_coef=0.0)
    loss.loss.backward()
    assert all(p.grad is not None for p in net.core.parameters())
    ended = chunk.terminated | chunk.truncated
    reset = torch.from_numpy(np.concatenate([np.zeros((1, 2), bool), ended]))
    with torch.no_grad():
        _, values, _, _ = net.unroll(torch.from_numpy(chunk.obs), torch.from_numpy(chunk.initial_state), reset)
    v = values.reshape(7, 2).numpy()
    returns = np.zeros((6, 2), np.float32)
    following = v[6]
    for t in reversed(range(6)):
        following = chunk.rewards[t] + 0.9 * following * ~ended[t]
        returns[t] = following
    expected = 0.5 * float(np.mean((returns - v[:6]) ** 2))
    assert float(loss.value_loss.detach()) == pytest.approx(expected, rel=1e-5)


def test_evaluation_starts_every_episode_from_zeros():
    class Spy(ActorCriticPolicy):
        def act(self, obs: np.ndarray) -> np.ndarray:
            if self._memory.rows is not None:
                self.seen.append(self._memory.rows.copy())
            return super().act(obs)

    vec = SerialVectorEnv([lambda: RecallEnv(length=3)], seeds=[0])
    spy = Spy(model(), seed=0, greedy=True)
    spy.seen = []
    spy.act(np.ones((1, 4), np.float32))  # a state left over from before
    result = Evaluator(vec, spy).evaluate(None, episodes=3)
    assert len(result.returns) == 3
    starts = spy.seen[::3]  # the first step of each episode (length 3)
    assert len(starts) == 3
    for state in starts:
        np.testing.assert_array_equal(state, 0.0)


def test_ppo_with_memory_learns_recall_where_a_feed_forward_policy_cannot():
    """The label is shown at step 0 and asked for at step 3: a feed-forward policy earns 1/3, memory earns 1."""
    torch.manual_seed(0)
    results, rounds = {}, {"none": 20, "gru": 80}  # memory: until it reads the label back (it stops there)
    for kind in ("none", "gru"):
        cfg = ModelConfig(hidden_sizes=(32,), recurrent=kind, recurrent_size=32)
        net = build_actor_critic(cfg, SPACES)
        learner = Learner(
            build_ppo(net, PPOConfig(epochs=4, minibatches=2, entropy_coef=0.01)), lr=3e-3, adam_eps=1e-5,
            max_grad_norm=0.5, device="cpu",
        )  # fmt: skip
        vec = SerialVectorEnv([lambda: RecallEnv() for _ in range(16)], seeds=list(range(16)))
        policy = ActorCriticPolicy(build_actor_critic(cfg, SPACES), seed=0)
        worker = RolloutWorker(vec, policy, worker_id=0, rollout_length=16)
        returns: list[float] = []
        for _ in range(rounds[kind]):
            worker.set_weights(learner.get_weights())
            chunk, stats = worker.sample()
            returns.extend(stats.episodes.returns.tolist())
            if len(returns) >= 128 and np.mean(returns[-64:]) >= 0.9:
                break
            learner.update_many([chunk])
        results[kind] = float(np.mean(returns[-64:]))
    assert results["gru"] >= 0.9, results
    assert results["none"] <= 0.55, results


def test_weights_travel_and_state_survives_a_weights_load():
    net = model()
    policy = ActorCriticPolicy(copy.deepcopy(net), seed=0)
    policy.act(np.eye(4, dtype=np.float32)[:2])
    before = policy.states(2)
    params = {k: v.detach().numpy().copy() for k, v in net.state_dict().items()}
    assert any(k.startswith("core.") for k in params)
    assert policy.set_weights(Weights(1, params))
    np.testing.assert_array_equal(policy.states(2), before)


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"algo": {"name": "ppo", "bptt": 8}}, "add model.recurrent=lstm"),
        ({"algo": {"name": "ppo", "bptt": 5}, "model": {"recurrent": "lstm"}}, "must divide topology.rollout_length"),
        ({"algo": {"name": "appo", "bptt": 0}, "model": {"recurrent": "lstm"}}, "algo.bptt must be >= 1"),
        ({"model": {"recurrent_size": 0, "recurrent": "gru"}}, "model.recurrent_size must be positive"),
    ],
)
def test_recurrent_settings_that_cannot_work_are_one_line(settings: dict, message: str):
    data: dict = {"algo": {"name": "ppo"}, "topology": {"name": "ppo"}, "stop": {"env_steps": 1000}}
    for section, values in settings.items():
        data.setdefault(section, {}).update(values)
    data["topology"]["name"] = data["algo"]["name"]
    with pytest.raises(ConfigError, match=message) as err:
        resolve(data)
    assert "\n" not in str(err.value)


def test_a_custom_model_takes_no_recurrent_core():
    cfg = ModelConfig(encoder="custom", factory="x:y", recurrent="lstm")
    with pytest.raises(ConfigError, match="model=custom builds the whole network"):
        build_actor_critic(cfg, SPACES)


def test_recurrent_policies_over_space_groups_carry_their_own_states():
    """simple_tag with continuous predators (16 floats) and discrete prey (14 floats), each policy an LSTM or GRU
    in its own spaces: each part starts from its policy's states, and the learner's pass gives back the acting
    log-probabilities (a Gaussian and a categorical policy)."""
    from raylab.config import EnvConfig
    from raylab.envs.registry import env_spaces, make_vector_env

    cfg = EnvConfig(
        family="pettingzoo", id="mpe2.simple_tag_v3", discrete_agents=("agent_*",),
        options={"continuous_actions": True, "max_cycles": 6},
    )  # fmt: skip
    spaces = env_spaces(cfg)
    assert len(spaces.groups) == 2
    env = make_vector_env(cfg, 2, seed=0)
    nets = []
    for g, kind in enumerate(("lstm", "gru")):
        own = spaces.groups[g]
        torch.manual_seed(g)
        nets.append(build_actor_critic(ModelConfig(hidden_sizes=(16,), recurrent=kind, recurrent_size=8), own))
    layout = spaces.slot_layout(2)
    slots = [np.flatnonzero(layout[0] == g) for g in range(2)]
    policies = PolicySet([ActorCriticPolicy(copy.deepcopy(n), seed=0) for n in nets], slots, layout)
    worker = RolloutWorker(env, policies, worker_id=0, rollout_length=4)
    worker.sample_each()
    parts, _ = worker.sample_each()  # crosses the episode end at step 6
    for net, part in zip(nets, parts, strict=True):
        assert part.initial_state is not None and part.initial_state.shape == (len(part.obs[0]), net.state_size)
        assert np.abs(part.initial_state).sum() > 0
        r = values_of(net, part)
        np.testing.assert_allclose(r.log_probs, part.log_probs, atol=1e-5)
    assert parts[0].actions.dtype == np.float32 and parts[1].actions.dtype == np.int64


@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_the_numpy_copy_of_a_recurrent_mlp_acts_as_torch_does(kind: str):
    """model.numpy_inference: an MLP encoder with its core, stepped in NumPy, gives torch's distribution and
    state step after step (resets included), and reloads published weights."""
    from raylab.models.numpy_policy import NumpyActor, supports

    net = model(kind, size=8)
    assert supports(net)
    copy_ = NumpyActor(net, seed=0)
    rng = np.random.default_rng(0)
    state = np.zeros((5, net.state_size), np.float32)
    torch_state = torch.zeros(5, net.state_size)
    for t in range(6):
        obs = rng.standard_normal((5, 4)).astype(np.float32)
        if t == 3:
            state[1] = 0.0
            torch_state[1] = 0.0
        got = copy_.params(obs, state)
        with torch.no_grad():
            want, _, torch_state = net.step(torch.from_numpy(obs), torch_state)
        np.testing.assert_allclose(got, want.numpy(), atol=1e-5)
        np.testing.assert_allclose(state, torch_state.numpy(), atol=1e-5)
    numpy_policy = ActorCriticPolicy(copy.deepcopy(net), seed=0, numpy_inference=True)
    torch_policy = ActorCriticPolicy(copy.deepcopy(net), seed=0, numpy_inference=False)
    assert numpy_policy.numpy is not None and torch_policy.numpy is None
    with torch.no_grad():
        for p in net.parameters():
            p.add_(0.1)
    params = {k: v.detach().numpy().copy() for k, v in net.state_dict().items()}
    for policy in (numpy_policy, torch_policy):
        policy.set_weights(Weights(1, params))
        policy.act(np.ones((3, 4), np.float32))
    np.testing.assert_allclose(numpy_policy.states(3), torch_policy.states(3), atol=1e-5)  # the new weights

"""A3C without Ray: returns, loss, the sharded parameter server against torch's RMSprop, and the worker."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from gymnasium.wrappers import TimeLimit

from raylab.algos.a3c import actor_critic_loss
from raylab.algos.a3c.loss import chunk_loss
from raylab.algos.actor_critic import ActorCriticPolicy
from raylab.algos.advantages import bootstrap_before_crashes
from raylab.algos.returns import bootstrapped_returns
from raylab.envs.fake import FakeEnv
from raylab.envs.vector import SerialVectorEnv
from raylab.models.distributions import Categorical
from raylab.models.encoders import MLPEncoder
from raylab.models.factory import ActorCritic
from raylab.params import ParameterServer, ParamLayout, ServerLink, flatten_params, load_flat
from raylab.params.flat import flatten_grads
from raylab.params.link import ServerUpdate
from raylab.rollout.a3c import A3CWorker
from raylab.rollout.worker import RolloutWorker
from raylab.transport import Immediate


def col(*values, dtype=np.float32):
    return np.array(values, dtype=dtype)[:, None]


# -- returns ---------------------------------------------------------------------------------------------
def test_returns_bootstrap_from_the_last_value_when_nothing_ends():
    out = bootstrapped_returns(col(1, 2, 3), col(0, 0, 0, dtype=bool), col(0, 0, 0, dtype=bool), col(9, 9, 10), 0.5)
    # R2 = 3 + .5 * 10 = 8; R1 = 2 + .5 * 8 = 6; R0 = 1 + .5 * 6 = 4 (bootstrap read only at the last step)
    np.testing.assert_allclose(out[:, 0], [4, 6, 8])


def test_a_terminal_stops_the_sum_and_a_truncation_bootstraps_from_its_final_value():
    rewards = col(1, 1, 1, 1)
    terminated = col(0, 1, 0, 0, dtype=bool)
    truncated = col(0, 0, 1, 0, dtype=bool)
    bootstrap = col(0, 0, 4, 2)  # step 2's episode was truncated with V(last obs) = 4; V(obs_T) = 2
    out = bootstrapped_returns(rewards, terminated, truncated, bootstrap, 0.5)
    # R3 = 1 + .5*2 = 2; R2 = 1 + .5*4 = 3 (truncated: its own bootstrap, not R3); R1 = 1 (terminal); R0 = 1.5
    np.testing.assert_allclose(out[:, 0], [1.5, 1, 3, 2])


def test_returns_of_several_envs_are_independent():
    rewards = np.array([[1, 0], [1, 1]], np.float32)
    terminated = np.array([[0, 1], [0, 0]], bool)
    truncated = np.zeros((2, 2), bool)
    out = bootstrapped_returns(rewards, terminated, truncated, np.array([[0, 0], [10, 20]], np.float32), 1.0)
    np.testing.assert_allclose(out, [[12, 0], [11, 21]])


# -- loss ------------------------------------------------------------------------------------------------
def test_actor_critic_loss_matches_hand_computed_terms():
    logits = torch.tensor([[0.0, 0.0], [np.log(3.0), 0.0]], requires_grad=True)  # probs [.5,.5], [.75,.25]
    values = torch.tensor([1.0, 2.0], requires_grad=True)
    actions = torch.tensor([1, 0])
    returns = torch.tensor([3.0, 1.0])
    d = Categorical(2)
    out = actor_critic_loss(d.log_prob(logits, actions), d.entropy(logits), values, returns, 0.5, 0.1)
    # advantages 2 and -1; policy loss = mean(-log .5 * 2, -log .75 * -1)
    expected_policy = (-np.log(0.5) * 2 + np.log(0.75) * 1) / 2
    expected_value = (0.5 * 4 + 0.5 * 1) / 2
    h = lambda p: -(p * np.log(p) + (1 - p) * np.log(1 - p))  # noqa: E731
    expected_entropy = (h(0.5) + h(0.75)) / 2
    assert out.policy_loss.item() == pytest.approx(expected_policy, rel=1e-5)
    assert out.value_loss.item() == pytest.approx(expected_value, rel=1e-5)
    assert out.entropy.item() == pytest.approx(expected_entropy, rel=1e-5)
    assert out.loss.item() == pytest.approx(expected_policy + 0.5 * expected_value - 0.1 * expected_entropy, rel=1e-5)
    out.loss.backward()
    # no gradient flows from the policy term into the value through the advantage
    np.testing.assert_allclose(values.grad.numpy(), 0.5 * -(returns - values.detach()).numpy() / 2, rtol=1e-5)


def test_masked_steps_leave_the_loss():
    logits, values = torch.zeros(3, 2), torch.zeros(3)
    actions, returns = torch.tensor([0, 0, 0]), torch.tensor([1.0, 1.0, 100.0])
    log_probs, entropies = Categorical(2).log_prob(logits, actions), Categorical(2).entropy(logits)
    masked = actor_critic_loss(log_probs, entropies, values, returns, 0.5, 0.0, mask=torch.tensor([1, 1, 0]))
    plain = actor_critic_loss(log_probs[:2], entropies[:2], values[:2], returns[:2], 0.5, 0.0)
    assert masked.loss.item() == pytest.approx(plain.loss.item())


# -- parameter server ------------------------------------------------------------------------------------
def small_model(seed: int = 0) -> ActorCritic:
    torch.manual_seed(seed)
    return ActorCritic(MLPEncoder((4,), (8, 8)), 3)


@pytest.mark.parametrize("num_shards", [1, 3])
def test_pushed_gradients_equal_a_single_process_rmsprop(num_shards):
    reference = small_model()
    layout = ParamLayout.of(reference)
    bounds = layout.shard_bounds(num_shards)
    flat = flatten_params(reference)
    servers = [
        ParameterServer(flat[bounds[k] : bounds[k + 1]], lr=0.01, alpha=0.9, eps=1e-5, shard=k)
        for k in range(num_shards)
    ]
    link = ServerLink(servers, bounds)
    optimizer = torch.optim.RMSprop(reference.parameters(), lr=0.01, alpha=0.9, eps=1e-5)
    rng = np.random.default_rng(0)
    versions = []
    for step in range(20):
        grads = [torch.from_numpy(rng.normal(size=p.shape).astype(np.float32)) for p in reference.parameters()]
        for p, g in zip(reference.parameters(), grads, strict=True):
            p.grad = g.clone()
        optimizer.step()
        link.push(torch.cat([g.reshape(-1) for g in grads]).numpy(), version=step)
        (update,) = link.poll()
        versions.append(update.version)
        np.testing.assert_allclose(update.params, flatten_params(reference), rtol=1e-6, atol=1e-7)
    assert versions == list(range(1, 21))  # one version per push, monotonic


def test_the_server_records_lag_apply_time_and_refuses_a_wrong_sized_gradient():
    server = ParameterServer(np.zeros(5, np.float32), lr=0.1, alpha=0.99, eps=1e-5)
    server.push(np.ones(5, np.float32), version=0)
    server.push(np.ones(5, np.float32), version=0)  # computed on version 0, applied after one other push
    reply = server.push(np.ones(5, np.float32), version=1)
    stats = server.stats()
    assert (stats.lag_sum, stats.lag_max, reply.lag, stats.pushes) == (2, 1, 1, 3) and stats.apply_s > 0
    assert server.pull(known_version=3) is None and server.pull(known_version=2) is not None
    with pytest.raises(ValueError, match="holds 5 parameters"):  # a bug, not a user error
        server.push(np.ones(4, np.float32), version=3)


def test_layout_round_trips_and_splits_evenly():
    model = small_model(1)
    layout = ParamLayout.of(model)
    bounds = layout.shard_bounds(4)
    assert bounds[0] == 0 and bounds[-1] == layout.size and max(np.diff(bounds)) - min(np.diff(bounds)) <= 1
    flat = flatten_params(model)
    other = small_model(2)
    load_flat(other, flat)
    np.testing.assert_array_equal(flatten_params(other), flat)
    named = layout.to_dict(flat)
    for name, p in model.named_parameters():
        np.testing.assert_array_equal(named[name], p.detach().numpy())


# -- worker ----------------------------------------------------------------------------------------------
def fake_worker(link, pushes_in_flight=1, seed=0, crash_every=None, num_envs=2):
    env = SerialVectorEnv(
        [lambda: FakeEnv(num_actions=3, episode_length=10, crash_every=crash_every) for _ in range(num_envs)],
        seeds=[seed * 100 + i for i in range(num_envs)],
    )
    policy = ActorCriticPolicy(small_model(seed), seed=seed, frozen=False)
    return A3CWorker(
        env, policy, link, worker_id=0, rollout_length=5, gamma=0.5, value_coef=0.5, entropy_coef=0.01,
        max_grad_norm=40.0, cut_at_episode_end=False, pushes_in_flight=pushes_in_flight,
    )  # fmt: skip


def local_link(model_seed=0, lr=0.01, transport=None):
    flat = flatten_params(small_model(model_seed))
    return ServerLink([ParameterServer(flat, lr=lr, alpha=0.99, eps=1e-5)], [0, flat.size], transport)


class SlowTransport(Immediate):
    """A server that is always behind: a push's reply is ready only once the worker blocked on it."""

    def __init__(self):
        self.released: set[int] = set()
        self.held: list = []  # the released replies stay alive: their ids are not reused
        self.blocking_waits = 0

    def wait(self, refs, timeout, every=False, fetch=True):
        if timeout is None:  # the worker blocks (ServerLink.wait_oldest)
            self.blocking_waits += 1
            self.released.update(id(r) for r in refs)
            self.held.extend(refs)
            return list(refs)
        return [r for r in refs if id(r) in self.released]


class SlowLink(ServerLink):
    """The real link over a SlowTransport, recording how far it ran ahead of the server."""

    def __init__(self):
        inner = local_link()
        super().__init__(inner.shards, [0, inner.slices[0].stop], SlowTransport())
        self.max_outstanding = 0

    @property
    def blocking_waits(self):
        return self.transport.blocking_waits

    def push(self, grad, version):
        super().push(grad, version)
        self.max_outstanding = max(self.max_outstanding, self.in_flight())


@pytest.mark.parametrize("pushes_in_flight", [0, 1, 3])
def test_a_worker_runs_at_most_pushes_in_flight_ahead_of_the_server(pushes_in_flight):
    link = SlowLink()
    worker = fake_worker(link, pushes_in_flight)
    report = worker.run(max_segments=10)
    assert report.segments == 10 and report.env_steps == 10 * 5 * 2
    assert link.max_outstanding == pushes_in_flight + 1
    assert link.blocking_waits == 10 - pushes_in_flight
    assert report.timings["wait"] >= 0 and report.policy_version_last == 10 - pushes_in_flight
    flushed = worker.flush()
    assert link.in_flight() == 0 and flushed.policy_version_last == 10


def test_a_server_restored_from_a_checkpoint_moves_its_version_on_and_the_worker_follows():
    """A crashed shard's recovery (raylab.topology.a3c): the server loads an older state with versions past
    any the worker saw; the worker drops the replies it still waited for and loads the restored weights."""
    link = SlowLink()
    server = link.shards[0]
    worker = fake_worker(link, pushes_in_flight=3)
    worker.run(max_segments=2)
    checkpoint = server.state_dict()
    worker.run(max_segments=4)
    assert link.in_flight() == 3 and worker.version == 3  # 6 pushed, 3 replies collected
    server.load_state_dict(checkpoint, min_version=server.version + 1)
    assert server.version == 7 and torch.equal(server.flat, checkpoint["params"])
    assert torch.equal(server.mean_sq, checkpoint["mean_sq"])
    assert worker.recover() == 3 and link.in_flight() == 0
    report = worker.run(max_segments=1)
    assert report.policy_version_first == 7  # it synced to the restored weights before its first segment
    flushed = worker.flush()
    assert flushed.policy_version_last == 8 and server.version == 8
    # a version already past min_version stays
    server.load_state_dict(checkpoint, min_version=0)
    assert server.version == checkpoint["version"] == 2


def test_a3c_worker_learns_the_fake_task_without_ray():
    link = local_link(lr=3e-3)
    worker = fake_worker(link, num_envs=4)
    worker.run(max_segments=600)
    report = worker.run(max_segments=100)
    # reading the label earns 10 per episode, chance 10/3
    assert report.episodes.returns.mean() >= 8.0, report.episodes.returns.mean()


def test_the_step_before_a_crash_bootstraps_from_the_crash_state_unless_its_episode_ended():
    valid = np.array([[1, 1, 1], [0, 0, 0]], bool)  # all three envs crash at step 1
    terminated = np.array([[0, 1, 0], [0, 0, 0]], bool)
    truncated = np.array([[0, 0, 1], [1, 1, 1]], bool)
    bootstrap = np.array([[0, 0, 7], [0, 0, 0]], np.float32)  # env 2 was truncated at step 0 with V(last) = 7
    values = np.array([[9, 9, 9], [5, 6, 8]], np.float32)  # V of the state each crash happened in
    truncated, bootstrap = (
        t.numpy() for t in bootstrap_before_crashes(valid, terminated, truncated, bootstrap, values)
    )
    np.testing.assert_array_equal(truncated[0], [True, False, True])
    # env 0: its episode runs into the crash -> V(crash state); env 1 terminated, env 2's truncation keeps 7
    np.testing.assert_array_equal(bootstrap[0], [5, 0, 7])


def test_crashed_steps_are_masked_and_the_worker_goes_on():
    worker = fake_worker(local_link(), crash_every=7)
    report = worker.run(max_segments=20)
    assert report.env_restarts > 0 and report.segments == 20
    assert all(np.isfinite(v) for v in report.metrics.values())


class RecordingLink:
    """A server that never moves: every push is recorded, the weights stay those of version 0."""

    def __init__(self, flat):
        self.flat = flat
        self.pushed = []

    def pull(self):
        return ServerUpdate(version=0, params=self.flat, lag=0, queue_s=0.0, apply_s=0.0)

    def push(self, grad, version):
        self.pushed.append((grad.copy(), version))

    def poll(self):
        return []

    def in_flight(self):
        return 0

    def wait_oldest(self):
        raise AssertionError("nothing is in flight")

    def discard(self):
        return 0


def crashing_envs(seed):
    """Three envs whose episodes end every way: env 0 terminates after 3 steps, the others are truncated after
    4 (a time limit), and every env crashes on its 9th step."""

    def make(episode_length):
        return lambda: TimeLimit(FakeEnv(num_actions=3, episode_length=episode_length, crash_every=9), 4)

    return SerialVectorEnv([make(3), make(10), make(10)], seeds=[seed * 100 + i for i in range(3)])


@pytest.mark.parametrize("cut_at_episode_end", [False, True])
def test_a3c_segments_are_rollout_worker_chunks_and_their_gradients_the_chunk_loss(cut_at_episode_end):
    """The A3C worker acts through RolloutWorker: for the same seeds and weights, its segments are the chunks a
    plain RolloutWorker collects (cut at episode ends, crashes and truncations included), and each pushed
    gradient is chunk_loss's on that chunk, clipped."""
    link = RecordingLink(flatten_params(small_model(0)))
    policy = ActorCriticPolicy(small_model(1), seed=5, frozen=False, keep_log_probs=False)  # as A3C's builder makes it
    worker = A3CWorker(
        crashing_envs(3), policy, link, worker_id=0, rollout_length=6, gamma=0.9, value_coef=0.5,
        entropy_coef=0.01, max_grad_norm=0.5, cut_at_episode_end=cut_at_episode_end, pushes_in_flight=1,
    )  # fmt: skip
    report = worker.run(max_segments=8)

    reference = small_model(0)
    plain = RolloutWorker(
        crashing_envs(3), ActorCriticPolicy(small_model(0), seed=5, keep_log_probs=False), worker_id=0,
        rollout_length=6, cut_at_episode_end=cut_at_episode_end,
    )  # fmt: skip
    plain.policy.version = 0
    chunks = [plain.collect() for _ in range(8)]
    lengths = [r.chunk.num_steps for r in chunks]
    if cut_at_episode_end:
        assert min(lengths) < 6 and max(lengths) <= 6
        for r in chunks:  # a chunk ends at its first episode end, or after rollout_length steps
            ends = (r.chunk.terminated | r.chunk.truncated).any(axis=1)
            assert not ends[:-1].any() and (ends[-1] or r.chunk.num_steps == 6)
    else:
        assert lengths == [6] * 8
    assert any(r.chunk.restarted is not None for r in chunks) and any(len(r.chunk.final_obs) for r in chunks)
    assert all(r.chunk.log_probs is None for r in chunks)  # A3C's loss recomputes them
    assert report.env_steps == sum(r.chunk.size for r in chunks)
    assert report.env_restarts == sum(r.env_restarts for r in chunks)
    np.testing.assert_array_equal(report.episodes.returns, [e["return"] for r in chunks for e in r.episodes])
    assert len(link.pushed) == 8
    for (grad, version), rollout in zip(link.pushed, chunks, strict=True):
        assert version == rollout.chunk.policy_version == 0
        reference.zero_grad(set_to_none=True)
        chunk_loss(reference, rollout.chunk, 0.9, 0.5, 0.01).loss.backward()
        torch.nn.utils.clip_grad_norm_(reference.parameters(), 0.5)
        np.testing.assert_array_equal(grad, flatten_grads(reference))


def test_a_policy_that_keeps_no_log_probs_samples_the_same_actions():
    """keep_log_probs=False (A3C's workers) only skips recording the log-probabilities: with the same seed
    and weights it samples what the default policy samples, and its chunks carry no log_probs."""
    obs = np.random.default_rng(0).normal(size=(5, 4)).astype(np.float32)
    keeping, sparing = (
        ActorCriticPolicy(small_model(1), seed=3),
        ActorCriticPolicy(small_model(1), seed=3, keep_log_probs=False),
    )
    for _ in range(50):
        np.testing.assert_array_equal(keeping.act(obs), sparing.act(obs))
        assert keeping.last_log_probs is not None and keeping.last_log_probs.shape == (5,)
        assert sparing.last_log_probs is None

"""R2D2: the sequence adder, sequence replay (frame de-duplication, priorities, snapshots), the recurrent
epsilon-greedy policy and the worker's recorded states, the loss (value rescaling, burn-in, n-step double-Q,
priorities) and the config's refusals."""

import numpy as np
import pytest
import torch

from raylab.algos.dqn.r2d2 import R2D2, r2d2_loss, value_rescale, value_rescale_inverse
from raylab.builders import build_learner, build_rollout_worker
from raylab.builders.components import build_rate_limiter, build_replay, replay_shard_capacity
from raylab.envs import env_spaces
from raylab.errors import ConfigError
from raylab.models.factory import RecurrentQNetwork, build_q_network
from raylab.replay.buffer import ReplayBuffer, SequenceLayout
from raylab.replay.sequences import SequenceAdder
from raylab.replay.snapshot import load_snapshot, save_snapshot
from raylab.types import Chunk, SequenceBatch
from tests.conftest import FAKE, make_config
from tests.unit.test_frames import StackedEnvs

BURN, TRACE, PERIOD = 2, 4, 3
M = BURN + TRACE


# -- a synthetic stream with the worker's recorded states ------------------------------------------------------


def make_stream(steps, envs, seed, end_prob=0.12, crash_at=None):
    """Unique observations (obs[t, e] = 1000 t + e + 1), random episode ends, and the state a worker would record
    ``period`` steps into each episode: state(p, e) = [p, e] (any value the test can recognise)."""
    rng = np.random.default_rng(seed)
    obs = (1000 * np.arange(steps + 1)[:, None] + np.arange(envs)[None, :] + 1).astype(np.float32)[..., None]
    term = rng.random((steps, envs)) < end_prob / 2
    trunc = (rng.random((steps, envs)) < end_prob / 2) & ~term
    restarted = np.zeros((steps, envs), bool)
    if crash_at is not None:
        restarted[crash_at] = True
        trunc[crash_at] = True
        term[crash_at] = False
    finals = {(t, e): -obs[t + 1, e] for t, e in zip(*np.nonzero(trunc & ~restarted), strict=True)}
    since = np.zeros(envs, np.int64)
    recorded = {}  # (position, env) -> state
    for t in range(steps):
        ended = term[t] | trunc[t]
        since[ended] = 0
        since[~ended] += 1
        for e in np.flatnonzero(~ended & (since % PERIOD == 0)):
            recorded[(t + 1, int(e))] = np.array([t + 1, e], np.float32)
    return dict(obs=obs, term=term, trunc=trunc, restarted=restarted, finals=finals, recorded=recorded)


def chunks_of(stream, length, worker_id=0, seq0=0):
    obs, term, trunc = stream["obs"], stream["term"], stream["trunc"]
    steps, envs = term.shape
    out = []
    for k, start in enumerate(range(0, steps - length + 1, length)):
        end = start + length
        idx = [(t, e) for (t, e) in sorted(stream["finals"]) if start <= t < end]
        core = [(p, e) for (p, e) in sorted(stream["recorded"]) if start < p <= end]
        restarted = stream["restarted"][start:end]
        out.append(Chunk(
            obs=obs[start : end + 1], actions=np.tile(np.arange(start, end)[:, None], (1, envs)),
            rewards=(obs[start:end, :, 0] / 1000).astype(np.float32), terminated=term[start:end],
            truncated=trunc[start:end],
            final_obs=np.array([stream["finals"][i] for i in idx], np.float32).reshape(-1, 1),
            final_index=np.array([(t - start, e) for t, e in idx], np.int64).reshape(-1, 2),
            policy_version=0, worker_id=worker_id, seq=seq0 + k,
            restarted=restarted if restarted.any() else None,
            initial_state=np.zeros((envs, 2), np.float32) if start == 0 else np.full((envs, 2), 7.0, np.float32),
            core_states=np.array([stream["recorded"][c] for c in core], np.float32).reshape(-1, 2),
            core_index=np.array([(p - start, e) for p, e in core], np.int64).reshape(-1, 2),
        ))  # fmt: skip
    return out


def reference(stream, steps):
    """Every sequence the adder must emit from the first ``steps`` steps: (start, env) -> (length, burn_in,
    terminal, state, bootstrap obs)."""
    term, trunc, restarted = stream["term"], stream["trunc"], stream["restarted"]
    envs = term.shape[1]
    out = {}
    for e in range(envs):
        starts = [(0, 0, np.zeros(2, np.float32))]
        starts += [(t + 1, 0, np.zeros(2, np.float32)) for t in range(steps) if term[t, e] or trunc[t, e]]
        starts += [(p, BURN, s) for (p, ee), s in stream["recorded"].items() if ee == e and p <= steps]
        for p, burn, state in starts:
            q = next((t for t in range(p, min(p + M, steps)) if term[t, e] or trunc[t, e]), None)
            if q is None:
                if p + M > steps:
                    continue  # not complete yet
                length, terminal, boot = M, False, stream["obs"][p + M, e]
            elif restarted[q, e]:
                length, terminal, boot = q - p, False, stream["obs"][q, e]
            else:
                length, terminal = q + 1 - p, bool(term[q, e])
                boot = stream["finals"][(q, e)] if trunc[q, e] else stream["obs"][q + 1, e]
            if length <= burn:
                continue
            out[(p, e)] = (length, burn, terminal, state, boot)
    return out


def emitted(seqs):
    """(start, env) -> (length, burn_in, terminal, state, bootstrap obs) of emitted sequences, checking layout."""
    out = {}
    for j in range(len(seqs)):
        first = seqs.obs[j, 0, 0]
        p, e = int(first // 1000), int(first % 1000) - 1
        length = int(seqs.length[j])
        np.testing.assert_array_equal(seqs.obs[j, :length, 0], 1000 * np.arange(p, p + length) + e + 1)
        np.testing.assert_array_equal(seqs.actions[j, :length], np.arange(p, p + length))
        assert (seqs.actions[j, length:] == 0).all() and (seqs.rewards[j, length:] == 0).all()
        assert (seqs.obs[j, length:] == seqs.obs[j, length]).all()  # padded with the bootstrap observation
        assert (p, e) not in out
        out[(p, e)] = (length, int(seqs.burn_in[j]), bool(seqs.terminal[j]), seqs.state[j], seqs.obs[j, length, 0])
    return out


def assert_same(got, want):
    assert set(got) == set(want)
    for key, (length, burn, terminal, state, boot) in want.items():
        g = got[key]
        assert g[:3] == (length, burn, terminal), key
        np.testing.assert_array_equal(g[3], state)
        assert g[4] == boot[0] if np.ndim(boot) else g[4] == boot


@pytest.mark.parametrize("chunk_len", [1, 5, 16])
def test_adder_starts_at_episode_starts_and_every_period_never_crossing_an_episode(chunk_len):
    stream = make_stream(80, 3, seed=1)
    adder = SequenceAdder(BURN, TRACE, 2)
    chunks = chunks_of(stream, chunk_len)
    got = {}
    for chunk in chunks:
        got.update(emitted(adder.add(chunk)))
    steps = len(chunks) * chunk_len
    want = reference(stream, steps)
    assert_same(got, want)
    assert any(b == 0 for _, b, *_ in got.values()) and any(b == BURN for _, b, *_ in got.values())
    assert any(length < M for length, *_ in got.values()) and any(t for _, _, t, *_ in got.values())


def test_a_crash_ends_the_sequence_before_the_crashed_step():
    stream = make_stream(40, 2, seed=3, end_prob=0.0, crash_at=7)
    adder = SequenceAdder(BURN, TRACE, 2)
    got = {}
    for chunk in chunks_of(stream, 10):
        got.update(emitted(adder.add(chunk)))
    assert_same(got, reference(stream, 40))
    # the sequence from 3 ends before the crash at 7: 4 steps, bootstrapping from obs[7] (real), not terminal
    assert got[(3, 0)][:3] == (4, BURN, False) and got[(3, 0)][4] == 7001
    assert got[(0, 0)][:3] == (6, 0, False)
    assert (6, 0) not in got and adder.skipped >= 2  # 6 -> crash at 7: one step, all burn-in: not stored
    assert (8, 0) in got and got[(8, 0)][1] == 0  # a fresh episode after the crash


def test_a_gap_in_seq_drops_the_carry_and_a_fresh_stream_starts_from_its_initial_state():
    stream = make_stream(40, 2, seed=4, end_prob=0.0)
    chunks = chunks_of(stream, 10)
    adder = SequenceAdder(BURN, TRACE, 2)
    adder.add(chunks[0])
    out = adder.add(chunks[2])  # chunk 1 lost: a restarted worker
    assert adder.dropped_streams == 1
    got = emitted(out)
    # the fresh stream starts at position 20 from the chunk's initial state (non-zero: burn-in), and nothing
    # spans the gap
    assert all(p >= 20 for p, _ in got)
    assert got[(20, 0)][1] == BURN and (got[(20, 0)][3] == 7.0).all()
    more = emitted(adder.add(chunks[3]))
    assert all(p > 20 for p, _ in more) and adder.dropped_streams == 1


def test_the_stored_state_is_the_state_the_worker_acted_from(tmp_path):
    """A real worker and recurrent policy: the states it records (every period steps into each episode) are the
    states its network reaches when replayed from each episode's start, and the adder stores exactly those."""
    cfg = make_config(
        tmp_path, *FAKE, "algo=dqn", "model.recurrent=gru", "model.recurrent_size=8", "model.hidden_sizes=[8]",
        "topology=local", "topology.envs_per_worker=3", "topology.rollout_length=7", "algo.sequence.burn_in=2",
        "algo.sequence.trace=4", "algo.sequence.period=3", "env.options.episode_length=11",
    )  # fmt: skip
    spaces = env_spaces(cfg.env)
    worker = build_rollout_worker(cfg, spaces, 0)
    q_net = worker.policy.q_net
    assert isinstance(q_net, RecurrentQNetwork) and worker.record_state_every == 3
    chunks = [worker.sample()[0] for _ in range(6)]
    obs = np.concatenate([c.obs[:-1] for c in chunks] + [chunks[-1].obs[-1:]])
    ended = np.concatenate([c.terminated | c.truncated for c in chunks])
    # the state every slot acted from at every step, replayed from zeros with resets
    states = np.zeros((len(obs), 3, q_net.state_size), np.float32)
    state = torch.zeros(3, q_net.state_size)
    with torch.no_grad():
        for t in range(len(obs) - 1):
            states[t] = state.numpy()
            _, state = q_net.step(torch.from_numpy(obs[t]), state)
            state = state * torch.from_numpy(~ended[t]).unsqueeze(1)
        states[-1] = state.numpy()
    since = np.zeros(3, np.int64)
    want = []
    for t in range(len(obs) - 1):
        since[ended[t]] = 0
        since[~ended[t]] += 1
        want += [(t + 1, int(e)) for e in np.flatnonzero(~ended[t] & (since % 3 == 0))]
    got = [(7 * k + int(t), int(e)) for k, c in enumerate(chunks) for t, e in c.core_index]
    assert got == want and len(want) > 0
    recorded = np.concatenate([c.core_states for c in chunks])
    for (p, e), row in zip(got, recorded, strict=True):
        np.testing.assert_allclose(row, states[p, e], atol=1e-6)
    for k, c in enumerate(chunks):
        np.testing.assert_allclose(c.initial_state, states[7 * k], atol=1e-6)
    adder = SequenceAdder(2, 4, q_net.state_size)
    seqs = [adder.add(c) for c in chunks]
    mid = np.concatenate([s.state[s.burn_in > 0] for s in seqs])
    assert len(mid) > 0 and all(any(np.array_equal(m, r) for r in recorded) for m in mid)
    starts = np.concatenate([s.state[s.burn_in == 0] for s in seqs])
    assert len(starts) > 0 and (starts == 0).all()  # episode starts: the exact zero state, no burn-in


# -- replay: storage, de-duplication, snapshots, priorities ---------------------------------------------------


def stacked_chunks(envs, count, seed=0):
    """StackedEnvs chunks with recorded states every PERIOD steps of each episode (as a worker records them)."""
    source = StackedEnvs(envs, k=4, frame=(1, 6, 6), end_prob=0.08, seed=seed)
    since = np.zeros(envs, np.int64)
    out = []
    for seq in range(count):
        chunk = source.chunk(8, 0, seq)
        chunk.initial_state = np.zeros((envs, 2), np.float32) if seq == 0 else np.ones((envs, 2), np.float32)
        index = []
        for t in range(8):
            ended = chunk.terminated[t] | chunk.truncated[t]
            since[ended] = 0
            since[~ended] += 1
            index += [(t + 1, int(e)) for e in np.flatnonzero(~ended & (since % PERIOD == 0))]
        chunk.core_index = np.array(index, np.int64).reshape(-1, 2)
        chunk.core_states = np.arange(2 * len(index), dtype=np.float32).reshape(-1, 2)
        out.append(chunk)
    return out


def sequence_buffers(capacity, prioritized=None):
    layout = SequenceLayout(BURN, TRACE, PERIOD, 2)
    shape, u8 = (4, 6, 6), np.dtype(np.uint8)
    plain = ReplayBuffer(capacity, shape, u8, n_step=3, gamma=0.9, seed=0, sequence=layout, prioritized=prioritized)
    dedup = ReplayBuffer(
        capacity, shape, u8, n_step=3, gamma=0.9, seed=0, sequence=layout, frame_stack=4, dedup=True,
        prioritized=prioritized,
    )  # fmt: skip
    return plain, dedup


def test_dedup_sequences_round_trip_and_free_every_frame_they_no_longer_hold():
    plain, dedup = sequence_buffers(40)
    for chunk in stacked_chunks(3, 30):
        assert plain.add_chunk(chunk) == dedup.add_chunk(chunk) > 0
    assert len(plain) == len(dedup) == 40  # wrapped around: evictions decref'd
    rows = dedup.storage.read(np.arange(40))
    np.testing.assert_array_equal(dedup.dedup.pool.gather(rows["obs"]), plain.storage.columns["obs"][:40])
    for name in ("actions", "rewards", "state", "burn_in", "length", "terminal"):
        np.testing.assert_array_equal(rows[name], plain.storage.columns[name][:40])
    pool = dedup.dedup.pool
    referenced = set(dedup.storage.columns["obs"].ravel().tolist())
    for state in dedup.dedup._workers.values():
        for _, ids in state.holds:
            referenced |= set(ids.tolist())
    assert pool.live == len(referenced)  # nothing leaked, nothing freed too early
    batch = dedup.sample(5)
    assert isinstance(batch, SequenceBatch) and batch.obs.shape == (5, M + 1, 4, 6, 6)
    # about PERIOD new frames per sequence, not (M + 1) stacks of 4
    assert pool.live < 40 * (M + 1)


def test_sequence_snapshot_round_trip_and_it_is_refused_by_a_transition_replay(tmp_path):
    from raylab.replay.buffer import PrioritizedSpec

    _, dedup = sequence_buffers(40, PrioritizedSpec(alpha=0.9, beta=0.6))
    for chunk in stacked_chunks(3, 20):
        dedup.add_chunk(chunk)
    dedup.update_priorities(dedup.keys[:10], np.linspace(0.1, 5, 10))
    path = save_snapshot(tmp_path / "replay_0_step_1.npz", dedup)
    _, restored = sequence_buffers(40, PrioritizedSpec(alpha=0.9, beta=0.6))
    assert load_snapshot(path, restored) == len(dedup)
    a, b = dedup.sample_many(4, 2), restored.sample_many(4, 2)
    for x, y in zip(a, b, strict=True):
        np.testing.assert_array_equal(x.obs, y.obs)
        np.testing.assert_array_equal(x.indices, y.indices)
        np.testing.assert_array_equal(x.weights, y.weights)
    transitions = ReplayBuffer(40, (4, 6, 6), np.dtype(np.uint8), n_step=3, gamma=0.9, seed=0, frame_stack=4,
                               dedup=True, prioritized=PrioritizedSpec())  # fmt: skip
    with pytest.raises(ConfigError, match=r"model\.recurrent"):
        load_snapshot(path, transitions)


def test_priorities_are_per_sequence_by_key():
    from raylab.replay.buffer import PrioritizedSpec

    plain, _ = sequence_buffers(20, PrioritizedSpec(alpha=1.0, beta=0.6))
    for chunk in stacked_chunks(2, 12):
        plain.add_chunk(chunk)
    td = np.zeros(len(plain))
    td[3] = 100.0
    plain.update_priorities(plain.keys[: len(plain)], td)
    batch = plain.sample(64)
    assert (batch.indices == plain.keys[3]).mean() > 0.9


# -- the loss --------------------------------------------------------------------------------------------------


def test_value_rescaling_inverts_and_squashes():
    x = torch.linspace(-1000, 1000, 2001, dtype=torch.float64)
    for eps in (1e-3, 0.0):
        torch.testing.assert_close(value_rescale_inverse(value_rescale(x, eps), eps), x, rtol=1e-9, atol=1e-6)
    assert value_rescale(torch.tensor(99.0), 0.0).item() == pytest.approx(9.0)


def loss_case(**kw):
    """One sequence of m = 4 steps, 2 actions; online and target Q chosen so the targets are easy by hand."""
    q = torch.tensor([[1.0, 2.0], [3.0, 0.5], [0.0, 4.0], [2.0, 1.0], [5.0, 6.0]]).unsqueeze(1)  # [5, 1, 2]
    q_target = torch.tensor([[10.0, 20.0], [30.0, 5.0], [0.0, 40.0], [20.0, 10.0], [50.0, 60.0]]).unsqueeze(1)
    args = dict(
        q=q.clone().requires_grad_(True), q_target=q_target, actions=torch.tensor([[0], [1], [0], [1]]),
        rewards=torch.tensor([[1.0], [2.0], [3.0], [0.0]]), burn_in=torch.tensor([1]), length=torch.tensor([3]),
        terminal=torch.tensor([False]), gamma=0.5, n_step=2, rescale_eps=None, max_weight=0.9,
    )  # fmt: skip
    args.update(kw)
    return args


def test_the_loss_by_hand_with_burn_in_masked_and_a_short_n_step_at_the_end():
    args = loss_case()
    out = r2d2_loss(**args)
    # step 0 is burn-in; steps 1, 2 train; step 3 is padding (length 3)
    # online argmax: pos 0 -> 1, 1 -> 0, 2 -> 1, 3 -> 0 (bootstrap obs at length 3)
    # t=1: r1 + g r2 + g^2 Qt(3, argmax q(3)=0) = 2 + 0.5*3 + 0.25*20 = 8.5;    Q(1, a=1) = 0.5 -> delta 8.0
    # t=2: n=min(2, 3-2)=1: r2 + g Qt(3, 0) = 3 + 0.5*20 = 13;                   Q(2, a=0) = 0.0 -> delta 13.0
    deltas = torch.tensor([8.0, 13.0])
    torch.testing.assert_close(out.loss, 0.5 * (deltas**2).mean())
    torch.testing.assert_close(out.priorities, torch.tensor([0.9 * 13.0 + 0.1 * 10.5]))
    out.loss.backward()
    grad = args["q"].grad[:, 0]
    assert (grad[0] == 0).all() and (grad[3:] == 0).all()  # burn-in and padding get no gradient
    torch.testing.assert_close(grad[1], torch.tensor([0.0, -8.0 / 2]))
    # terminal at the end: the bootstrap at position 3 is dropped
    out = r2d2_loss(**loss_case(terminal=torch.tensor([True])))
    torch.testing.assert_close(out.priorities, torch.tensor([3.0]))  # deltas 3.5 - 0.5 and 3 - 0


def test_value_rescaling_wraps_the_target():
    out = r2d2_loss(**loss_case(rescale_eps=1e-3))
    h, hinv = value_rescale, value_rescale_inverse
    t1 = h(2 + 0.5 * 3 + 0.25 * hinv(torch.tensor(20.0), 1e-3), 1e-3)
    t2 = h(3 + 0.5 * hinv(torch.tensor(20.0), 1e-3), 1e-3)
    torch.testing.assert_close(out.loss, 0.5 * ((t1 - 0.5) ** 2 + (t2 - 0.0) ** 2) / 2)


def test_r2d2_learner_step_and_priorities_by_sequence(tmp_path):
    cfg = make_config(
        tmp_path, *FAKE, "algo=dqn", "model.recurrent=lstm", "model.recurrent_size=8", "model.hidden_sizes=[8]",
        "topology=local", "replay=prioritized", "algo.sequence.burn_in=2", "algo.sequence.trace=4",
        "algo.sequence.period=3", "learner.batch_size=4", "replay.min_size=4",
    )  # fmt: skip
    spaces = env_spaces(cfg.env)
    learner = build_learner(cfg, spaces)
    assert isinstance(learner.objective, R2D2) and not learner.fused
    assert "not fused" in learner.fused_reason
    replay = build_replay(cfg, spaces)
    worker = build_rollout_worker(cfg, spaces, 0)
    while len(replay) < 8:
        replay.add_chunk(worker.sample()[0])
    stats = learner.update_many(replay.sample_many(4, 2))
    assert stats.updates == 2 and stats.priorities is not None and len(stats.priorities) == 8
    assert np.isfinite(stats.metrics["loss"])
    assert stats.samples <= 2 * 4 * 6  # trained steps, not sequences
    assert replay_shard_capacity(cfg, spaces) == cfg.replay.capacity // 3
    limiter = build_rate_limiter(cfg, spaces)
    assert limiter.min_size == 4 + 6 * spaces.slots(cfg.topology.envs_per_worker) * cfg.topology.num_workers


def test_fused_true_is_refused_for_r2d2(tmp_path):
    cfg = make_config(tmp_path, *FAKE, "algo=dqn", "model.recurrent=gru", "topology=local", "learner.fused=true")
    with pytest.raises(ConfigError, match="R2D2"):
        build_learner(cfg, env_spaces(cfg.env))


@pytest.mark.parametrize(
    ("overrides", "match"),
    [
        (("algo.sequence.burn_in=5",), r"algo\.sequence sets R2D2"),
        (("model.recurrent=lstm", "algo.loss=quantile"), r"algo\.loss=quantile"),
        (("model.recurrent=lstm", "algo.sequence.period=100"), r"algo\.sequence\.period=100"),
        (("model.recurrent=lstm", "algo.sequence.priority_max_weight=2"), "priority_max_weight"),
    ],
)
def test_config_refusals_are_one_line(tmp_path, overrides, match):
    with pytest.raises(ConfigError, match=match) as err:
        make_config(tmp_path, *FAKE, "algo=dqn", "topology=local", *overrides)
    assert "\n" not in str(err.value)


def test_recurrent_q_network_unroll_equals_steps():
    torch.manual_seed(0)
    from raylab.config import ModelConfig
    from raylab.types import EnvSpaces

    spaces = EnvSpaces((3,), np.dtype(np.float32), 2, "Discrete(2)")
    net = build_q_network(ModelConfig(hidden_sizes=(8,), recurrent="lstm", recurrent_size=5), spaces)
    assert isinstance(net, RecurrentQNetwork) and net.state_size == 10
    obs = torch.randn(6, 4, 3)
    state = torch.randn(4, 10)
    q, last = net.unroll(obs, state)
    s = state
    for t in range(6):
        qt, s = net.step(obs[t], s)
        torch.testing.assert_close(q[t], qt)
    torch.testing.assert_close(last, s)

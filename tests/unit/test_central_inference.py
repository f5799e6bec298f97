"""Central batched inference without Ray (topology.inference=central): the inference server batches whatever
requests wait, a worker of two env splits acting through it builds the very chunks a local worker builds, DQN's
workers explore locally and send only their greedy slots, a dead inference actor is waited out, and the config
and plan say where it runs."""

from __future__ import annotations

import copy
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from raylab.algos.actor_critic import ActorCriticPolicy
from raylab.algos.dqn.policy import EpsilonSchedule
from raylab.builders.plans import build_plan
from raylab.config import EnvConfig, ModelConfig
from raylab.envs import env_spaces, make_vector_env
from raylab.errors import ConfigError
from raylab.hosts import InferenceHost
from raylab.models.factory import build_actor_critic
from raylab.remote.host import ActorSpec, remote_methods
from raylab.remote.inprocess import InProcessBackend, LocalClient
from raylab.rollout.acting import CentralActions
from raylab.rollout.inference import InferenceServer
from raylab.rollout.worker import RolloutWorker
from raylab.transport import Done
from tests.conftest import make_config

CARTPOLE = EnvConfig(family="gymnasium", id="CartPole-v1", max_episode_steps=8)
"""Episodes truncated every 8 steps at the latest: chunks hold final observations."""


def greedy_policy(net: torch.nn.Module) -> ActorCriticPolicy:
    return ActorCriticPolicy(copy.deepcopy(net), seed=0, greedy=True)


class Transport:
    """Immediate's reads; ``deaths`` replies fail as if the inference actor had died (then it is back, a life on)."""

    class ActorDied(Exception):
        pass

    def __init__(self, deaths: int = 0):
        self.deaths, self.life = deaths, 0

    def get(self, ref):
        if self.deaths:
            self.deaths -= 1
            raise self.ActorDied("the inference actor died")
        return ref.value

    def back(self, client, what):
        self.life += 1
        return self.life


def inference_client(policy, life: int = 0):
    """An InferenceHost in this process, behind the generic client, as a rollout actor sees it."""
    client = InProcessBackend().spawn(ActorSpec(InferenceHost, (lambda: InferenceServer(policy),)))
    return client


def test_a_worker_of_two_env_splits_acting_centrally_builds_the_chunks_of_a_local_worker():
    spaces = env_spaces(CARTPOLE)
    net = build_actor_critic(ModelConfig(hidden_sizes=(16,)), spaces)
    local = RolloutWorker(make_vector_env(CARTPOLE, 4, seed=3, worker_index=1), greedy_policy(net), 1, 10)
    splits = [make_vector_env(CARTPOLE, 2, seed=3, worker_index=2 + s) for s in range(2)]  # worker 1's halves
    actions = CentralActions(inference_client(greedy_policy(net)), Transport(), splits=2, slots=4)
    central = RolloutWorker(splits, greedy_policy(net), 1, 10, actions=actions)
    finals = 0
    for _ in range(3):
        (a, sa), (b, sb) = local.sample(), central.sample()
        for field in ("obs", "actions", "rewards", "terminated", "truncated", "final_obs", "final_index"):
            np.testing.assert_array_equal(getattr(a, field), getattr(b, field), err_msg=field)
        np.testing.assert_array_equal(sa.episodes.returns, sb.episodes.returns)
        assert (a.seq, a.worker_id) == (b.seq, b.worker_id) and sa.num_steps == sb.num_steps == 40
        finals += len(a.final_index)
    assert finals > 0 and actions.calls == 2 * 30  # one call per split and step; truncations were compared
    assert sb.inference_life == 0 and sa.inference_life is None


class Gate:
    """A policy whose first batch waits until the test releases it, so that later requests queue meanwhile;
    its action for each row is the row's first value (each caller can tell its own rows)."""

    version, last_log_probs = 7, None

    def __init__(self):
        self.entered, self.release = threading.Event(), threading.Event()

    def act(self, obs):
        if not self.entered.is_set():
            self.entered.set()
            assert self.release.wait(60)
        return obs[:, 0].astype(np.int64)

    def set_weights(self, weights, exact=False):
        return False


def test_the_server_acts_once_on_every_request_that_waited_and_answers_each_with_its_rows():
    gate = Gate()
    server = InferenceServer(gate)
    replies: dict[int, tuple] = {}

    def call(k: int, rows: int) -> None:
        replies[k] = server.infer(np.full((rows, 3), k, np.float32))

    threads = [threading.Thread(target=call, args=(0, 2))]
    threads[0].start()
    assert gate.entered.wait(60)  # the first batch is being acted on
    threads += [threading.Thread(target=call, args=(k, k)) for k in range(1, 5)]
    for t in threads[1:]:
        t.start()
    deadline = time.monotonic() + 60
    while len(server._queue) < 4:  # every later request waits for the next batch
        assert time.monotonic() < deadline, "the requests did not queue"
        time.sleep(0.001)
    gate.release.set()
    for t in threads:
        t.join(60)
    for k, (actions, log_probs, version) in replies.items():
        assert actions.tolist() == [k] * (k or 2) and log_probs is None and version == 7
    stats = server.stats()
    assert (stats.batches, stats.requests, stats.rows) == (2, 5, 2 + 1 + 2 + 3 + 4)
    assert stats.rows_per_batch == 6.0


class Explorer:
    """What CentralActions takes of an epsilon-greedy policy."""

    def __init__(self, epsilons):
        self.epsilons = EpsilonSchedule(final=np.asarray(epsilons, np.float64))
        self.rng, self.num_actions, self.steps = np.random.default_rng(0), 5, 0


class Counting:
    """An inference client whose greedy action is 4 for every row; it counts the rows it was sent."""

    def __init__(self):
        self.rows: list[int] = []

    def infer(self, obs):
        self.rows.append(len(obs))
        return Done((np.full(len(obs), 4, np.int64), None, 3, 0))


def test_dqn_workers_explore_with_their_own_epsilons_and_send_only_their_greedy_slots():
    client = Counting()
    actions = CentralActions(client, Transport(), splits=2, slots=4, explorer=Explorer([1.0, 0.0, 1.0, 1.0]))
    first = actions.wait(actions.submit(0, [np.zeros((2, 3), np.float32)]))  # slots 0 (explores) and 1 (greedy)
    second = actions.wait(actions.submit(1, [np.zeros((2, 3), np.float32)]))  # slots 2 and 3: both explore
    assert client.rows == [1]  # the greedy slot alone was sent; a split where every slot explores sends nothing
    assert first.actions[0][1] == 4 and first.version == 3
    assert second.version == 3 and all(0 <= a < 5 for a in second.actions[0])
    assert actions.explorer is not None and actions.explorer.steps == 1  # one vector step of the worker


def test_a_dead_inference_actor_is_waited_out_and_the_same_observations_sent_again():
    spaces = env_spaces(CARTPOLE)
    net = build_actor_critic(ModelConfig(hidden_sizes=(16,)), spaces)
    transport = Transport(deaths=1)
    actions = CentralActions(inference_client(greedy_policy(net)), transport, splits=1, slots=2)
    worker = RolloutWorker([make_vector_env(CARTPOLE, 2, seed=0)], greedy_policy(net), 0, 5, actions=actions)
    chunk, stats = worker.sample()
    assert chunk.num_steps == 5 and actions.resent == 1 and actions.calls == 6
    assert stats.inference_life == 1  # the driver counts the restart by it, once


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (("+experiment=cartpole_a3c", "topology.inference=central"), "topology=a3c acts in its own workers"),
        (("+experiment=cartpole_appo", "topology.inference_actors=2"), "add topology.inference=central"),
        (("+experiment=cartpole_appo", "topology.env_splits=2"), "add topology.inference=central"),
        (("+experiment=cartpole_appo", "topology.inference=central", "topology.env_splits=3"), "must divide"),
        (("+experiment=cartpole_appo", "topology.inference=remote"), "choose local or central"),
        (
            ("+experiment=stateless_cartpole_appo_lstm", "topology.inference=central"),
            "serves feed-forward policies",
        ),
        (("+experiment=snake_arena_rivals_ppo", "topology.inference=central"), "serves one policy"),
    ],
)
def test_central_inference_where_it_cannot_run_fails_in_one_line_naming_the_fix(tmp_path, overrides, message):
    with pytest.raises(ConfigError, match=message):
        make_config(tmp_path, *overrides, "logger.console=false")


def test_the_plan_names_each_workers_inference_actor_and_shares_the_gpu_with_the_learner(tmp_path):
    cfg = make_config(
        tmp_path, "+experiment=cartpole_appo", "topology.inference=central", "topology.num_workers=3",
        "topology.inference_actors=2", "topology.envs_per_worker=8",
    )  # fmt: skip
    plan = build_plan(cfg, env_spaces(cfg.env))
    flow = plan.flow
    assert len(flow.inference) == 2 and plan.actor_counts["inference"] == 2
    # each worker names every inference actor, its own first: it sends to the first on its machine
    assert [spec.unbound for spec in flow.workers] == [
        [f"inference_{i % 2}", f"inference_{(i + 1) % 2}", "transport"] for i in range(3)
    ]
    assert flow.inference[0].unbound == ["learner", "transport"]
    # actor 0 serves workers 0 and 2, two env splits each: 4 requests at once, and room for the driver's calls
    assert [spec.resources.concurrency for spec in flow.inference] == [2 * 2 + 4, 1 * 2 + 4]
    assert [spec.resources.gpu_if_any for spec in flow.inference] == [0.25, 0.25]
    assert flow.policies.plans[0].learner.resources.gpu_if_any == 0.5
    assert [name for name, _ in plan.demands()].count("inference actor 1") == 1
    bound = flow.workers[2].bind({"inference_0": "client 0", "inference_1": "client 1", "transport": "t"})
    assert bound.args[2:] == (("client 0", "client 1"), "t") and not bound.unbound


class Machine:
    """An inference actor's client that says only which machine it runs on (None: it is dead)."""

    def __init__(self, where):
        self.where = where

    def machine(self):
        if self.where is None:
            raise Transport.ActorDied("dead")
        return type("Ref", (), {"value": self.where})()


@pytest.mark.parametrize(
    ("machines", "chosen"),
    [
        (["here", "there", "here"], "own"),  # its own runs here: kept
        (["there", "elsewhere", "here"], "actor 2"),  # the first other one here
        (["there", None, "here"], "actor 2"),  # a dead one is passed over
        (["there", "elsewhere"], "own"),  # none here: its own, over the network
    ],
)
def test_a_worker_sends_to_the_first_inference_actor_on_its_machine(monkeypatch, machines, chosen):
    from raylab.rollout import shm

    monkeypatch.setattr(shm, "this_machine", lambda: "here")
    clients = [Machine(m) for m in machines]
    names = ["own"] + [f"actor {k}" for k in range(1, len(machines))]
    others = [(c, n, k) for k, (c, n) in enumerate(zip(clients, names, strict=True)) if k]
    actions = CentralActions(clients[0], Transport(), splits=1, slots=2, name="own", index=0, others=others)
    assert not actions.placed
    actions._place()
    k = names.index(chosen)
    assert actions.placed and actions.name == chosen and actions.client is clients[k] and actions.index == k


def test_a_worker_on_the_inference_actors_machine_sends_through_shared_memory_and_builds_the_same_chunks():
    spaces = env_spaces(CARTPOLE)
    net = build_actor_critic(ModelConfig(hidden_sizes=(16,)), spaces)
    local = RolloutWorker(make_vector_env(CARTPOLE, 4, seed=5, worker_index=0), greedy_policy(net), 0, 10)
    host = InferenceHost(lambda: InferenceServer(greedy_policy(net)))
    client = LocalClient(host, remote_methods(InferenceHost))
    splits = [make_vector_env(CARTPOLE, 2, seed=5, worker_index=s) for s in range(2)]
    actions = CentralActions(client, Transport(), splits=2, slots=4, shared_memory=True, key="w0")
    central = RolloutWorker(splits, greedy_policy(net), 0, 10, actions=actions)
    try:
        for _ in range(2):
            (a, _), (b, _) = local.sample(), central.sample()
            for field in ("obs", "actions", "rewards", "terminated", "truncated", "final_obs", "final_index"):
                np.testing.assert_array_equal(getattr(a, field), getattr(b, field), err_msg=field)
        assert all(c for c in actions.channels) and actions.calls == 2 * 20
        assert host.server.stats().requests == 40  # every request reached the server through a channel
    finally:
        for channel in actions.channels:
            channel.close()
        host.channels.close()


def test_a_channel_answers_a_failed_request_with_an_error_the_worker_raises():
    from raylab.rollout.shm import ChannelError

    class Failing:
        version, last_log_probs = 0, None

        def act(self, obs):
            raise ValueError("a bad observation")

        def set_weights(self, weights, exact=False):
            return False

    host = InferenceHost(lambda: InferenceServer(Failing()))
    from raylab.rollout.shm import ShmChannel, this_machine

    name = host.channels.open("w0-0", 2, (3,), "<f4", this_machine(), ((), "<i8"))
    channel = ShmChannel(name, 2, (3,), np.dtype(np.float32))
    # attached: no name is left behind, whichever side crashes later
    assert not Path(f"/dev/shm/{name}").exists() and not Path(channel.request_pipe).exists()
    try:
        channel.send(np.zeros((2, 3), np.float32))
        with pytest.raises(ChannelError, match="the inference actor failed on this request"):
            channel.receive(timeout=30)
        assert host.channels.open("w1-0", 2, (3,), "<f4", "another machine", ((), "<i8")) is None
        assert host.channels.alive("w0-0")  # a failed request is answered; the channel goes on

    finally:
        channel.close()
        host.channels.close()


class SameLife(Transport):
    """The actor never died: every check finds the life the channels were made in."""

    def back(self, client, what):
        return 0


class Boxes:
    """A policy of Box actions: each row's action is (its first value, -its first value)."""

    version, last_log_probs = 4, None

    def act(self, obs):
        return np.stack([obs[:, 0], -obs[:, 0]], axis=1).astype(np.float32)

    def set_weights(self, weights, exact=False):
        return False


def test_box_actions_come_back_through_a_channel_and_a_dead_channel_is_replaced(monkeypatch):
    import raylab.rollout.acting as acting

    monkeypatch.setattr(acting, "LIVENESS_S", 0.05)
    host = InferenceHost(lambda: InferenceServer(Boxes()))
    client = LocalClient(host, remote_methods(InferenceHost))
    actions = CentralActions(client, SameLife(), splits=1, slots=3, shared_memory=True, key="w0",
                             action=((2,), "<f4"))  # fmt: skip
    obs = np.arange(6, dtype=np.float32).reshape(3, 2)
    try:
        first = actions.wait(actions.submit(0, [obs]))
        np.testing.assert_array_equal(first.actions[0], [[0, -0], [2, -2], [4, -4]])
        assert first.version == 4 and actions.resent == 0
        host.channels._open["w0-0"][1].set()  # the channel's thread ends (as one that failed would)
        deadline = time.monotonic() + 30
        while host.channels.alive("w0-0"):
            assert time.monotonic() < deadline
            time.sleep(0.01)
        again = actions.wait(actions.submit(0, [obs + 1]))  # found dead, a new channel, sent again
        np.testing.assert_array_equal(again.actions[0], [[1, -1], [3, -3], [5, -5]])
        assert actions.resent == 1 and host.channels.alive("w0-0")
    finally:
        for channel in actions.channels:
            channel.close()
        host.channels.close()

"""Several policies in one run, without Ray: the mapping from agents to policies and its errors, each policy's
config, per-policy batched inference, cutting a chunk into one chunk per policy, and the per-policy metrics."""

from __future__ import annotations

import numpy as np
import pytest

from raylab.config.policies import SEED_STRIDE, policy_config, policy_map
from raylab.driver.progress import Progress
from raylab.envs.snake_arena import SnakeArena
from raylab.errors import ConfigError
from raylab.rollout.policies import PolicySet, split_chunk
from raylab.rollout.worker import RolloutWorker
from raylab.types import Chunk, EnvSpaces, Episodes, LearnerStats, PolicyRollout, RolloutStats, Weights
from tests.conftest import make_config

RIVALS = ("+experiment=snake_arena_rivals_ppo", "logger.console=false")
LEARNER_DEFAULTS = ("learner.lr=0.001", "learner.adam_eps=1e-8", "learner.max_grad_norm=10.0")
"""The experiment's Adam settings back at their defaults: algo=a3c has no Learner and refuses them off it."""
ARENA4 = EnvSpaces(
    (410,), np.dtype(np.float32), 3, "Discrete(3)", agents=4, agent_ids=tuple(f"snake_{i}" for i in range(4))
)


def test_the_mapping_sends_each_agent_to_the_first_pattern_that_matches(tmp_path):
    cfg = make_config(tmp_path, *RIVALS)
    pmap = policy_map(cfg, ARENA4)
    assert pmap.names == ("red", "blue") and pmap.agent_policy == (0, 1, 0, 1)
    assert pmap.slots(0, envs=2).tolist() == [0, 2, 4, 6] and pmap.slots(1, envs=2).tolist() == [1, 3, 5, 7]
    assert pmap.slot_count(1, envs=3) == 6
    first = make_config(tmp_path, "+experiment=snake_arena_rivals_ppo", "+policy_mapping.snake_0=blue")
    # snake_[02] comes first in the experiment's mapping: it still wins for snake_0
    assert policy_map(first, ARENA4).agent_policy == (0, 1, 0, 1)


def test_one_policy_when_none_are_configured(tmp_path):
    pmap = policy_map(make_config(tmp_path, "+experiment=snake_arena_ppo"), ARENA4)
    assert not pmap.several and pmap.agent_policy == (0, 0, 0, 0)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (("+policy_mapping.snake_0=green",), "policy_mapping.snake_0=green names no policy"),
        (
            ("algo=a3c", "~algo.gae_lambda", "~algo.epochs", "~algo.minibatches", "topology=a3c", *LEARNER_DEFAULTS),
            "algo=a3c runs one policy for every agent",
        ),
        (("+policies.blue.algo.name=appo",), "every policy runs the run's algo=ppo"),
        (("+policies.blue.learner.lrr=0.1",), "unknown config key 'policies.blue.learner.lrr'"),
        (("+policies.blue.replay.num_shards=2",), "every policy has the run's replay.num_shards=1"),
        (("~policy_mapping",), "need policy_mapping"),
    ],
)
def test_bad_policy_configs_fail_in_one_line_naming_the_fix(tmp_path, overrides, message):
    with pytest.raises(ConfigError, match=message.replace("[", r"\[").replace("(", r"\(")) as err:
        make_config(tmp_path, *RIVALS, *overrides)
    assert "\n" not in str(err.value)


def test_mapping_errors_that_need_the_envs_agents(tmp_path):
    unmapped = make_config(
        tmp_path, *RIVALS, "~policy_mapping", "+policy_mapping={snake_0: red, snake_1: red, snake_2: blue}"
    )
    with pytest.raises(ConfigError, match="agent snake_3 matches no policy_mapping pattern"):
        policy_map(unmapped, ARENA4)
    idle = make_config(tmp_path, *RIVALS, "~policy_mapping", "+policy_mapping={snake_*: red}")
    with pytest.raises(ConfigError, match="policy blue acts for no agent"):
        policy_map(idle, ARENA4)
    single = EnvSpaces((4,), np.dtype(np.float32), 2, "Discrete(2)")
    with pytest.raises(ConfigError, match="policies need a multi-agent env"):
        policy_map(make_config(tmp_path, *RIVALS), single)


def test_each_policy_config_merges_its_overrides_and_seeds_apart(tmp_path):
    cfg = make_config(
        tmp_path, *RIVALS, "seed=3", "+policies.red.model.hidden_sizes=[16]", "+policies.red.replay.capacity=5000"
    )
    red, blue = policy_config(cfg, "red"), policy_config(cfg, "blue")
    assert red.replay.capacity == 5000 and blue.replay.capacity == cfg.replay.capacity
    assert red.model.hidden_sizes == (16,) and blue.model.hidden_sizes == cfg.model.hidden_sizes
    assert blue.learner.lr == 0.0007 and red.learner.lr == cfg.learner.lr
    assert (red.seed, blue.seed) == (3, 3 + SEED_STRIDE)
    assert red.policies == {} and red.algo == cfg.algo and red.env == cfg.env


class Constant:
    """A policy that always picks ``action`` and logs ``log_prob``; counts the batch sizes it saw."""

    def __init__(self, action: int, log_prob: float):
        self.action, self.log_prob, self.version, self.batches = action, log_prob, 0, []
        self.last_log_probs: np.ndarray | None = None

    def act(self, obs: np.ndarray) -> np.ndarray:
        self.batches.append(len(obs))
        self.last_log_probs = np.full(len(obs), self.log_prob, np.float32)
        return np.full(len(obs), self.action, np.int64)

    def set_weights(self, weights: Weights, exact: bool = False) -> bool:
        if weights.version <= self.version:
            return False
        self.version = weights.version
        return True


def test_a_policy_set_acts_for_each_policys_slots_in_one_batch():
    a, b = Constant(1, -0.5), Constant(2, -1.5)
    policies = PolicySet([a, b], [np.array([0, 2, 4]), np.array([1, 3])])
    actions = policies.act(np.zeros((5, 3), np.float32))
    assert actions.tolist() == [1, 2, 1, 2, 1] and a.batches == [3] and b.batches == [2]
    assert policies.last_log_probs is not None and policies.last_log_probs.tolist() == [-0.5, -1.5, -0.5, -1.5, -0.5]
    assert policies.load([None, Weights(4, {})]) and policies.versions == [0, 4] and policies.version == 0
    assert not policies.load([None, Weights(4, {})])  # not newer: nothing loaded
    with pytest.raises(AssertionError, match="exactly one policy"):
        PolicySet([a, b], [np.array([0, 1]), np.array([1])])


def test_split_chunk_keeps_each_slots_steps_and_final_observations():
    T, E = 3, 4
    obs = np.arange((T + 1) * E, dtype=np.float32).reshape(T + 1, E, 1)
    restarted = np.zeros((T, E), bool)
    restarted[1, 3] = True
    chunk = Chunk(
        obs=obs, actions=np.arange(T * E).reshape(T, E), rewards=np.ones((T, E), np.float32),
        terminated=np.zeros((T, E), bool), truncated=np.zeros((T, E), bool),
        final_obs=np.array([[100.0], [101.0]], np.float32), final_index=np.array([[0, 1], [2, 3]]),
        policy_version=5, worker_id=2, seq=7, restarted=restarted, log_probs=np.zeros((T, E), np.float32),
    )  # fmt: skip
    odd = split_chunk(chunk, np.array([1, 3]), version=9)
    assert odd.obs[:, :, 0].tolist() == obs[:, [1, 3], 0].tolist() and odd.actions.tolist() == [[1, 3], [5, 7], [9, 11]]
    assert odd.final_obs[:, 0].tolist() == [100.0, 101.0] and odd.final_index.tolist() == [[0, 0], [2, 1]]
    assert odd.restarted is not None and odd.restarted[1].tolist() == [False, True]
    assert (odd.policy_version, odd.worker_id, odd.seq, odd.size) == (9, 2, 7, 6)
    even = split_chunk(chunk, np.array([0, 2]), version=8)
    assert even.final_obs.shape == (0, 1) and even.final_index.shape == (0, 2) and even.restarted is None


def test_a_worker_of_two_policies_cuts_every_chunk_and_its_episodes_by_policy():
    env = SnakeArena(boards=3, num_snakes=2, dim=8, hunger_limit=5, seed=1)  # slots: board-major, snake_0 even
    red, blue = Constant(0, -1.0), Constant(1, -1.0)
    policies = PolicySet([red, blue], [np.array([0, 2, 4]), np.array([1, 3, 5])])
    worker = RolloutWorker(env, policies, worker_id=0, rollout_length=20)
    worker.set_weights([Weights(3, {}), Weights(6, {})])
    chunks, stats = worker.sample_each()
    assert [c.num_envs for c in chunks] == [3, 3] and [c.policy_version for c in chunks] == [3, 6]
    assert (chunks[0].actions == 0).all() and (chunks[1].actions == 1).all()  # each acted by its own policy
    assert stats.num_steps == 120 and stats.policies is not None
    assert [p.num_steps for p in stats.policies] == [60, 60]
    # hunger_limit=5: every snake's life ends within 20 steps; each episode is its own snake's policy's
    assert len(stats.policies[0].episodes) + len(stats.policies[1].episodes) == len(stats.episodes) > 0
    assert len(stats.policies[0].episodes) > 0 and len(stats.policies[1].episodes) > 0
    with pytest.raises(AssertionError, match="sample_each"):
        worker.sample()


def test_progress_reports_each_policys_keys_and_lag_against_its_own_learner():
    progress = Progress(policies=("red", "blue"))
    episodes = Episodes(np.array([2.0, 4.0]), np.array([10, 20]), {"score": np.array([3.0, 5.0])})
    parts = [PolicyRollout(60, 3, episodes), PolicyRollout(60, 6, Episodes())]
    stats = RolloutStats(0, 120, 3, episodes, {}, policies=parts)
    progress.add_rollout(stats, learner_version=4, policy_versions=[4, 6])
    progress.add_learner(LearnerStats(8, 64, 7, {"loss": 0.5}, 0.1), policy="blue")
    row = progress.row()
    assert row["env_steps"] == 120 and row["updates"] == 8
    assert row["policy/red/env_steps"] == 60 and row["policy/red/episode/return_mean"] == 3.0
    assert row["policy/red/episode/score_mean"] == 4.0 and "policy/blue/episode/return_mean" not in row
    assert row["policy/red/lag/mean"] == 1 and row["policy/blue/lag/mean"] == 0
    assert row["policy/blue/learner/loss"] == 0.5 and row["policy/blue/version"] == 7
    assert row["policy/blue/updates"] == 8 and row["policy/red/updates"] == 0
    assert "learner/loss" not in row  # each learner's metrics are its policy's
    assert progress.policies["red"].summary()["episode_return_mean_last100"] == 3.0


def test_the_notebook_analysis_draws_one_curve_per_policy(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from raylab.metrics.analysis import RunData, plot_policies

    rows = [
        {"time_s": t, "policy/red/episode/return_mean": t, "policy/blue/episode/return_mean": 2 * t} for t in (1, 2)
    ]
    several, one = RunData(tmp_path / "rivals", rows), RunData(tmp_path / "shared", [{"time_s": 1.0}])
    assert several.policies() == ["red", "blue"] and one.policies() == []
    fig, ax = plt.subplots()
    assert plot_policies([several, one], ax) == 2
    assert [line.get_label() for line in ax.get_lines()] == ["rivals red", "rivals blue"]
    assert list(ax.get_lines()[1].get_ydata()) == [2.0, 4.0]
    plt.close(fig)


def test_a_dqn_policys_spaces_hold_only_its_agents(tmp_path):
    """DQN sizes its epsilon ladder and its replay's rate limits by slots: each policy by its own."""
    from raylab.config.policies import policy_spaces

    cfg = make_config(
        tmp_path, "+experiment=snake_arena_dqn", "+policies.red={}", "+policies.blue={}",
        "+policy_mapping={snake_0: red, snake_1: blue, snake_2: blue, snake_3: blue}",
    )  # fmt: skip
    red, blue = policy_spaces(cfg, ARENA4, "red"), policy_spaces(cfg, ARENA4, "blue")
    assert (red.agents, red.agent_ids) == (1, ("snake_0",)) and blue.slots(4) == 12
    assert red.obs_shape == ARENA4.obs_shape


def test_a_random_policy_ignores_weights_and_acts_uniformly():
    from raylab.rollout.policies import RandomPolicy

    policy = RandomPolicy(5, seed=1)
    actions = policy.act(np.zeros((4000, 3), np.float32))
    assert not policy.set_weights(Weights(9, {})) and policy.version == 0 and policy.last_log_probs is None
    counts = np.bincount(actions, minlength=5)
    assert counts.min() > 700 and counts.max() < 900  # 800 each expected; 5 standard deviations is about 130


def test_resume_checks_each_policys_networks_and_the_mapping_order_but_not_keys_added_since(tmp_path):
    from raylab.driver.resume import check_compatible

    saved = make_config(tmp_path, *RIVALS).to_dict()
    check_compatible(saved, make_config(tmp_path, *RIVALS, "+policies.blue.learner.batch_size=64").to_dict(), tmp_path)
    wider = make_config(tmp_path, *RIVALS, "+policies.blue.model.hidden_sizes=[64]").to_dict()
    with pytest.raises(ConfigError, match=r"policies\.blue\.model\.hidden_sizes was None"):
        check_compatible(saved, wider, tmp_path)
    swapped = dict(saved, policy_mapping=dict(reversed(list(saved["policy_mapping"].items()))))
    with pytest.raises(ConfigError, match=r"cannot resume .*policy_mapping"):
        check_compatible(saved, swapped, tmp_path)
    # a checkpoint written before env.pad_observations and policies existed resumes (a single-policy run)
    shared = make_config(tmp_path, "+experiment=snake_arena_ppo").to_dict()
    old = {k: v for k, v in shared.items() if k not in ("policies", "policy_mapping")}
    old["env"] = {k: v for k, v in shared["env"].items() if k != "pad_observations"}
    check_compatible(old, shared, tmp_path)

"""Several policies in one run, without Ray: the mapping from agents to policies and its errors, each policy's
config, per-policy batched inference, cutting a chunk into one chunk per policy, and the per-policy metrics."""

from __future__ import annotations

import dataclasses

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


TAG_IDS = ("adversary_0", "adversary_1", "adversary_2", "agent_0")
PREDATORS = EnvSpaces(
    (16,), np.dtype(np.float32), None, "Box(0.0, 1.0, (5,), float32)", action_dim=5, agents=3, agent_ids=TAG_IDS[:3],
    action_bounds=((0.0,) * 5, (1.0,) * 5),
)  # fmt: skip
PREY = EnvSpaces((14,), np.dtype(np.float32), 5, "Discrete(5)", agents=1, agent_ids=TAG_IDS[3:])
TAG = EnvSpaces(
    (16,), np.dtype(np.float32), None, PREDATORS.action_space, action_dim=5, agents=4, agent_ids=TAG_IDS,
    groups=(PREDATORS, PREY), action_bounds=PREDATORS.action_bounds,
)  # fmt: skip
"""mpe2 simple_tag_v3 with continuous_actions=true and env.discrete_agents=[agent_*] (simple_tag_mixed_ppo)."""
MIXED = ("+experiment=simple_tag_mixed_ppo", "logger.console=false")


def test_each_policy_gets_its_own_agents_spaces(tmp_path):
    from raylab.config.policies import policy_spaces

    cfg = make_config(tmp_path, *MIXED)
    pmap = policy_map(cfg, TAG)
    assert pmap.names == ("predators", "prey") and pmap.agent_policy == (0, 0, 0, 1)
    predators, prey = (policy_spaces(cfg, TAG, name) for name in pmap.names)
    assert (predators.obs_shape, predators.action_dim, predators.agents, predators.groups) == ((16,), 5, 3, ())
    assert (prey.obs_shape, prey.num_actions, prey.agent_ids, prey.groups) == ((14,), 5, ("agent_0",), ())
    slot_group, slot_local = TAG.slot_layout(2)
    assert slot_group.tolist() == [0, 0, 0, 1, 0, 0, 0, 1] and slot_local.tolist() == [0, 1, 2, 0, 3, 4, 5, 1]


def test_agents_that_differ_in_spaces_need_a_policy_of_their_own(tmp_path):
    from raylab.config.policies import check_policy_spaces

    shared = make_config(tmp_path, *MIXED, "~policies", "~policy_mapping")
    with pytest.raises(
        ConfigError,
        match=r"mpe2.simple_tag_v3's agents differ in spaces \(adversary_0, adversary_1, "
        r"adversary_2: obs \(16,\) float32, actions Box.*; agent_0: obs \(14,\) float32, actions "
        r"Discrete\(5\)\) and one policy acts for all of them: give each kind its own policy",
    ) as err:
        policy_map(shared, TAG)  # fmt: skip
    assert "pad_observations" not in str(err.value) and "\n" not in str(err.value)  # their actions differ too
    same_actions = (dataclasses.replace(PREDATORS, num_actions=5, action_dim=None, action_space="Discrete(5)"), PREY)
    with pytest.raises(ConfigError, match=r"or set env\.pad_observations=true to zero-pad their observations"):
        policy_map(shared, dataclasses.replace(TAG, groups=same_actions))
    mapping = "+policy_mapping={adversary_0: predators, adversary_1: prey, adversary_2: prey, agent_0: prey}"
    spanning = make_config(tmp_path, *MIXED, "~policy_mapping", mapping)
    with pytest.raises(ConfigError, match="agents of one policy must share spaces, and policy prey's differ") as err:
        policy_map(spanning, TAG)
    assert "map them to different policies in policy_mapping" in str(err.value) and "\n" not in str(err.value)
    with pytest.raises(ConfigError, match="agents of one policy must share spaces"):
        check_policy_spaces(spanning, TAG)  # what raylab.train checks before writing anything
    check_policy_spaces(make_config(tmp_path, *MIXED), TAG)  # PPO acts in Box and Discrete spaces alike


def test_a_dqn_policy_of_box_agents_is_refused_naming_the_fix(tmp_path):
    from raylab.config.policies import check_policy_spaces

    cfg = make_config(
        tmp_path, *MIXED, "algo=dqn", "topology=apex_dqn", "~algo.gae_lambda", "~algo.epochs", "~algo.minibatches",
        "~algo.entropy_coef", "~model.log_std_init",
    )  # fmt: skip
    with pytest.raises(ConfigError, match=r"algo=dqn needs discrete actions but policy predators's agents "
                       r"\(adversary_0, adversary_1, adversary_2\) have Box.*: show them as Discrete with "
                       r"env.discrete_agents"):  # fmt: skip
        check_policy_spaces(cfg, TAG)
    prey_only = dataclasses.replace(TAG, groups=(dataclasses.replace(PREDATORS, num_actions=5, action_dim=None), PREY))
    check_policy_spaces(cfg, prey_only)


class BoxConstant(Constant):
    """Constant, but a Box action: ``action`` in every one of its ``dim`` entries."""

    def __init__(self, action: float, log_prob: float, dim: int = 5, obs_size: int = 16):
        super().__init__(0, log_prob)
        self.value, self.dim, self.obs_size = action, dim, obs_size

    def act(self, obs: np.ndarray) -> np.ndarray:
        assert obs.shape[1:] == (self.obs_size,)
        super().act(obs)
        return np.full((len(obs), self.dim), self.value, np.float32)


def test_a_policy_set_over_space_groups_feeds_each_policy_its_own_slots_and_shapes():
    box, discrete = BoxConstant(0.5, -0.5), Constant(3, -1.5)
    layout = TAG.slot_layout(2)
    policies = PolicySet([box, discrete], [np.array([0, 1, 2, 4, 5, 6]), np.array([3, 7])], layout)
    assert policies.grouped and policies.parts[1][0] == 1 and policies.parts[1][1].tolist() == [0, 1]
    obs = [np.zeros((6, 16), np.float32), np.ones((2, 14), np.float32)]
    continuous, discrete_actions = policies.act_groups(obs)
    assert continuous.dtype == np.float32 and continuous.shape == (6, 5) and (continuous == 0.5).all()
    assert discrete_actions.dtype == np.int64 and discrete_actions.tolist() == [3, 3]
    assert box.batches == [6] and discrete.batches == [2]  # each policy once, on its slots only
    assert policies.last_log_probs is not None and policies.last_log_probs.tolist() == [-0.5] * 3 + [-1.5] + [
        -0.5
    ] * 3 + [-1.5]  # fmt: skip
    with pytest.raises(AssertionError, match="one space group"):
        PolicySet([box, discrete], [np.array([0, 1, 2, 3, 4, 5]), np.array([6, 7])], layout)


def mixed_tag_worker(rollout_length: int = 8, max_cycles: int = 5):
    from raylab.config import EnvConfig
    from raylab.envs.registry import make_vector_env

    cfg = EnvConfig(
        family="pettingzoo", id="mpe2.simple_tag_v3", discrete_agents=("agent_*",),
        options={"continuous_actions": True, "max_cycles": max_cycles},
    )  # fmt: skip
    env = make_vector_env(cfg, 2, seed=0)
    predators, prey = BoxConstant(1.0, -0.5), Constant(2, -1.5)
    policies = PolicySet([predators, prey], [np.array([0, 1, 2, 4, 5, 6]), np.array([3, 7])], TAG.slot_layout(2))
    return RolloutWorker(env, policies, worker_id=1, rollout_length=rollout_length)


def test_a_worker_over_space_groups_cuts_each_policys_chunk_in_its_own_spaces():
    worker = mixed_tag_worker()
    worker.set_weights([Weights(3, {}), Weights(6, {})])
    (predators, prey), stats = worker.sample_each()
    assert predators.obs.shape == (9, 6, 16) and predators.actions.shape == (8, 6, 5)
    assert predators.actions.dtype == np.float32 and (predators.actions == 1.0).all()
    assert prey.obs.shape == (9, 2, 14) and prey.actions.dtype == np.int64 and (prey.actions == 2).all()
    assert (predators.policy_version, prey.policy_version) == (3, 6) and predators.seq == prey.seq == 0
    assert predators.log_probs is not None and (predators.log_probs == -0.5).all()
    assert prey.log_probs is not None and (prey.log_probs == -1.5).all()
    # max_cycles=5: every agent's episode is truncated at step 4, with its final observation in its own shape
    assert predators.truncated[4].all() and prey.truncated[4].all() and not prey.truncated[:4].any()
    assert predators.final_obs.shape == (6, 16) and predators.final_index.tolist() == [[4, s] for s in range(6)]
    assert prey.final_obs.shape == (2, 14) and prey.final_index.tolist() == [[4, 0], [4, 1]]
    assert stats.num_steps == 64 and stats.policies is not None
    assert [p.num_steps for p in stats.policies] == [48, 16]
    assert [len(p.episodes) for p in stats.policies] == [6, 2] and len(stats.episodes) == 8
    (after, prey_after), _ = worker.sample_each()
    assert np.array_equal(after.obs[0], predators.obs[-1]) and np.array_equal(prey_after.obs[0], prey.obs[-1])
    assert after.seq == 1
    worker.reset()
    (fresh, _), _ = worker.sample_each()
    assert fresh.seq == 2 and fresh.obs.shape == (9, 6, 16)


def test_the_evaluator_scores_each_policy_of_agents_that_differ():
    from raylab.rollout.evaluator import Evaluator

    worker = mixed_tag_worker()
    evaluator = Evaluator(worker.env, worker.policy, ["predators", "prey"])
    result = evaluator.evaluate([Weights(1, {}), Weights(1, {})], episodes=8)
    assert result.policies is not None and len(result.returns) == 8
    assert len(result.policies["predators"]) + len(result.policies["prey"]) == 8 and len(result.policies["prey"]) > 0


def test_plans_build_each_policys_learner_and_check_its_network_with_its_own_spaces(tmp_path, monkeypatch):
    from raylab.builders import plans

    checked = []
    real = plans.check_model_fits
    monkeypatch.setattr(
        plans, "check_model_fits", lambda model, spaces, q: (checked.append(spaces.obs_shape), real(model, spaces, q))
    )
    plan = plans.build_plan(make_config(tmp_path, *MIXED), TAG)
    learners = {p.name: p.learner.args[0] for p in plan.flow.policies.plans}  # partial(build_learner, cfg, spaces)
    assert learners["predators"].args[1] == dataclasses.replace(PREDATORS, agent_ids=TAG_IDS[:3])
    assert learners["prey"].args[1].obs_shape == (14,) and learners["prey"].args[1].num_actions == 5
    assert learners["prey"].args[0].seed == learners["predators"].args[0].seed + SEED_STRIDE
    assert checked == [(16,), (14,)]


def test_a_random_policy_in_a_box_acts_uniformly_within_its_bounds():
    from raylab.rollout.policies import RandomPolicy

    policy = RandomPolicy(None, seed=2, bounds=((0.0, -2.0), (1.0, 2.0)))
    actions = policy.act(np.zeros((4000, 3), np.float32))
    assert actions.shape == (4000, 2) and actions.dtype == np.float32
    assert actions[:, 0].min() >= 0 and actions[:, 0].max() <= 1 and actions[:, 1].min() >= -2
    assert abs(actions[:, 1].mean()) < 0.1 and actions[:, 1].max() > 1.9

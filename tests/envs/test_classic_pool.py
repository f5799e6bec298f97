"""env.backend=envpool: EnvPool's classic-control ports are gymnasium's envs, transition by transition.

Every env of a ClassicPoolVectorEnv is stepped with seeded random actions; before each step gymnasium's own env
is put in the state the pool's observation shows, stepped with the same action, and the two outcomes compared:
next observation, reward, termination. Episode ends follow raylab's same-step contract (the reset observation
comes with the ending step, truncations carry their last observation, episode records are raw returns)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from raylab.envs import classic_pool
from raylab.envs.config import EnvConfig
from raylab.envs.registry import check_env_config, env_spaces, make_env, make_vector_env
from raylab.errors import ConfigError


def state_of(env_id: str, obs: np.ndarray) -> np.ndarray:
    """gymnasium's internal state for an observation (float64, as gymnasium keeps it)."""
    o = obs.astype(np.float64)
    if env_id.startswith("Acrobot"):
        return np.array([np.arctan2(o[1], o[0]), np.arctan2(o[3], o[2]), o[4], o[5]])
    return o  # CartPole, MountainCar(Continuous): the state is the observation


def start_ok(env_id: str, obs: np.ndarray) -> bool:
    """Whether ``obs`` is a possible first observation of gymnasium's ``env_id``."""
    s = state_of(env_id, obs)
    if env_id.startswith("CartPole"):
        return bool(np.all(np.abs(s) <= 0.05 + 1e-6))
    if env_id.startswith("Acrobot"):
        return bool(np.all(np.abs(s) <= 0.1 + 1e-5))
    return -0.6 - 1e-6 <= s[0] <= -0.4 + 1e-6 and s[1] == 0.0  # MountainCar(Continuous)


@pytest.mark.parametrize("env_id", classic_pool.IDS)
def test_every_transition_matches_gymnasium(env_id):
    cfg = EnvConfig(id=env_id, backend="envpool")
    check_env_config(cfg)
    venv = make_vector_env(cfg, 8, seed=3)
    reference = gym.make(env_id).unwrapped
    reference.reset(seed=0)
    assert venv.single_observation_space == reference.observation_space
    assert venv.single_action_space == reference.action_space
    rng = np.random.default_rng(0)
    obs = venv.reset().copy()
    assert all(start_ok(env_id, o) for o in obs)
    ends = 0
    for _ in range(300):
        if isinstance(venv.single_action_space, gym.spaces.Discrete):
            actions = rng.integers(0, int(venv.single_action_space.n), venv.num_envs)
        else:
            high = venv.single_action_space.high  # within bounds: raylab clips before any env sees an action
            actions = (rng.uniform(-1.0, 1.0, (venv.num_envs, 1)) * high).astype(np.float32)
        step = venv.step(actions)
        ended = dict(step.episodes)
        truncated_obs = dict(step.final_obs)
        for i in range(venv.num_envs):
            reference.state = state_of(env_id, obs[i])
            if hasattr(reference, "steps_beyond_terminated"):  # CartPole: a fresh state, not one after the end
                reference.steps_beyond_terminated = None
            action = actions[i] if isinstance(actions[i], np.ndarray) else int(actions[i])
            want_obs, want_reward, want_term, _, _ = reference.step(action)
            assert step.rewards[i] == pytest.approx(want_reward, abs=1e-4)
            assert bool(step.terminated[i]) == bool(want_term), (i, obs[i], actions[i])
            if i in ended:  # the same step hands over the next episode's first observation
                ends += 1
                assert start_ok(env_id, step.obs[i])
                assert (i in truncated_obs) == (bool(step.truncated[i]) and not step.terminated[i])
                if i in truncated_obs:
                    np.testing.assert_allclose(truncated_obs[i], want_obs, atol=1e-4)
            else:
                np.testing.assert_allclose(step.obs[i], want_obs, atol=1e-4)
        obs = step.obs.copy()
    if env_id.startswith("CartPole") or env_id == "MountainCar-v0":  # by failure; by the 200-step limit
        assert ends > 0  # (random play does not end Acrobot's or MountainCarContinuous' within 300 steps)


def test_time_limits_truncate_with_the_last_observation_and_raw_returns():
    venv = make_vector_env(EnvConfig(id="CartPole-v1", backend="envpool", max_episode_steps=5, reward_scale=0.5), 4, 0)
    venv.reset()
    for t in range(1, 6):
        step = venv.step(np.zeros(4, np.int64) if t % 2 else np.ones(4, np.int64))
        np.testing.assert_array_equal(step.rewards, np.full(4, 0.5, np.float32))  # scaled for the learner
        np.testing.assert_array_equal(step.truncated, np.full(4, t == 5))
    assert not step.terminated.any()
    assert [i for i, _ in step.final_obs] == [0, 1, 2, 3]
    assert all(record == {"return": 5.0, "length": 5.0} for _, record in step.episodes)  # raw returns
    assert all(start_ok("CartPole-v1", o) for o in step.obs)
    assert not any(np.array_equal(step.obs[i], last) for i, last in step.final_obs)


def test_box_actions_are_clipped_to_their_bounds():
    venv = make_vector_env(EnvConfig(id="MountainCarContinuous-v0", backend="envpool"), 2, 0)
    obs = venv.reset().copy()
    step = venv.step(np.array([[10.0], [-10.0]], np.float32))
    reference = gym.make("MountainCarContinuous-v0").unwrapped
    reference.reset(seed=0)
    for i, u in enumerate((1.0, -1.0)):  # gymnasium's reward charges the unclipped action: the clip matters
        reference.state = state_of("MountainCarContinuous-v0", obs[i])
        want_obs, want_reward, *_ = reference.step(np.array([u], np.float32))
        assert step.rewards[i] == pytest.approx(want_reward, abs=1e-4)
        np.testing.assert_allclose(step.obs[i], want_obs, atol=1e-4)


def test_single_envs_stay_gymnasiums():
    """Evaluation, raylab.evaluate and env_spaces build gymnasium's env; only the workers' batch is EnvPool's."""
    cfg = EnvConfig(id="CartPole-v1", backend="envpool")
    assert isinstance(make_env(cfg, seed=0).unwrapped, gym.envs.classic_control.CartPoleEnv)
    assert env_spaces(cfg) == env_spaces(EnvConfig(id="CartPole-v1"))


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"id": "LunarLander-v3"}, "env.backend=envpool has no port of LunarLander-v3: use one of CartPole-v0"),
        ({"id": "Pendulum-v1"}, "moves differently from gymnasium's at its speed limit"),
        ({"frame_stack": 4}, "set env.frame_skip=1, env.frame_stack=1"),
        ({"normalize_reward": True}, "set env.normalize_reward=false or env.backend=gymnasium"),
        ({"options": {"sutton_barto_reward": True}}, "are keyword arguments of gymnasium.make"),
        ({"family": "snake", "id": "Snake-v0"}, "not env=snake: set env.backend=gymnasium"),
    ],
)
def test_what_envpool_cannot_do_is_one_line(overrides, message):
    cfg = EnvConfig(**{"id": "CartPole-v1", "backend": "envpool", **overrides})
    with pytest.raises(ConfigError, match=message.replace(".", r"\.").replace("(", r"\(")) as err:
        check_env_config(cfg)
    assert "\n" not in str(err.value)


def test_an_unknown_backend_names_the_choices():
    with pytest.raises(ConfigError, match=r"unknown env\.backend 'pool': choose gymnasium or envpool"):
        EnvConfig(backend="pool")


def test_a_crashed_pool_is_rebuilt_whole_and_steps_on():
    venv = make_vector_env(EnvConfig(id="CartPole-v1", backend="envpool"), 3, seed=7)
    venv.reset()
    old = venv.pool

    def boom(*args, **kwargs):
        raise RuntimeError("pool died")

    old.step = boom
    step = venv.step(np.zeros(3, np.int64))
    assert venv.pool is not old and venv.restarts == 3
    assert step.restarted is not None and step.restarted.all() and step.truncated.all() and step.episodes == []
    assert all(start_ok("CartPole-v1", o) for o in step.obs)  # the new pool's first observations
    step = venv.step(np.zeros(3, np.int64))
    assert step.restarted is None and step.obs.shape == (3, 4)
    venv.close()

"""raylab/envs/memory_tasks.py: StatelessCartPole is CartPole-v1 without the velocities, POPGym's observations are
one-hot float32 vectors that decode back to POPGym's own, MiniGrid's Memory room comes as uint8 CHW images with 3
actions, and a missing memory extra is one line naming it. Shapes, dtypes and seeding of every id are in
tests/envs/test_families.py (its FAMILIES table)."""

from __future__ import annotations

import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest

from raylab.config import EnvConfig
from raylab.envs import env_spaces, make_env
from raylab.envs.memory_tasks import FlatObservation, minigrid_memory, popgym_env
from raylab.envs.registry import check_env_config, max_return
from raylab.errors import ConfigError

MEMORY = "raylab.envs.memory_tasks"


def memory_env(env_id: str, **kwargs) -> EnvConfig:
    return EnvConfig(id=f"{MEMORY}:{env_id}", **kwargs)


def test_importing_the_module_registers_the_ids_without_importing_the_extra():
    code = (
        "import sys, gymnasium as gym, raylab.envs.memory_tasks\n"
        "ids = ['StatelessCartPole-v1', 'PopGym-RepeatPreviousEasy-v0', 'PopGym-CountRecallEasy-v0',"
        " 'MiniGridMemory-S7-v0', 'MiniGridMemory-S9-v0']\n"
        "print(all(i in gym.registry for i in ids), 'popgym' in sys.modules, 'minigrid' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.split() == ["True", "False", "False"]


# StatelessCartPole


def test_stateless_cartpole_is_cartpoles_x_and_theta_under_the_same_seed_and_actions():
    cfg = memory_env("StatelessCartPole-v1")
    check_env_config(cfg)
    stateless, full = make_env(cfg, seed=4), make_env(EnvConfig(id="CartPole-v1"), seed=4)
    space = stateless.observation_space
    assert isinstance(space, gym.spaces.Box) and space.shape == (2,) and space.dtype == np.float32
    # RLlib's bounds (ray/rllib/examples/envs/classes/stateless_cartpole.py): twice the termination thresholds
    np.testing.assert_allclose(space.high, [4.8, 2 * 12 * 2 * np.pi / 360], rtol=1e-6)
    np.testing.assert_array_equal(space.low, -space.high)
    obs, _ = stateless.reset(seed=9)
    ref, _ = full.reset(seed=9)
    episodes = 0
    for action in np.random.default_rng(0).integers(0, 2, 400):
        assert obs.dtype == np.float32 and obs.shape == (2,)
        np.testing.assert_array_equal(obs, ref[[0, 2]])
        obs, reward, terminated, truncated, _ = stateless.step(int(action))
        ref, ref_reward, ref_terminated, ref_truncated, _ = full.step(int(action))
        assert (reward, terminated, truncated) == (ref_reward, ref_terminated, ref_truncated)
        if terminated or truncated:
            episodes += 1
            obs, _ = stateless.reset()
            ref, _ = full.reset()
    assert episodes >= 5


def balance(env: gym.Env) -> int:
    """A controller that sees the velocities (through the unwrapped state), so episodes last until the limit."""
    x, x_dot, theta, theta_dot = env.unwrapped.state
    return int(0.05 * x + 0.2 * x_dot + 3 * theta + 0.8 * theta_dot > 0)


@pytest.mark.parametrize(("limit", "length"), [(None, 500), (120, 120)])
def test_stateless_cartpole_is_truncated_at_500_steps_or_env_max_episode_steps(limit, length):
    cfg = memory_env("StatelessCartPole-v1", max_episode_steps=limit)
    assert max_return(cfg) == float(length)  # stop.mean_return is checked against it
    env = make_env(cfg, seed=0)
    for _ in range(2):
        env.reset()
        for _ in range(1000):
            _, _, terminated, truncated, info = env.step(balance(env))
            if terminated or truncated:
                break
        assert (terminated, truncated) == (False, True)
        assert info["episode"] == {"return": float(length), "length": length}


# POPGym


def popgym_twin(task: str) -> gym.Env:
    """The env popgym/baselines/ppo.py trains on: Antialias(PreviousAction(env)), observations left structured."""
    import popgym.envs
    from popgym.wrappers import Antialias, PreviousAction

    return Antialias(PreviousAction(getattr(popgym.envs, task)()))


def one_hot(value: int, n: int) -> np.ndarray:
    return np.eye(n, dtype=np.float32)[int(value)]


@pytest.mark.parametrize(
    ("task", "sizes"),
    [("RepeatPreviousEasy", (4, 4, 2)), ("CountRecallEasy", (2, 2, 27, 2))],  # card; value, query; action; t0
)
def test_popgym_observations_are_one_hot_and_decode_back(task, sizes):
    env, twin = popgym_env(task), popgym_twin(task)
    assert isinstance(env, FlatObservation)
    space = env.observation_space
    assert isinstance(space, gym.spaces.Box) and space.dtype == np.float32 and space.shape == (sum(sizes),)
    assert env.action_space == twin.action_space
    flat, _ = env.reset(seed=5)
    ref, _ = twin.reset(seed=5)
    actions = np.random.default_rng(1).integers(0, int(env.action_space.n), 12)
    for t, action in enumerate([None, *actions]):
        if action is not None:
            flat, reward, terminated, _, _ = env.step(int(action))
            ref, ref_reward, ref_terminated, _, _ = twin.step(int(action))
            assert (reward, terminated) == (ref_reward, ref_terminated)
        assert flat.dtype == np.float32 and set(np.unique(flat)) <= {0.0, 1.0}
        parts = [*np.atleast_1d(ref[0]), *ref[1:]]  # CountRecall's MultiDiscrete card is (value, query)
        np.testing.assert_array_equal(flat, np.concatenate([one_hot(v, n) for v, n in zip(parts, sizes, strict=True)]))
        assert parts[-1] == (t == 0)  # Antialias: 1 on the first observation of the episode only
        assert parts[-2] == (0 if action is None else action)  # PreviousAction: 0 after a reset
        back = env.unflatten(flat)
        assert len(back) == len(ref)
        for got, want in zip(back, ref, strict=True):
            np.testing.assert_array_equal(got, want)


def test_repeat_previous_easy_returns_one_for_a_player_that_remembers_and_lasts_51_steps():
    """The suit of the card shown 3 observations before the current one (k=4 counting it) earns +1/48 on each of
    the 48 scored steps: a memory that works scores 1.0, the top of the paper's [-1, 1]."""
    env = make_env(memory_env("PopGym-RepeatPreviousEasy-v0"), seed=3)
    for _ in range(2):
        obs, _ = env.reset()
        cards = [int(np.argmax(obs[:4]))]
        for _ in range(100):
            action = cards[-4] if len(cards) >= 4 else 0
            obs, _, terminated, truncated, info = env.step(action)
            cards.append(int(np.argmax(obs[:4])))
            if terminated or truncated:
                break
        assert (terminated, info["episode"]["length"]) == (True, 51)
        assert info["episode"]["return"] == pytest.approx(1.0)


def test_count_recall_easy_returns_one_for_a_player_that_counts_and_minus_one_for_one_that_miscounts():
    env = make_env(memory_env("PopGym-CountRecallEasy-v0"), seed=3)
    for player in ("counts", "off_by_one"):
        obs, _ = env.reset()
        counts = np.zeros(2, np.int64)
        for _ in range(100):
            value, query = int(np.argmax(obs[:2])), int(np.argmax(obs[2:4]))
            counts[value] += 1
            action = (int(counts[query]) + (0 if player == "counts" else 1)) % 27  # the count asked, or not it
            obs, _, terminated, truncated, info = env.step(action)
            if terminated or truncated:
                break
        assert (terminated, info["episode"]["length"]) == (True, 51)
        assert info["episode"]["return"] == pytest.approx(1.0 if player == "counts" else -1.0)


def test_popgym_wrappers_can_be_left_out():
    assert popgym_env("RepeatPreviousEasy", previous_action=False, antialias=False).observation_space.shape == (4,)
    assert popgym_env("RepeatPreviousEasy", antialias=False).observation_space.shape == (8,)


def test_popgym_draws_no_video_frames():
    with pytest.raises(ConfigError, match="draws no frames"):
        gym.make("PopGym-RepeatPreviousEasy-v0", render_mode="rgb_array")


# MiniGrid Memory


def test_minigrid_memory_is_the_agents_rgb_view_channel_first_with_three_actions():
    env = make_env(memory_env("MiniGridMemory-S7-v0"), seed=0)
    assert env.action_space == gym.spaces.Discrete(3)
    space = env.observation_space
    assert isinstance(space, gym.spaces.Box) and space.shape == (3, 84, 84) and space.dtype == np.uint8
    obs, _ = env.reset(seed=2)
    raw = env.unwrapped
    view = raw.get_frame(tile_size=28, agent_pov=True)  # 3 cells of 28 pixels
    assert view.shape == (84, 84, 3)
    np.testing.assert_array_equal(obs, view.transpose(2, 0, 1))
    assert raw.agent_view_size == 3 and raw.max_steps == 5 * 7**2
    direction = raw.agent_dir
    env.step(0)  # turn left
    assert raw.agent_dir == (direction - 1) % 4
    env.step(1)  # turn right
    assert raw.agent_dir == direction


def test_minigrid_memory_view_size_symbolic_observation_and_time_limit():
    cfg = memory_env("MiniGridMemory-S9-v0", options={"agent_view_size": 5})
    assert env_spaces(cfg).obs_shape == (3, 80, 80)  # 84 // 5 = 16 pixels a cell
    env = make_env(memory_env("MiniGridMemory-S9-v0", options={"observation": "symbolic"}), seed=0)
    obs, _ = env.reset(seed=1)
    assert obs.shape == (3, 3, 3) and obs.dtype == np.uint8
    np.testing.assert_array_equal(obs, env.unwrapped.gen_obs()["image"].transpose(2, 0, 1))
    for step in range(1, 1000):  # turning in place never reaches an object: MiniGrid truncates at 5 * 9**2
        _, reward, terminated, truncated, _ = env.step(step % 2)
        if terminated or truncated:
            break
    assert (step, reward, terminated, truncated) == (5 * 9**2, 0.0, False, True)
    full = minigrid_memory(size=7, movement_only=False)
    assert full.action_space == gym.spaces.Discrete(7)


def test_minigrid_memory_onehot_observation_is_minigrids_one_hot_codes_as_floats():
    """observation=onehot: MiniGrid's own OneHotPartialObsWrapper layout, flattened, float32 (a uint8 0/1 would be
    scaled by 1/255 as a frame), step for step through an episode."""
    from minigrid.envs import MemoryEnv
    from minigrid.wrappers import ImgObsWrapper, OneHotPartialObsWrapper

    env = make_env(memory_env("MiniGridMemory-S7-v0", options={"observation": "onehot"}), seed=0)
    assert env_spaces(memory_env("MiniGridMemory-S7-v0", options={"observation": "onehot"})).obs_shape == (180,)
    reference = ImgObsWrapper(OneHotPartialObsWrapper(MemoryEnv(size=7, agent_view_size=3)))
    obs, _ = env.reset(seed=5)
    expected, _ = reference.reset(seed=5)
    assert obs.dtype == np.float32 and obs.shape == (180,) and obs.sum() == 27  # 9 cells, 3 codes each
    for step in range(40):
        np.testing.assert_array_equal(obs, expected.reshape(-1).astype(np.float32))
        obs, reward, terminated, truncated, _ = env.step(step % 3)
        expected, ref_reward, ref_terminated, ref_truncated, _ = reference.step(step % 3)
        assert (reward, terminated, truncated) == (ref_reward, ref_terminated, ref_truncated)
        if terminated or truncated:
            break


def test_minigrid_memory_rejects_an_unknown_observation():
    with pytest.raises(ConfigError, match=r"env\.options\.observation must be rgb, symbolic or onehot"):
        make_env(memory_env("MiniGridMemory-S7-v0", options={"observation": "pixels"}), seed=0)


# The memory extra missing


@pytest.mark.parametrize(
    ("cfg", "package"),
    [
        (memory_env("PopGym-RepeatPreviousEasy-v0"), "popgym"),
        (memory_env("MiniGridMemory-S7-v0"), "minigrid"),
        (EnvConfig(family="custom", factory=f"{MEMORY}:popgym_env", options={"task": "CountRecallEasy"}), "popgym"),
    ],
)
def test_a_missing_memory_extra_is_one_line_naming_it(monkeypatch, cfg, package):
    for name in [m for m in sys.modules if m == package or m.startswith(package + ".")]:
        monkeypatch.setitem(sys.modules, name, None)  # "import of popgym halted": what an absent package raises
    monkeypatch.setitem(sys.modules, package, None)
    check_env_config(cfg)  # the id is registered: the package is needed only to build the env
    with pytest.raises(
        ConfigError, match=rf"{package} is not installed: pip install 'raylab-actor-learner\[memory\]'"
    ) as info:
        env_spaces(cfg)
    assert "\n" not in str(info.value)

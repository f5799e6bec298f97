"""Record the numpy 1.x reference that raylab's numpy-2 Mario fix is tested against (tests/envs/test_mario.py).

Runs the *unpatched* upstream packages, so it needs its own environment (raylab is not imported):

    python3 -m venv /tmp/np126 && /tmp/np126/bin/pip install numpy==1.26.4 nes-py==8.2.1 gym-super-mario-bros==7.4.0
    /tmp/np126/bin/python tests/envs/data/record_mario_reference.py tests/envs/data/mario_reference_numpy126.npz

20,000 actions from SIMPLE_MOVEMENT (biased to the right, each held 1-8 frames, seeded) on
SuperMarioBros-1-1-v0, one emulator frame per action, resetting when an episode ends. Saved: the action
indices, every reward, done flag and info field, and a CRC32 of the screen every 100 steps.
"""

import sys
import zlib

import numpy as np

STEPS = 20_000
INFO_KEYS = ("coins", "flag_get", "life", "score", "stage", "time", "world", "x_pos", "y_pos")
STATUS = ("small", "tall", "fireball")


def action_sequence(num_actions: int, steps: int, seed: int = 2026) -> np.ndarray:
    rng = np.random.default_rng(seed)
    weights = np.array([1, 4, 4, 2, 4, 1, 1], float)[:num_actions]
    out = np.empty(steps, np.int64)
    t = 0
    while t < steps:
        a = rng.choice(num_actions, p=weights / weights.sum())
        hold = int(rng.integers(1, 9))
        out[t : t + hold] = a
        t += hold
    return out


def main(path: str) -> None:
    import gym_super_mario_bros  # noqa: F401
    from gym_super_mario_bros.actions import SIMPLE_MOVEMENT
    from gym_super_mario_bros.smb_env import SuperMarioBrosEnv
    from nes_py.wrappers import JoypadSpace

    button_map = JoypadSpace._button_map
    codes = [sum(button_map[b] for b in buttons) for buttons in SIMPLE_MOVEMENT]
    env = SuperMarioBrosEnv(rom_mode="vanilla", lost_levels=False, target=(1, 1))
    actions = action_sequence(len(codes), STEPS)
    rewards = np.zeros(STEPS, np.float64)
    dones = np.zeros(STEPS, bool)
    info = {k: np.zeros(STEPS, np.int64) for k in INFO_KEYS}
    status = np.zeros(STEPS, np.int8)
    crcs = []
    env.reset()
    for t, a in enumerate(actions):
        screen, reward, done, step_info = env.step(codes[a])
        rewards[t], dones[t] = reward, done
        for k in INFO_KEYS:
            info[k][t] = int(step_info[k])
        status[t] = STATUS.index(step_info["status"])
        if t % 100 == 0:
            crcs.append(zlib.crc32(np.ascontiguousarray(screen).tobytes()))
        if done:
            env.reset()
    np.savez_compressed(
        path, actions=actions.astype(np.uint8), rewards=rewards, dones=dones, status=status,
        screen_crc32=np.array(crcs, np.uint32), numpy_version=np.array(np.__version__), **info,
    )  # fmt: skip
    print(f"{path}: {STEPS} steps, {dones.sum()} episode ends, return {rewards.sum():.0f}, numpy {np.__version__}")


if __name__ == "__main__":
    main(sys.argv[1])

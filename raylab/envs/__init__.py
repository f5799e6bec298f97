"""Environments behind one ``make_env(cfg, seed, worker_index)``, and the vector envs a rollout worker steps.

Families: gymnasium (any registered id), mario (Super Mario Bros, nes-py), procgen (EnvPool), snake, fake.
"""

from raylab.envs.registry import env_spaces, make_env, make_vector_env
from raylab.envs.vector import SerialVectorEnv, VectorEnv, VectorStep
from raylab.types import EnvSpaces

__all__ = ["EnvSpaces", "SerialVectorEnv", "VectorEnv", "VectorStep", "env_spaces", "make_env", "make_vector_env"]

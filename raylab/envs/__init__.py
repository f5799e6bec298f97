"""Environments behind one ``make_env(cfg, seed, worker_index)``, and the vector env a rollout worker steps."""

from raylab.envs.registry import EnvSpaces, env_spaces, make_env, make_vector_env
from raylab.envs.vector import SerialVectorEnv, VectorStep

__all__ = ["EnvSpaces", "SerialVectorEnv", "VectorStep", "env_spaces", "make_env", "make_vector_env"]

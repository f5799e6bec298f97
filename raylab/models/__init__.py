"""Encoders, heads and the factory that assembles them from a ModelConfig."""

from raylab.models.factory import ActorCritic, QNetwork, build_actor_critic, build_q_network

__all__ = ["ActorCritic", "QNetwork", "build_actor_critic", "build_q_network"]

"""Encoders, heads and the factory that assembles them from a ModelConfig."""

from raylab.models.factory import QNetwork, build_q_network

__all__ = ["QNetwork", "build_q_network"]

"""The Learner: trained modules, optimizer, update(batch) -> metrics, versioned weights; checkpoints."""

from raylab.learner.checkpoint import load_checkpoint, save_checkpoint
from raylab.learner.learner import Learner, resolve_device

__all__ = ["Learner", "load_checkpoint", "resolve_device", "save_checkpoint"]

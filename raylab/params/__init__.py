"""The parameter server of the a3c topology: flat sharded weights, shared RMSProp, and the worker's link."""

from raylab.params.flat import ParamLayout, flatten_grads, flatten_params, load_flat
from raylab.params.link import ServerLink, ServerUpdate
from raylab.params.server import ParameterServer, PushReply, ServerStats

__all__ = [
    "ParamLayout",
    "ParameterServer",
    "PushReply",
    "ServerLink",
    "ServerStats",
    "ServerUpdate",
    "flatten_grads",
    "flatten_params",
    "load_flat",
]

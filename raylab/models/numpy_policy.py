"""A NumPy copy of a small MLP actor-critic's acting path, for rollout actors on the CPU.

A rollout actor acts on a batch of a few dozen vectors through a network of a few Linear layers. In torch
every one of the ~15 operations of that pass (from_numpy, each Linear and ReLU, the head, the log-softmax, the
sample, the gather, .numpy()) pays a dispatch overhead of microseconds that dwarfs its arithmetic: at 32 envs
of CartPole an act takes 49 µs in torch and 23 µs as NumPy matrix products (benchmarks/policy_inference.json).
PufferLib and Sample Factory keep torch for inference; raylab keeps it for every model that is not this plain
shape (CNNs, custom models, A3C's policy, which trains its module in place) and for the learner.

``supports(model)`` says whether a model is the plain shape: ``MLPEncoder`` (Flatten, Linear, ReLU) under
raylab's ``ActorCritic`` (or a ``RecurrentActorCritic``, whose LSTM or GRU step ``NumpyCore`` mirrors) with an
optional ``RunningNorm`` and a Categorical or diagonal-Gaussian head.
``NumpyActor`` mirrors such a model's parameters (reloaded with each new weights version) and computes the
same distribution parameters (tests/unit/test_numpy_policy.py: equal to torch's within float32 rounding), then
samples from them with its own seeded NumPy generator. ``q_linears(model)`` and ``NumpyQ`` do the same for a
plain MLP ``QNetwork`` (one atom, no dueling head): DQN's epsilon-greedy actors, and the fused DQN update
(raylab/learner/fused/dqn.py), which trains such a network in NumPy.
"""

from __future__ import annotations

from typing import Any, Generic, TypeVar

import numpy as np
from torch import nn

from raylab.models.distributions import LOG_2PI, Categorical, DiagGaussian
from raylab.models.encoders import MLPEncoder
from raylab.models.factory import ActorCritic, QNetwork, RecurrentActorCritic
from raylab.models.heads import QHead
from raylab.models.normalize import CLIP, RunningNorm
from raylab.params.flat import load_params
from raylab.types import Weights


def supports(model: nn.Module) -> bool:
    """Whether ``model`` is an ActorCritic of the plain MLP shape that NumpyActor mirrors exactly (with an LSTM or
    GRU core after the MLP: a RecurrentActorCritic)."""
    if type(model) not in (ActorCritic, RecurrentActorCritic) or type(model.encoder) is not MLPEncoder:
        return False
    if model.obs_norm is not None and type(model.obs_norm) is not RunningNorm:
        return False
    if type(model.dist) not in (Categorical, DiagGaussian):
        return False
    return mlp_linears(model.encoder.net) is not None


def mlp_linears(net: object) -> list[nn.Linear] | None:
    """The Linear layers of an MLP trunk (an ``MLPEncoder``'s net: an optional Flatten, then Linear + ReLU
    pairs), in order, or None for any other stack. What the NumPy copies and the fused updates mirror."""
    if not isinstance(net, nn.Sequential):
        return None
    layers = [layer for layer in net if not isinstance(layer, nn.Flatten)]
    found = [layer for layer in layers if isinstance(layer, nn.Linear)]
    if [type(layer) for layer in layers] != [nn.Linear, nn.ReLU] * len(found):
        return None
    return found


def q_linears(model: nn.Module) -> list[nn.Linear] | None:
    """The Linear layers of a plain MLP Q network in order, the head's last (every other one followed by a
    ReLU), or None for any other shape (CNNs, dueling or quantile heads, custom models)."""
    if type(model) is not QNetwork or type(model.encoder) is not MLPEncoder or type(model.head) is not QHead:
        return None
    if model.head.atoms != 1:
        return None
    found = mlp_linears(model.encoder.net)
    return None if found is None else [*found, model.head.q]


def features(obs: np.ndarray) -> np.ndarray:
    """A batch of observations as flat float32 rows, uint8 frames scaled by 1/255 as the torch models scale
    them."""
    h = obs.reshape(len(obs), -1)
    if h.dtype == np.uint8:
        return h.astype(np.float32) / np.float32(255.0)
    return h.astype(np.float32, copy=False)


def mlp(layers: list[tuple[np.ndarray, np.ndarray]], h: np.ndarray, relu_last: bool) -> np.ndarray:
    """``h`` through Linear layers given as (W^T [in, out], bias), a ReLU after each (after the last too when
    ``relu_last``)."""
    for i, (w, b) in enumerate(layers):
        h = h @ w
        h += b
        if relu_last or i < len(layers) - 1:
            np.maximum(h, 0.0, out=h)
    return h


class NumpyQ:
    """Q values of a plain MLP QNetwork (``q_linears``) in NumPy float32."""

    def __init__(self, model: QNetwork):
        linears = q_linears(model)
        assert linears is not None, "NumpyQ mirrors plain MLP Q networks only (numpy_policy.q_linears)"
        names = module_names(model)
        self._linears = [names[m] for m in linears]
        self.load(model)

    def load(self, model: QNetwork) -> None:
        """Copy the module's parameters."""
        self.load_params(numpy_state(model))

    def load_params(self, params: dict[str, np.ndarray]) -> None:
        """Copy the parameters from ``Weights.params`` (the module's state_dict as arrays), without the module:
        a rollout actor's weight load (``load_state_dict`` and then ``load`` cost ~20x as much)."""
        self.layers = [_linear(params, name) for name in self._linears]

    def values(self, obs: np.ndarray) -> np.ndarray:
        """Q values [B, A]."""
        return mlp(self.layers, features(obs), relu_last=False)


def module_names(model: nn.Module) -> dict[nn.Module, str]:
    """Each submodule's qualified name, as its parameters are prefixed in ``state_dict``."""
    return {module: name for name, module in model.named_modules()}


def numpy_state(model: nn.Module) -> dict[str, np.ndarray]:
    """The module's state_dict (detached tensors) as NumPy arrays (views): what ``Weights.params`` holds."""
    return {k: v.numpy() for k, v in model.state_dict().items()}


def _linear(params: dict[str, np.ndarray], name: str) -> tuple[np.ndarray, np.ndarray]:
    """A Linear's (W^T [in, out], bias) as float32 copies."""
    return np.array(params[f"{name}.weight"], np.float32).T.copy(), np.array(params[f"{name}.bias"], np.float32)


class NumpyActor:
    """Distribution parameters of a plain MLP ActorCritic, in NumPy float32; sampling with log-probabilities."""

    def __init__(self, model: ActorCritic, seed: int):
        assert supports(model), "NumpyActor mirrors plain MLP actor-critics only (numpy_policy.supports)"
        self.discrete = isinstance(model.dist, Categorical)
        self.rng = np.random.default_rng(seed)
        names = module_names(model)
        self._linears = [names[m] for m in mlp_linears(model.encoder.net) or []]
        self._head = names[model.policy]
        norm = model.obs_norm
        self._norm = None if norm is None else (names[norm], float(norm.eps))
        core = model.core if isinstance(model, RecurrentActorCritic) else None
        self.core: NumpyCore | None = None if core is None else NumpyCore(core.kind, core.size, f"{names[core]}.rnn")
        self.load(model)

    def load(self, model: ActorCritic) -> None:
        """Copy the module's parameters."""
        self.load_params(numpy_state(model))

    def load_params(self, params: dict[str, np.ndarray]) -> None:
        """Copy the parameters from ``Weights.params`` (the module's state_dict as arrays), without the module:
        a rollout actor's weight load (``load_state_dict`` and then ``load`` cost ~20x as much)."""
        self.layers = [_linear(params, name) for name in self._linears]
        self.head = _linear(params, self._head)
        self.norm: tuple[np.ndarray, np.ndarray] | None = None
        if self._norm is not None:
            name, eps = self._norm
            mean = np.array(params[f"{name}.mean"], np.float32).reshape(-1)
            # as RunningNorm.forward: sqrt(var + eps) in the buffers' float64, then float32
            std = np.sqrt(np.asarray(params[f"{name}.var"], np.float64) + eps).astype(np.float32).reshape(-1)
            self.norm = (mean, std)
        self.log_std = None if self.discrete else np.array(params["log_std"], np.float32)
        if self.core is not None:
            self.core.load_params(params)

    def params(self, obs: np.ndarray, state: np.ndarray | None = None) -> np.ndarray:
        """Logits [B, A] (discrete) or means [B, D] (Box) for a batch of observations; with a core, ``state``
        [B, S] is each slot's state, advanced in place."""
        h = features(obs)
        if self.norm is not None:
            mean, std = self.norm
            h = np.clip((h - mean) / std, -CLIP, CLIP)
        h = mlp(self.layers, h, relu_last=True)
        if self.core is not None:
            assert state is not None, "a recurrent actor acts from its slots' states"
            h = self.core.step(h, state)
        w, b = self.head
        out = h @ w
        out += b
        return out

    def mode(self, obs: np.ndarray, state: np.ndarray | None = None) -> np.ndarray:
        out = self.params(obs, state)
        return out.argmax(1) if self.discrete else out

    def sample(self, obs: np.ndarray, state: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(actions, their log-probabilities): int64 [B] from the softmax, or float32 [B, D] from the Gaussian."""
        out = self.params(obs, state)
        if self.discrete:
            z = out - out.max(1, keepdims=True)
            probs = np.exp(z)
            total = probs.sum(1, keepdims=True)
            cdf = np.cumsum(probs, 1)
            u = self.rng.random((len(out), 1), dtype=np.float32) * total
            actions = np.minimum((cdf <= u).sum(1), out.shape[1] - 1)  # inverse CDF
            rows = np.arange(len(out))
            log_probs = z[rows, actions] - np.log(total[:, 0])
            return actions.astype(np.int64), log_probs.astype(np.float32)
        assert self.log_std is not None
        noise = self.rng.standard_normal(out.shape, dtype=np.float32)
        actions = out + np.exp(self.log_std) * noise
        log_probs = -(0.5 * noise * noise + self.log_std + 0.5 * LOG_2PI).sum(1)
        return actions.astype(np.float32), log_probs.astype(np.float32)


class NumpyCore:
    """One step of a torch LSTM or GRU layer (raylab/models/recurrent.py) in NumPy float32, PyTorch's gate order
    and equations: LSTM gates (i, f, g, o), ``c' = s(f) c + s(i) tanh(g)``, ``h' = s(o) tanh(c')``; GRU gates
    (r, z, n), ``n = tanh(W_in x + b_in + r (W_hn h + b_hn))``, ``h' = (1 - z) n + z h``."""

    def __init__(self, kind: str, size: int, prefix: str):
        self.kind, self.size, self.prefix = kind, size, prefix

    def load_params(self, params: dict[str, np.ndarray]) -> None:
        p = self.prefix
        self.w_ih = np.array(params[f"{p}.weight_ih_l0"], np.float32).T.copy()
        self.w_hh = np.array(params[f"{p}.weight_hh_l0"], np.float32).T.copy()
        self.b_ih = np.array(params[f"{p}.bias_ih_l0"], np.float32)
        self.b_hh = np.array(params[f"{p}.bias_hh_l0"], np.float32)
        if self.kind == "lstm":
            self.bias = self.b_ih + self.b_hh

    def step(self, x: np.ndarray, state: np.ndarray) -> np.ndarray:
        """The core's output [B, size] for inputs ``x`` [B, F]; ``state`` [B, S] advanced in place."""
        n = self.size
        if self.kind == "lstm":
            h, c = state[:, :n], state[:, n:]
            gates = x @ self.w_ih
            gates += h @ self.w_hh
            gates += self.bias
            i, f, o = _sigmoid(gates[:, :n]), _sigmoid(gates[:, n : 2 * n]), _sigmoid(gates[:, 3 * n :])
            c_new = f * c + i * np.tanh(gates[:, 2 * n : 3 * n])
            h_new = o * np.tanh(c_new)
            state[:, :n], state[:, n:] = h_new, c_new
            return h_new
        h = state
        gi = x @ self.w_ih
        gi += self.b_ih
        gh = h @ self.w_hh
        gh += self.b_hh
        r = _sigmoid(gi[:, :n] + gh[:, :n])
        z = _sigmoid(gi[:, n : 2 * n] + gh[:, n : 2 * n])
        cand = np.tanh(gi[:, 2 * n :] + r * gh[:, 2 * n :])
        h_new = (1.0 - z) * cand + z * h
        state[:] = h_new
        return h_new


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 0.5 * (np.tanh(0.5 * x) + 1.0)  # stable for any x, float32 in and out


M = TypeVar("M", bound=nn.Module)


class Mirrored(Generic[M]):
    """A policy's torch module and the NumPy copy that acts for it (``copy``; None: the module acts). New
    weights go straight into the copy, and into the module only when something asks for it (``module``): the
    module does not act while there is a copy, and loading it cost ~20x the copy's load."""

    def __init__(self, module: M, copy: NumpyActor | NumpyQ | None):
        self._module = module
        self.copy = copy
        self._unloaded: dict[str, np.ndarray] | None = None
        """Weights in the copy and not yet in the module."""

    @property
    def module(self) -> M:
        """The torch module, holding the newest weights loaded."""
        if self._unloaded is not None:
            load_params(self._module, self._unloaded)
            self._unloaded = None
        return self._module

    def load(self, params: dict[str, np.ndarray]) -> None:
        """New weights (``Weights.params``)."""
        if self.copy is not None:
            self.copy.load_params(params)
            self._unloaded = params
        else:
            load_params(self._module, params)


class VersionedWeights:
    """What a policy acting through a ``Mirrored`` module does with published weights: it loads only newer
    ones (a worker handed the weights it holds, or older, copies nothing)."""

    version: int
    _mirrored: Mirrored[Any]

    def set_weights(self, weights: Weights, exact: bool = False) -> bool:
        """Load ``weights`` if newer than what the policy holds (``exact``: unless they are the version it
        holds, e.g. an evaluation of older weights); returns whether it did."""
        if weights.version == self.version or (weights.version < self.version and not exact):
            return False
        self._mirrored.load(weights.params)
        self.version = weights.version
        return True

"""Assemble networks from a ModelConfig and the env's spaces."""

from __future__ import annotations

from typing import TypeVar

import numpy as np
import torch
from torch import nn

from raylab.config import ModelConfig
from raylab.errors import ConfigError
from raylab.models.custom import build_custom, scaled
from raylab.models.distributions import ActionDist, Categorical, DiagGaussian, MultiCategorical
from raylab.models.encoders import ImpalaCNN, MLPEncoder, NatureCNN
from raylab.models.heads import DuelingQHead, QHead
from raylab.models.keyed import KeyedEncoder
from raylab.models.normalize import RunningNorm
from raylab.models.precision import resolve_precision
from raylab.models.recurrent import RecurrentCore
from raylab.types import EnvSpaces

M = TypeVar("M", bound=nn.Module)

Encoder = MLPEncoder | NatureCNN | ImpalaCNN | KeyedEncoder


def encode(encoder: nn.Module, obs: torch.Tensor, obs_norm: nn.Module | None = None) -> torch.Tensor:
    """The encoder's features, in fp32 for the heads, of raw observations: uint8 frames scaled to [0, 1],
    standardized by ``obs_norm`` if there is one, and fed in the encoder's dtype (fp32, or a rollout actor's bf16
    copy: model.rollout_precision)."""
    dtype = _dtype(encoder)
    # A CNN's input channels-last on the CPU: oneDNN's convolutions then train the Nature CNN in 0.75x and the
    # IMPALA CNN in 0.71x the time at batch 256, and the IMPALA CNN acts in 0.48x (one thread, fp32, this AVX2
    # CPU; the Nature CNN acts in the same time either way). The weights keep their layout.
    layout = torch.channels_last if _channels_last(encoder, obs) else torch.preserve_format
    if obs_norm is None and obs.dtype == torch.uint8:
        x = scaled_frames(obs, dtype, layout)
    else:
        x = obs.float().div_(255.0) if obs.dtype == torch.uint8 else obs.float()
        if obs_norm is not None:
            x = obs_norm(x)
        x = x.to(dtype, memory_format=layout)
    features = encoder(x)
    return features if features.dtype == torch.float32 else features.float()


def scaled_frames(obs: torch.Tensor, dtype: torch.dtype, layout: torch.memory_format) -> torch.Tensor:
    """uint8 frames as ``dtype`` in [0, 1], laid out as ``layout``, in one conversion. The bytes are laid out
    first and then converted, so the transpose moves 1 byte per value, not 4: 32 Mario frames (4 x 64 x 64) to
    fp32 channels-last take 0.58x the time of converting and laying out in one step on an AVX2 CPU, and every
    shape timed 0.48-0.78x (benchmarks/frame_conversion.json)."""
    if layout == torch.channels_last:
        obs = obs.contiguous(memory_format=torch.channels_last)
    return obs.to(dtype).div_(255.0)


def _channels_last(encoder: nn.Module, obs: torch.Tensor) -> bool:
    """Whether ``encoder`` takes ``obs`` channels-last: a convolutional encoder's image batch on the CPU."""
    return isinstance(encoder, NatureCNN | ImpalaCNN) and obs.dim() == 4 and obs.device.type == "cpu"


def _dtype(module: nn.Module) -> torch.dtype:
    """The dtype of ``module``'s first parameter (float32 without any): its first leaf module's, looked up
    without walking the whole tree on every forward pass."""
    for sub in module.modules():
        for param in sub._parameters.values():
            if param is not None:
                return param.dtype
    return torch.float32


def for_acting(module: M, precision: str = "fp32") -> M:
    """A frozen network set up for inference on the CPU, where it measurably wins (benchmarks/cnn_inference.json):
    ``precision="bf16"`` (model.rollout_precision; ``auto``: bf16 where the CPU has it natively,
    raylab.models.precision) casts its encoder to bfloat16 (the Nature CNN's act() in 0.54-0.60x the time on
    such a CPU); the heads stay fp32, so near-equal Q values or logits do not collapse into bf16 ties.
    An encoder that asks for it (``channels_last_inference``: the IMPALA CNN, 0.39-0.49x in fp32, 0.25-0.33x
    with bf16) goes to channels-last memory format. Loading weights later keeps both (``copy_`` casts and keeps
    the strides)."""
    encoder = getattr(module, "encoder", None)
    if resolve_precision(precision) == "bf16" and encoder is not None:
        encoder.to(torch.bfloat16)
    if getattr(encoder, "channels_last_inference", False):
        module = module.to(memory_format=torch.channels_last)  # type: ignore[call-overload]
    return module


class QNetwork(nn.Module):
    """encoder -> Q head. uint8 observations are scaled to [0, 1] here, so frames cross processes as uint8.

    ``forward`` gives Q values [B, A] (for QR-DQN the mean of the quantiles), which is all that acting needs;
    ``atoms`` gives the head's [B, A, atoms] output that the quantile loss trains.
    """

    def __init__(self, encoder: Encoder, head: QHead | DuelingQHead):
        super().__init__()
        self.encoder = encoder
        self.head = head

    state_size = 0
    """Floats of memory per slot (0: a feed-forward network; RecurrentQNetwork has some)."""

    @property
    def num_atoms(self) -> int:
        return self.head.atoms

    def atoms(self, obs: torch.Tensor) -> torch.Tensor:
        return self.head(encode(self.encoder, obs))

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        atoms = self.atoms(obs)
        return atoms.squeeze(2) if atoms.shape[2] == 1 else atoms.mean(dim=2)


class RecurrentQNetwork(QNetwork):
    """encoder -> LSTM or GRU core (raylab/models/recurrent.py) -> Q head: R2D2's network (algo=dqn with
    model.recurrent). Like RecurrentActorCritic it has no ``forward(obs)``: acting goes through ``step``,
    training through ``unroll`` over whole sequences from their stored start states."""

    def __init__(self, encoder: Encoder, core: RecurrentCore, head: QHead | DuelingQHead):
        super().__init__(encoder, head)
        self.core = core

    @property
    def state_size(self) -> int:  # type: ignore[override]
        return self.core.state_size

    def initial_state(self, num: int) -> torch.Tensor:
        """The state of ``num`` slots at an episode's start: zeros."""
        return torch.zeros(num, self.state_size)

    def atoms(self, obs: torch.Tensor) -> torch.Tensor:
        raise TypeError("a recurrent Q network needs its state: call step(obs, state) or unroll(...)")

    def step(self, obs: torch.Tensor, state: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """One step of ``B`` slots: (Q values ``[B, A]``, next state ``[B, S]``)."""
        out, state = self.core.step(encode(self.encoder, obs), state)
        return self.head(out).squeeze(2), state

    def unroll(
        self, obs: torch.Tensor, state: torch.Tensor, reset_before: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``obs [L, B, ...]`` from ``state [B, S]`` (zeroed where ``reset_before [L, B]``): Q values
        ``[L, B, A]`` and the state after the last step. The encoder runs once over all ``L * B`` steps."""
        steps, batch = obs.shape[:2]
        features = encode(self.encoder, obs.reshape(steps * batch, *obs.shape[2:]))
        out, last, _ = self.core.unroll(features.reshape(steps, batch, -1), state, reset_before)
        return self.head(out.reshape(steps * batch, -1)).squeeze(2).reshape(steps, batch, -1), last


class ActorCritic(nn.Module):
    """encoder -> (action distribution parameters, state value). Shared by A3C, PPO and APPO; uint8 frames
    are scaled here too. ``dist`` (raylab/models/distributions.py) says what the parameters are: logits for
    discrete actions; for a Box, the mean and a state-independent log-std (``log_std_init`` at the start).

    The policy head starts near uniform / near zero mean (weights scaled by 0.01, as in openai/baselines), so
    early rollouts explore and the entropy bonus does not fight a peaked random initialisation.
    ``obs_norm`` (model.normalize_obs) standardizes observations with running statistics that the learner
    updates (buffers: they travel with the published weights and the checkpoints).
    """

    def __init__(
        self,
        encoder: Encoder,
        dist: ActionDist | int,
        log_std_init: float = 0.0,
        obs_norm: RunningNorm | None = None,
        head_inputs: int | None = None,
    ):
        """``dist``: the action distribution, or a number of discrete actions (a Categorical over them).
        ``head_inputs``: the heads' input width, when something sits between them and the encoder (a
        recurrent core)."""
        super().__init__()
        dist = Categorical(dist) if isinstance(dist, int) else dist
        self.encoder = encoder
        self.dist: ActionDist = dist
        self.obs_norm = obs_norm
        outputs = (
            dist.num_actions
            if isinstance(dist, Categorical)
            else dist.num_outputs
            if isinstance(dist, MultiCategorical)
            else dist.action_dim
        )
        width = encoder.out_dim if head_inputs is None else head_inputs
        self.policy = nn.Linear(width, outputs)
        self.value = nn.Linear(width, 1)
        if isinstance(dist, DiagGaussian):
            self.log_std = nn.Parameter(torch.full((dist.action_dim,), float(log_std_init)))
        with torch.no_grad():
            self.policy.weight.mul_(0.01)
            self.policy.bias.zero_()

    state_size = 0
    """Floats of memory per slot (0: a feed-forward network; RecurrentActorCritic has some)."""

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.heads(encode(self.encoder, obs, self.obs_norm))

    def heads(self, features: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``[B, F]`` features -> (distribution parameters, values ``[B]``)."""
        head = self.policy(features)
        if isinstance(self.dist, DiagGaussian):
            head = torch.cat([head, self.log_std.expand_as(head)], dim=1)
        return head, self.value(features).squeeze(-1)


class RecurrentActorCritic(ActorCritic):
    """encoder -> LSTM or GRU core (raylab/models/recurrent.py) -> the actor-critic heads (model.recurrent).

    It has no ``forward(obs)``: its outputs depend on a state. Acting goes through ``step``, which takes and
    returns each slot's state; training through ``unroll`` over whole sequences."""

    def __init__(
        self,
        encoder: Encoder,
        dist: ActionDist | int,
        core: RecurrentCore,
        log_std_init: float = 0.0,
        obs_norm: RunningNorm | None = None,
    ):
        super().__init__(encoder, dist, log_std_init, obs_norm, head_inputs=core.size)
        self.core = core

    @property
    def state_size(self) -> int:  # type: ignore[override]
        return self.core.state_size

    def initial_state(self, num: int) -> torch.Tensor:
        """The state of ``num`` slots at an episode's start: zeros."""
        return torch.zeros(num, self.state_size)

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        raise TypeError("a recurrent actor-critic needs its state: call step(obs, state) or unroll(...)")

    def step(self, obs: torch.Tensor, state: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """One step of ``B`` slots: (distribution parameters, values ``[B]``, next state ``[B, S]``)."""
        out, state = self.core.step(encode(self.encoder, obs, self.obs_norm), state)
        head, value = self.heads(out)
        return head, value, state

    def unroll(
        self, obs: torch.Tensor, state: torch.Tensor, reset_before: torch.Tensor | None, keep: bool = False
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """``obs [L, B, ...]`` from ``state [B, S]`` with the state zeroed where ``reset_before [L, B]``: the
        distribution parameters ``[L * B, ...]`` and values ``[L * B]`` (time-major, flattened), the state
        after the last step, and with ``keep`` the state after each step ``[L, B, S]``."""
        steps, batch = obs.shape[:2]
        features = encode(self.encoder, obs.reshape(steps * batch, *obs.shape[2:]), self.obs_norm)
        out, last, after = self.core.unroll(features.reshape(steps, batch, -1), state, reset_before, keep)
        head, value = self.heads(out.reshape(steps * batch, -1))
        return head, value, last, after


def _num_actions(spaces: EnvSpaces) -> int:
    if spaces.num_actions is None:
        raise ConfigError(
            f"this model needs a discrete action space but the env has {spaces.action_space}: "
            f"choose an env with discrete actions"
        )
    return spaces.num_actions


class CustomQNetwork(QNetwork):
    """A QNetwork whose whole body is the user's module (raylab/models/custom.py): obs -> Q values [B, A]."""

    def __init__(self, net: nn.Module):
        nn.Module.__init__(self)  # no encoder or head of raylab's: the user's module is both
        self.net = net

    @property
    def num_atoms(self) -> int:
        return 1

    def atoms(self, obs: torch.Tensor) -> torch.Tensor:
        return self.net(scaled(obs)).unsqueeze(2)


class CustomActorCritic(ActorCritic):
    """An ActorCritic whose body is the user's module: obs -> (logits [B, A] or a Box's mean [B, D], value [B]);
    for a Box, raylab adds the state-independent log-std, as for its own head."""

    def __init__(self, net: nn.Module, dist: ActionDist, log_std_init: float = 0.0):
        nn.Module.__init__(self)  # no encoder or heads of raylab's: the user's module is all of it
        self.net = net
        self.dist = dist
        self.obs_norm = None
        if isinstance(dist, DiagGaussian):
            self.log_std = nn.Parameter(torch.full((dist.action_dim,), float(log_std_init)))

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        head, value = self.net(scaled(obs))
        if isinstance(self.dist, DiagGaussian):
            head = torch.cat([head, self.log_std.expand_as(head)], dim=1)
        return head, value


def build_q_network(cfg: ModelConfig, spaces: EnvSpaces, atoms: int = 1) -> QNetwork:
    """Q network with ``atoms`` outputs per action (the number of quantiles for QR-DQN)."""
    num_actions = _num_actions(spaces)
    if cfg.encoder == "custom":
        if cfg.recurrent != "none":
            raise ConfigError(
                "model.recurrent adds raylab's core after raylab's encoders; model=custom builds the whole network: "
                "set model.recurrent=none"
            )
        if atoms != 1:
            raise ConfigError(
                "model=custom returns Q values itself: set algo.loss=huber, "
                "or build quantiles into your module and use a built-in model"
            )
        return CustomQNetwork(build_custom(cfg, spaces, "q"))
    encoder = build_encoder(cfg, spaces)
    if cfg.recurrent != "none":
        if atoms != 1:
            raise ConfigError("model.recurrent (R2D2) trains expected Q values: set algo.loss=huber")
        core = RecurrentCore(cfg.recurrent, encoder.out_dim, cfg.recurrent_size)
        return RecurrentQNetwork(encoder, core, (DuelingQHead if cfg.dueling else QHead)(core.size, num_actions, 1))
    head = (DuelingQHead if cfg.dueling else QHead)(encoder.out_dim, num_actions, atoms)
    return QNetwork(encoder, head)


def action_dist(spaces: EnvSpaces) -> ActionDist:
    """The actor-critic's action distribution for the env's action space."""
    if spaces.action_dim is not None:
        return DiagGaussian(spaces.action_dim)
    if spaces.action_nvec is not None:
        return MultiCategorical(spaces.action_nvec)
    return Categorical(_num_actions(spaces))


def build_actor_critic(cfg: ModelConfig, spaces: EnvSpaces) -> ActorCritic:
    dist = action_dist(spaces)
    if cfg.encoder == "custom":
        if cfg.recurrent != "none":
            raise ConfigError(
                "model.recurrent adds raylab's core after raylab's encoders; model=custom builds the whole network: "
                "set model.recurrent=none, or put your recurrent layer in a built-in model's place"
            )
        return CustomActorCritic(build_custom(cfg, spaces, "actor_critic"), dist, cfg.log_std_init)
    obs_norm = RunningNorm(spaces.obs_shape) if cfg.normalize_obs else None
    encoder = build_encoder(cfg, spaces)
    model: ActorCritic
    if cfg.recurrent != "none":
        core = RecurrentCore(cfg.recurrent, encoder.out_dim, cfg.recurrent_size)
        model = RecurrentActorCritic(encoder, dist, core, cfg.log_std_init, obs_norm)
    else:
        model = ActorCritic(encoder, dist, cfg.log_std_init, obs_norm)
    if cfg.init == "orthogonal":
        orthogonal_init(model)
    return model


def orthogonal_init(model: ActorCritic) -> None:
    """openai/baselines' and CleanRL's start: the encoder's convolutions and Linear layers orthogonal with gain
    sqrt(2) (ReLU) and zero biases, the policy head with gain 0.01, the value head with gain 1 (a recurrent
    core keeps its own init)."""
    with torch.no_grad():
        for layer in model.encoder.modules():
            if isinstance(layer, nn.Conv2d | nn.Linear):
                nn.init.orthogonal_(layer.weight, gain=2**0.5)
                if layer.bias is not None:
                    layer.bias.zero_()
        for head, gain in ((model.policy, 0.01), (model.value, 1.0)):
            nn.init.orthogonal_(head.weight, gain=gain)
            head.bias.zero_()


def build_encoder(cfg: ModelConfig, spaces: EnvSpaces) -> Encoder:
    encoder: Encoder
    if spaces.obs_parts:  # a Tuple or Dict observation with an image: an encoder per part (raylab/models/keyed.py)
        if cfg.normalize_obs:
            raise ConfigError(
                "model.normalize_obs standardizes a vector observation, and this one holds an image "
                f"({', '.join(p.key for p in spaces.obs_parts if p.kind == 'image')}): set model.normalize_obs=false"
            )
        row_uint8 = np.dtype(spaces.obs_dtype) == np.uint8
        return KeyedEncoder(
            spaces.obs_parts, row_uint8, cfg.encoder, cfg.hidden_sizes, cfg.image_scale,
            batch_norm=cfg.norm == "batch", conv_channels=cfg.conv_channels,
        )  # fmt: skip
    if cfg.encoder in ("nature_cnn", "impala_cnn"):
        if len(spaces.obs_shape) != 3:
            raise ConfigError(
                f"model={cfg.encoder} needs image observations (C, H, W), got shape {spaces.obs_shape}: use model=mlp"
            )
        channels, _, width = spaces.obs_shape
        if width in (1, 3, 4) and channels > 4:
            raise ConfigError(
                f"model={cfg.encoder} needs channel-first observations (C, H, W), got {spaces.obs_shape}, which "
                f"looks channel-last: transpose the observation (H, W, C) -> (C, H, W)"
            )
        if cfg.encoder == "nature_cnn":
            encoder = NatureCNN(
                spaces.obs_shape, cfg.hidden_sizes, batch_norm=cfg.norm == "batch", conv_channels=cfg.conv_channels
            )
        else:
            encoder = ImpalaCNN(spaces.obs_shape, cfg.hidden_sizes)
    else:
        encoder = MLPEncoder(spaces.obs_shape, cfg.hidden_sizes)
    return encoder

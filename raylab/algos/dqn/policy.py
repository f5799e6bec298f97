"""Ape-X exploration: each env slot acts epsilon-greedily with its own epsilon."""

from __future__ import annotations

import numpy as np
import torch

from raylab.models.factory import QNetwork, RecurrentQNetwork, for_acting
from raylab.models.numpy_policy import Mirrored, NumpyQ, VersionedWeights, q_linears
from raylab.models.recurrent import SlotStates


def apex_epsilons(num_slots: int, base: float = 0.4, alpha: float = 7.0) -> np.ndarray:
    """Horgan et al. 2018: slot i of N explores with base ** (1 + alpha * i / (N - 1)); one slot gets base."""
    if num_slots == 1:
        return np.array([base])
    i = np.arange(num_slots)
    return base ** (1.0 + alpha * i / (num_slots - 1))


class EpsilonSchedule:
    """Per-slot epsilons, annealed linearly from ``initial`` to ``final`` over ``anneal_env_steps`` total steps.

    A worker knows only its own steps; ``steps_scale`` (the number of workers) turns them into an estimate
    of the run's total, since workers step at about the same rate.
    """

    def __init__(self, final: np.ndarray, initial: float = 1.0, anneal_env_steps: int = 0, steps_scale: int = 1):
        self.final = np.asarray(final, np.float64)
        self.initial = float(initial)
        self.anneal_env_steps = int(anneal_env_steps)
        self.steps_scale = int(steps_scale)

    def __call__(self, local_steps: int) -> np.ndarray:
        if self.anneal_env_steps <= 0:
            return self.final
        frac = min(1.0, local_steps * self.steps_scale / self.anneal_env_steps)
        return self.initial + frac * (self.final - self.initial)


class EpsilonGreedyPolicy(VersionedWeights):
    """Greedy in a local copy of the Q network, random with each slot's epsilon. CPU inference, no grad;
    ``numpy_inference``: through a NumPy copy of a plain MLP Q network (raylab/models/numpy_policy.py);
    ``precision="bf16"`` (model.rollout_precision): otherwise through a copy whose encoder is bfloat16 (its Q
    head stays fp32: no bf16 ties between near-equal actions)."""

    def __init__(
        self,
        q_net: QNetwork,
        epsilons: EpsilonSchedule,
        num_actions: int,
        seed: int,
        numpy_inference: bool = False,
        precision: str = "fp32",
        device: str = "cpu",
    ):
        """``device``: where the network acts (cuda: an inference actor's)."""
        self.device = torch.device(device)
        q_net = q_net.eval().requires_grad_(False).to(self.device)
        cpu = self.device.type == "cpu"
        self.numpy = NumpyQ(q_net) if cpu and numpy_inference and q_linears(q_net) is not None else None
        if self.numpy is None:  # model.rollout_precision, channels-last where the encoder asks for it
            q_net = for_acting(q_net, precision)
        self._mirrored = Mirrored(q_net, self.numpy)
        self.epsilons = epsilons
        self.num_actions = num_actions
        self.rng = np.random.default_rng(seed)
        self.version = -1
        self.last_log_probs: np.ndarray | None = None  # epsilon-greedy keeps none
        self.steps = 0
        """Vector steps taken (each is one agent step per env slot)."""
        self.state_size = int(q_net.state_size)
        """Floats of memory per slot (model.recurrent: R2D2); 0 for a feed-forward network."""
        self._memory = SlotStates(self.state_size)
        """The state each slot acts from next (a recurrent model)."""

    def states(self, num: int) -> np.ndarray | None:
        """A copy of the state each of ``num`` slots acts from next; None without memory."""
        return self._memory.copy(num) if self.state_size else None

    def reset_states(self, done: np.ndarray) -> None:
        self._memory.reset(done)

    def act(self, obs: np.ndarray) -> np.ndarray:
        num = obs.shape[0]
        eps = self.epsilons(self.steps * num)
        explore = self.rng.random(num) < eps
        self.steps += 1
        if self.state_size:  # every slot's state advances every step, also where it explores
            greedy = self._greedy_recurrent(obs)
        elif explore.all():  # no slot needs the network (common early on, and with few envs)
            return np.asarray(self.rng.integers(self.num_actions, size=num))
        elif self.numpy is not None:
            greedy = self.numpy.values(obs).argmax(1)
        else:
            with torch.inference_mode():
                greedy = self.q_net(torch.from_numpy(obs).to(self.device)).argmax(dim=1).cpu().numpy()
        if explore.any():
            return np.where(explore, self.rng.integers(self.num_actions, size=num), greedy)
        return greedy

    def _greedy_recurrent(self, obs: np.ndarray) -> np.ndarray:
        """Argmax Q of every slot from its state, advancing the states (a batch of a new size starts at zeros)."""
        rows = self._memory.current(len(obs))
        q_net = self.q_net
        assert isinstance(q_net, RecurrentQNetwork)
        with torch.inference_mode():
            q, state = q_net.step(torch.from_numpy(obs), torch.from_numpy(rows))
        self._memory.rows = state.numpy()
        return q.argmax(dim=1).numpy()

    @property
    def q_net(self) -> QNetwork:
        """The torch module, holding the newest weights loaded (with a NumPy copy, loaded when asked for)."""
        return self._mirrored.module

    @property
    def epsilon(self) -> float:
        """Mean exploration rate over the slots now."""
        return float(np.mean(self.epsilons(self.steps * len(self.epsilons.final))))

"""A stochastic policy over an actor-critic network: samples to act and explore, the mode to evaluate
(argmax for discrete actions, the mean for a Box; raylab/models/distributions.py).

Algorithm-neutral: PPO, APPO and A3C act through it (A3C on the very module its worker trains)."""

from __future__ import annotations

import numpy as np
import torch

from raylab.models import numpy_policy
from raylab.models.factory import ActorCritic, RecurrentActorCritic, for_acting
from raylab.models.numpy_policy import Mirrored, NumpyActor, VersionedWeights
from raylab.models.recurrent import SlotStates


class ActorCriticPolicy(VersionedWeights):
    """CPU inference without autograd. ``greedy`` picks the most likely action (evaluation).

    ``frozen`` (the default) puts the model in eval mode without gradients: the policy owns it. False leaves
    the module's mode and gradients alone, for a caller that also trains it in place (A3C's worker): acting
    still runs under ``torch.inference_mode``.

    ``precision="bf16"`` (model.rollout_precision) acts through a copy of a frozen torch model (not one with a
    NumPy copy) whose encoder is bfloat16 (raylab.models.factory.for_acting): every weights load casts into it.

    ``keep_log_probs`` (the default) records the log-probabilities of the actions taken (``last_log_probs``,
    a chunk's ``log_probs``), which APPO's V-trace needs. False samples from the softmax alone and leaves
    ``last_log_probs`` None: for consumers that recompute what they need (A3C's loss, PPO's round values),
    it spares a log-softmax, a gather and a copy on every step of a small network's rollout.
    """

    def __init__(
        self,
        model: ActorCritic,
        seed: int,
        greedy: bool = False,
        frozen: bool = True,
        keep_log_probs: bool = True,
        numpy_inference: bool = False,
        precision: str = "fp32",
        device: str = "cpu",
    ):
        """``device``: where it acts (cuda: an inference actor's; observations go there, actions come back)."""
        module = model.eval().requires_grad_(False) if frozen else model
        self.greedy = greedy
        self.keep_log_probs = keep_log_probs
        self.device = torch.device(device)
        self.generator = torch.Generator(device=self.device).manual_seed(int(seed))
        self.version = -1
        self.last_log_probs: np.ndarray | None = None
        self.numpy: NumpyActor | None = None
        """A NumPy copy of a plain MLP model (model.numpy_inference); only of a frozen model, whose
        parameters change only through ``set_weights``, which reloads the copy."""
        if numpy_inference and frozen and numpy_policy.supports(module):
            self.numpy = NumpyActor(module, seed=int(seed))
        elif frozen:  # model.rollout_precision, channels-last where the encoder asks for it
            module = for_acting(module.to(self.device), precision)
        self._mirrored = Mirrored(module, self.numpy)
        self.state_size = int(module.state_size)
        """Floats of memory per slot (model.recurrent); 0 for a feed-forward network."""
        self._memory = SlotStates(self.state_size)
        """The state each slot acts from next (a recurrent model)."""

    @property
    def model(self) -> ActorCritic:
        """The torch module, holding the newest weights loaded (with a NumPy copy, loaded when asked for)."""
        return self._mirrored.module

    def states(self, num: int) -> np.ndarray | None:
        """A copy of the state each of ``num`` slots acts from next; None without memory."""
        return self._memory.copy(num) if self.state_size else None

    def reset_states(self, done: np.ndarray) -> None:
        self._memory.reset(done)

    def act(self, obs: np.ndarray) -> np.ndarray:
        if self.state_size:
            return self._act_recurrent(obs)
        if self.numpy is not None:
            if self.greedy:
                return self.numpy.mode(obs)
            sampled, sampled_log_probs = self.numpy.sample(obs)
            if self.keep_log_probs:
                self.last_log_probs = sampled_log_probs
            return sampled
        if self.device.type != "cpu":
            return self._act_on_device(obs)
        with torch.inference_mode():
            params, _ = self.model(torch.from_numpy(obs))
            dist = self.model.dist
            if self.greedy:
                return dist.mode(params).numpy()
            if not self.keep_log_probs:
                return dist.sample(params, self.generator).numpy()
            actions, log_probs = dist.sample_with_log_prob(params, self.generator)
            self.last_log_probs = log_probs.numpy()
            return actions.numpy()

    def _act_on_device(self, obs: np.ndarray) -> np.ndarray:
        """``act`` of a feed-forward policy on a GPU: one copy in (uint8 frames stay uint8), one copy back."""
        with torch.inference_mode():
            params, _ = self.model(torch.from_numpy(obs).to(self.device, non_blocking=True))
            dist = self.model.dist
            if self.greedy:
                return dist.mode(params).cpu().numpy()
            actions, log_probs = dist.sample_with_log_prob(params, self.generator)
            if self.keep_log_probs:
                self.last_log_probs = log_probs.float().cpu().numpy()
            return actions.cpu().numpy()

    def _act_recurrent(self, obs: np.ndarray) -> np.ndarray:
        """One step of every slot: acts from its state and advances it (a slot of a new batch size, zeros)."""
        rows = self._memory.current(len(obs))
        if self.numpy is not None:  # an MLP encoder and its core, stepped in NumPy (the state advanced in place)
            if self.greedy:
                return self.numpy.mode(obs, rows)
            sampled, sampled_log_probs = self.numpy.sample(obs, rows)
            if self.keep_log_probs:
                self.last_log_probs = sampled_log_probs
            return sampled
        model = self.model
        assert isinstance(model, RecurrentActorCritic)
        with torch.inference_mode():
            params, _, state = model.step(torch.from_numpy(obs), torch.from_numpy(rows))
            self._memory.rows = state.numpy()
            dist = model.dist
            if self.greedy:
                return dist.mode(params).numpy()
            if not self.keep_log_probs:
                return dist.sample(params, self.generator).numpy()
            actions, log_probs = dist.sample_with_log_prob(params, self.generator)
            self.last_log_probs = log_probs.numpy()
            return actions.numpy()

"""One whole PPO/APPO optimizer step for a plain MLP actor-critic on the CPU, in NumPy (``learner.fused``).

On a small network (CartPole's 4 -> 64 -> 64 trunk with a 2-logit policy head and a value head, minibatches of
512) an update through autograd costs about 1 ms on this project's 2-core CPU, most of it torch's dispatch and
autograd's bookkeeping around a few small matrix products; the same step written out here takes a third of
that (benchmarks/ppo_fused_update.json). It is the clipped objective of raylab/algos/ppo/loss.py, term by term:

- the forward pass: the trunk (Linear + ReLU layers, observations standardized first under
  model.normalize_obs), the policy head (logits, or a Gaussian's mean with the state-independent log-std), the
  value head;
- the log-probabilities and entropies (a log-softmax, or the diagonal Gaussian's closed forms), the ratio to the
  behaviour policy, the clipped surrogate, the (clipped) squared value error, the entropy bonus;
- their gradients, with torch's conventions where a derivative is a choice: ``min``/``max`` of two equal terms
  send half the gradient to each, ``clamp`` passes it at its bounds;
- the backward pass through the heads and the trunk, torch's global-norm clipping and torch's Adam
  (raylab/learner/fused/adam.py: the parameters and Adam's state are views of one flat buffer each, so
  checkpoints, published weights and the round's value pass read the same memory).

Minibatches come from the Learner as NumPy arrays gathered from the round's targets (copies); the step normalizes
their advantages as the objective's ``finish_minibatch`` does in torch. tests/unit/test_ppo_fused.py holds every
metric, parameter and Adam moment to the autograd path's after every call, for PPO and APPO, both action
distributions and the options that change the loss.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from raylab.learner.flat import FlatParams
from raylab.learner.fused.adam import FlatAdam, FusedResult, adam_unsupported, linear_backward
from raylab.models.distributions import LOG_2PI, Categorical
from raylab.models.factory import ActorCritic
from raylab.models.normalize import CLIP
from raylab.models.numpy_policy import features, mlp_linears, supports


class FusedActorCriticStep:
    """``step(minibatch)``: the clipped objective's loss and gradient, clipping and Adam, in place on the
    actor-critic's parameters and the optimizer's state."""

    @staticmethod
    def unsupported(model: nn.Module, optimizer: torch.optim.Optimizer) -> str:
        """Why this model/optimizer cannot be fused ('' when it can)."""
        if model.state_size if isinstance(model, ActorCritic) else False:
            return "a recurrent actor-critic (model.recurrent) trains on sequences, in torch"
        if not isinstance(model, ActorCritic) or not supports(model):
            return "only a plain MLP actor-critic (model.encoder=mlp, no custom model) is fused"
        return adam_unsupported(optimizer, list(model.parameters()))

    def __init__(
        self,
        model: ActorCritic,
        flat: FlatParams,
        *,
        clip: float,
        value_clip: float | None,
        value_coef: float,
        entropy_coef: float,
        max_grad_norm: float | None,
        normalize_advantages: bool = False,
    ):
        reason = self.unsupported(model, flat.optimizer)
        assert not reason, reason
        self.clip = float(clip)
        self.value_clip = None if value_clip is None else float(value_clip)
        self.value_coef = float(value_coef)
        self.entropy_coef = float(entropy_coef)
        self.normalize_advantages = normalize_advantages
        """Normalize each minibatch's advantages (the objective's ``finish_minibatch``, in NumPy)."""
        self.model = model
        self.discrete = isinstance(model.dist, Categorical)
        params = list(model.parameters())
        self.adam = FlatAdam(flat, max_grad_norm)
        position = {id(p): i for i, p in enumerate(params)}

        def views(layer: nn.Linear) -> tuple[np.ndarray, np.ndarray]:
            return layer.weight.detach().numpy(), layer.bias.detach().numpy()

        def grads(layer: nn.Linear) -> list[np.ndarray]:
            return [self.adam.grads[position[id(layer.weight)]], self.adam.grads[position[id(layer.bias)]]]

        # NumPy views of the parameters, made once: Adam and load_state_dict write into the same memory in place
        linears = mlp_linears(model.encoder.net) or []  # supports(model): Linear + ReLU pairs
        self.layers = [views(layer) for layer in linears]
        self.layer_grads = [g for layer in linears for g in grads(layer)]
        self.policy, self.policy_grads = views(model.policy), grads(model.policy)
        self.value, self.value_grads = views(model.value), grads(model.value)
        self.log_std: np.ndarray | None = None
        if not self.discrete:
            self.log_std = model.log_std.detach().numpy()
            self.log_std_grad = self.adam.grads[position[id(model.log_std)]]

    def bind_optimizer_state(self) -> None:
        """Re-attach Adam's state after ``optimizer.load_state_dict`` (raylab/learner/fused/adam.py)."""
        self.adam.bind_optimizer_state()

    def step(self, mb: dict[str, np.ndarray]) -> FusedResult:
        """One optimizer step on a minibatch the Learner gathered (its own copies: advantages are normalized in
        place, as ``finish_minibatch`` does in torch)."""
        # like torch, let a diverging run produce inf/NaN quietly: the driver stops it in one line naming the fix
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            advantages = mb["advantages"]
            if self.normalize_advantages and advantages.size > 1:
                advantages -= advantages.mean()
                advantages /= advantages.std(ddof=1) + np.float32(1e-8)
            return self._step(mb)

    def _inputs(self, obs: np.ndarray) -> np.ndarray:
        x = features(obs)
        norm = self.model.obs_norm
        if norm is None:
            return x
        mean = norm.mean.to(torch.float32).numpy().reshape(-1)  # as RunningNorm.forward casts its float64 buffers
        std = torch.sqrt(norm.var + norm.eps).to(torch.float32).numpy().reshape(-1)
        return np.clip((x - mean) / std, -CLIP, CLIP)

    def _step(self, mb: dict[str, np.ndarray]) -> FusedResult:
        f32 = np.float32
        x = self._inputs(mb["obs"])
        n = len(x)
        inv_n = f32(1.0 / n)
        # forward: the trunk (a ReLU after every Linear), the policy head, the value head
        acts = [x]
        for w, b in self.layers:
            h = acts[-1] @ w.T
            h += b
            np.maximum(h, 0.0, out=h)
            acts.append(h)
        feat = acts[-1]
        head = feat @ self.policy[0].T
        head += self.policy[1]
        values = feat @ self.value[0][0]
        values += self.value[1][0]
        actions = mb["actions"]
        if self.discrete:
            shifted = head - head.max(1, keepdims=True)
            exp = np.exp(shifted)
            total = exp.sum(1, keepdims=True)
            log_softmax = shifted - np.log(total)
            probs = exp / total
            rows = np.arange(n)
            taken = actions.astype(np.int64, copy=False).reshape(-1)
            log_probs = log_softmax[rows, taken]
            entropies = -(probs * log_softmax).sum(1)
        else:
            assert self.log_std is not None
            inv_std = np.exp(-self.log_std)
            z = (actions.reshape(head.shape) - head) * inv_std
            log_probs = -(0.5 * z * z + self.log_std + f32(0.5 * LOG_2PI)).sum(1)
            entropies = np.full(n, (self.log_std + f32(0.5 * (1.0 + LOG_2PI))).sum(), np.float32)
        # the loss (raylab/algos/ppo/loss.py)
        advantages, returns = mb["advantages"], mb["returns"]
        log_ratio = log_probs - mb["old_log_probs"]
        ratio = np.exp(log_ratio)
        lo, hi = f32(1.0 - self.clip), f32(1.0 + self.clip)
        unclipped = ratio * advantages
        clipped = np.clip(ratio, lo, hi) * advantages
        policy_loss = -float(np.minimum(unclipped, clipped).mean())
        error = values - returns
        errors = error * error
        if self.value_clip is not None:
            old_values = mb["old_values"]
            delta = values - old_values
            clipped_error = old_values + np.clip(delta, -self.value_clip, self.value_clip) - returns
            errors_clipped = clipped_error * clipped_error
            value_loss = 0.5 * float(np.maximum(errors, errors_clipped).mean())
        else:
            value_loss = 0.5 * float(errors.mean())
        entropy = float(entropies.mean())
        loss = policy_loss + self.value_coef * value_loss - self.entropy_coef * entropy
        # d loss / d log pi(a|s): through min(r A, clamp(r) A) (ties: half each way) and r = exp(log_ratio)
        inside = ((ratio >= lo) & (ratio <= hi)).astype(np.float32)
        share = np.where(unclipped < clipped, f32(1.0), np.where(unclipped > clipped, inside, f32(0.5) * (1 + inside)))
        d_log_probs = -(ratio * advantages * share) * inv_n
        # d loss / d V: 0.5 mean of (V - R)^2, or of max((V - R)^2, (clipped V - R)^2) (ties: half each way)
        scale = f32(self.value_coef) * inv_n  # value_coef * 0.5 * 2 / n
        if self.value_clip is not None:
            passes = np.abs(delta) <= f32(self.value_clip)  # clamp's gradient: 1 within its bounds, ends included
            plain = np.where(errors > errors_clipped, f32(1.0), np.where(errors < errors_clipped, f32(0.0), f32(0.5)))
            d_values = (plain * error + (1 - plain) * clipped_error * passes) * scale
        else:
            d_values = error * scale
        # into the head: d log pi / d params and the entropy bonus's gradient
        if self.discrete:
            d_head = -probs * d_log_probs[:, None]
            d_head[rows, taken] += d_log_probs
            if self.entropy_coef:  # d(-c mean H)/dz = c / n * p (log p + H)
                d_head += f32(self.entropy_coef) * inv_n * probs * (log_softmax + entropies[:, None])
        else:
            d_head = d_log_probs[:, None] * z * inv_std
            # d log pi / d log_std = z^2 - 1 per sample; d mean(H) / d log_std = 1
            self.log_std_grad[...] = (d_log_probs[:, None] * (z * z - 1.0)).sum(0) - f32(self.entropy_coef)
        # backward: the heads, then the trunk
        np.matmul(d_head.T, feat, out=self.policy_grads[0])
        d_head.sum(0, out=self.policy_grads[1])
        np.matmul(d_values[None, :], feat, out=self.value_grads[0])
        self.value_grads[1][0] = d_values.sum()
        if self.layers:
            d_feat = d_head @ self.policy[0]
            d_feat += d_values[:, None] * self.value[0]
            d_feat *= feat > 0  # through the trunk's last ReLU
            linear_backward(self.layers, acts[:-1], d_feat, self.layer_grads)
        grad_norm = self.adam.clip_and_step()
        metrics = {
            "loss": loss,
            "policy_loss": policy_loss,
            "value_loss": value_loss,
            "entropy": entropy,
            "approx_kl": float(((ratio - 1.0) - log_ratio).mean()),
            "clip_fraction": float((np.abs(ratio - 1.0) > self.clip).mean()),
            "grad_norm": grad_norm,
        }
        return FusedResult(metrics)

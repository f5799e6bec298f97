"""MultiCategorical (raylab/models/distributions.py): a categorical per entry of a MultiDiscrete or MultiBinary
action, held to torch.distributions' Categorical entry by entry."""

from __future__ import annotations

import torch
from torch.distributions import Categorical as TorchCategorical

from raylab.models.distributions import MultiCategorical

NVEC = (3, 2, 4)


def entries(params: torch.Tensor) -> list[TorchCategorical]:
    return [TorchCategorical(logits=p) for p in torch.split(params, NVEC, dim=1)]


def test_log_prob_and_entropy_are_the_sums_over_independent_entries():
    params = torch.randn(5, sum(NVEC), generator=torch.Generator().manual_seed(0))
    actions = torch.tensor([[0, 1, 3], [2, 0, 0], [1, 1, 1], [0, 0, 2], [2, 1, 3]])
    dist = MultiCategorical(NVEC)
    want_lp = sum(d.log_prob(actions[:, i]) for i, d in enumerate(entries(params)))
    want_ent = sum(d.entropy() for d in entries(params))
    log_prob, entropy = dist.log_prob_and_entropy(params, actions)
    torch.testing.assert_close(log_prob, want_lp)
    torch.testing.assert_close(entropy, want_ent)
    torch.testing.assert_close(dist.log_prob(params, actions), want_lp)
    torch.testing.assert_close(dist.entropy(params), want_ent)
    assert dist.mode(params).tolist() == torch.stack([d.probs.argmax(1) for d in entries(params)], 1).tolist()


def test_samples_follow_each_entrys_probabilities_and_carry_their_log_probs():
    params = torch.tensor([[2.0, 0.0, -2.0, 0.0, 3.0, 0.0, 0.0, 0.0, 1.0]]).repeat(20_000, 1)
    actions, log_probs = MultiCategorical(NVEC).sample_with_log_prob(params, torch.Generator().manual_seed(1))
    assert actions.shape == (20_000, 3) and actions.dtype == torch.int64
    torch.testing.assert_close(log_probs, MultiCategorical(NVEC).log_prob(params, actions))
    for i, d in enumerate(entries(params[:1])):
        freq = torch.bincount(actions[:, i], minlength=NVEC[i]).float() / len(actions)
        torch.testing.assert_close(freq, d.probs[0], atol=0.015, rtol=0)

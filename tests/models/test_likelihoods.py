"""The likelihoods against their definitions (float64), and MSE = Gaussian maximum likelihood (C1)."""

import math

import pytest
import torch
from torch.distributions import Normal

from redthread.models.likelihoods import bits_per_char, gaussian_nll, perplexity, token_nll

B, T, V = 3, 5, 7


def rand(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_token_nll_matches_manual_log_softmax(reduction):
    logits = rand(B, T, V, seed=1) * 3
    targets = torch.randint(0, V, (B, T), generator=torch.Generator().manual_seed(2))
    manual = -logits.log_softmax(-1).gather(-1, targets[..., None]).squeeze(-1)  # (B, T)
    # the log-softmax written out: -(logit_target - log sum_v exp logit_v)
    by_hand = -(logits.gather(-1, targets[..., None]).squeeze(-1) - logits.exp().sum(-1).log())
    torch.testing.assert_close(manual, by_hand, atol=1e-12, rtol=0)
    expected = {"mean": manual.mean(), "sum": manual.sum(), "none": manual.reshape(-1)}[reduction]
    torch.testing.assert_close(token_nll(logits, targets, reduction=reduction), expected, atol=1e-12, rtol=0)


def test_token_nll_of_uniform_logits_is_log_vocab():
    loss = token_nll(torch.zeros(B, T, V, dtype=torch.float64), torch.zeros(B, T, dtype=torch.long))
    assert loss.item() == pytest.approx(math.log(V), abs=1e-12)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_gaussian_nll_matches_torch_normal(reduction):
    mean, target = rand(B, T, seed=1), rand(B, T, seed=2) * 2
    var = rand(B, T, seed=3).exp()
    expected = -Normal(mean, var.sqrt()).log_prob(target)
    expected = {"mean": expected.mean(), "sum": expected.sum(), "none": expected}[reduction]
    torch.testing.assert_close(gaussian_nll(mean, target, var, reduction=reduction), expected, atol=1e-12, rtol=0)


@pytest.mark.parametrize("var", [1.0, 0.25, 4.0])
def test_gaussian_nll_with_float_variance_matches_torch_normal(var):
    mean, target = rand(B, T, seed=1), rand(B, T, seed=2)
    expected = -Normal(mean, math.sqrt(var)).log_prob(target).mean()
    torch.testing.assert_close(gaussian_nll(mean, target, var), expected, atol=1e-12, rtol=0)


@pytest.mark.parametrize("var", [1.0, 0.3])
def test_gaussian_nll_fixed_variance_minimiser_matches_mse(var):
    """With var fixed, NLL = MSE / (2 var) + const, so both pick the same constant prediction: the mean."""
    target = rand(50, seed=4) * 2 + 1.5
    grid = torch.linspace(-2.0, 5.0, 701, dtype=torch.float64)
    nll = torch.stack([gaussian_nll(c.expand(50), target, var) for c in grid])
    mse = torch.stack([((c - target) ** 2).mean() for c in grid])
    assert nll.argmin() == mse.argmin() == (grid - target.mean()).abs().argmin()
    offset = nll - mse / (2 * var)  # the same constant for every prediction
    torch.testing.assert_close(offset, offset[0].expand_as(offset), atol=1e-12, rtol=0)
    c = target.mean().clone().requires_grad_(True)  # and the gradient vanishes exactly at the mean
    gaussian_nll(c.expand(50), target, var).backward()
    assert abs(c.grad.item()) < 1e-12


def test_bits_per_char_and_perplexity_convert_nats():
    assert bits_per_char(100 * math.log(2), 50) == pytest.approx(2.0)
    assert perplexity(math.log(7.0)) == pytest.approx(7.0)
    assert math.isfinite(perplexity(1e6))

"""The likelihoods: every rung of the ladder is trained by maximum likelihood (claim C12).

For tokens, the model outputs logits whose softmax is P(token | context), and the loss is the
negative log-likelihood of the observed next token, averaged over tokens: cross-entropy, in
nats per token. For real-valued targets (the regression rungs, claim C1) the model outputs a
mean and the loss is the Gaussian negative log-likelihood; with a fixed variance that is the
mean squared error up to constants, which is why "MSE = Gaussian maximum likelihood".

Each model names the likelihood of its raw output as its `objective` (`models/base.py`), and
`redthread.train` minimises that one unless told otherwise. They sit below the models: a
likelihood is a function of tensors and knows nothing of training.

Shape legend: B batch, T positions, V vocab.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor

from redthread.data.targets import IGNORE_INDEX  # noqa: F401 (re-exported: the objectives skip it)


def token_nll(logits: Tensor, targets: Tensor, reduction: str = "mean") -> Tensor:
    """-log P(target | context) in nats: logits (B, T, V), targets (B, T) int64; IGNORE_INDEX is skipped."""
    return F.cross_entropy(
        logits.reshape(-1, logits.size(-1)), targets.reshape(-1), reduction=reduction, ignore_index=IGNORE_INDEX
    )


def scored(targets: Tensor) -> Tensor:
    """How many targets a likelihood scores (a 0-dim tensor on their device: no host sync): all of
    them, except token targets equal to IGNORE_INDEX."""
    if not targets.dtype.is_floating_point:
        return (targets != IGNORE_INDEX).sum()
    return torch.tensor(targets.numel(), device=targets.device)


def gaussian_nll(mean: Tensor, target: Tensor, var: Tensor | float = 1.0, reduction: str = "mean") -> Tensor:
    """-log N(target; mean, var) in nats, per element."""
    var = mean.new_tensor(var) if not isinstance(var, Tensor) else var
    nll = 0.5 * (math.log(2 * math.pi) + var.log() + (target - mean) ** 2 / var)
    return nll.mean() if reduction == "mean" else nll.sum() if reduction == "sum" else nll


def normal_nll(output: tuple[Tensor, Tensor], target: Tensor, reduction: str = "mean") -> Tensor:
    """-log N(target; mean, exp(log_var)) for a regression rung's raw output (mean, log_var), each (B,)."""
    mean, log_var = output
    return gaussian_nll(mean, target, log_var.exp(), reduction=reduction)


def bits_per_char(total_nats: float, n_chars: int) -> float:
    """Total NLL of a text in nats -> bits per character of that text (any tokenizer)."""
    return total_nats / (n_chars * math.log(2))


def perplexity(nats_per_token: float) -> float:
    return math.exp(min(nats_per_token, 700.0))  # exp overflows past ~709 nats

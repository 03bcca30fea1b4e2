"""The contract every rung of the ladder keeps: a model of a conditional distribution.

Claims C1, C2 and C12 of the seed: from linear regression to the Transformer, each model
maps a context to a distribution over what comes next, and is trained by maximising the
likelihood of what did come next. The rungs differ only in what context they can use and how.

- A language-model rung (`LanguageModel`) maps token ids idx (B, T) to logits (B, T, V): row t
  is its P(token_{t+1} | tokens_<=t), which `distribution()` returns as a Categorical. It may
  offer a cache (`make_cache`) so `generate()` feeds one new token per step; rungs without
  one are simply recomputed over the context window.
- A regression rung maps x (B, F) to (mean, log_var), each (B,): `distribution()` returns the
  predictive Normal (see `redthread.models.regression`).

Models return raw outputs; the likelihoods themselves live in `redthread.train.objectives`.
Shape legend: B batch, T positions, V vocab.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor, nn
from torch.distributions import Categorical

from redthread.train.objectives import token_nll


class LanguageModel(nn.Module):
    """Base of the sequence rungs: forward(idx, cache=None) -> logits (B, T, V).

    Subclasses set `self.cfg` (a frozen dataclass with at least vocab_size and block_size).
    """

    cfg: Any

    @property
    def block_size(self) -> int:
        """The context window: the most tokens the model is trained on and `generate` feeds it."""
        return self.cfg.block_size

    @property
    def vocab_size(self) -> int:
        return self.cfg.vocab_size

    def distribution(self, idx: Tensor) -> Categorical:
        """P(next token | context) at every position of idx (B, T): batch shape (B, T), V outcomes."""
        return Categorical(logits=self(idx).float())

    def nll(self, idx: Tensor, targets: Tensor, reduction: str = "mean") -> Tensor:
        """-log P(targets | context), nats; targets (B, T), with IGNORE_INDEX where nothing is scored."""
        return token_nll(self(idx), targets, reduction=reduction)

    def make_cache(self, batch_size: int, max_len: int | None = None) -> Any:
        """State for incremental decoding; None: this rung recomputes its window every step."""
        return None

    def num_params(self) -> int:
        """Trainable parameters (a tied weight counted once); rungs may count differently and say so."""
        return sum(p.numel() for p in self.parameters())


def model_device(model: nn.Module) -> torch.device:
    """The device of a model's parameters, or of its buffers (count models have no parameters)."""
    for t in model.parameters():
        return t.device
    for t in model.buffers():
        return t.device
    return torch.device("cpu")

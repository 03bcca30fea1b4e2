"""Bigram softmax regression: the linear rung for sequences, P(token_t | token_{t-1}) = softmax(W[token_{t-1}]).

Claim C2 of the essay: classification is estimating P(class | x), here with x the one-hot
previous token and a linear map to logits, logits = one_hot(token) @ W, which is a row lookup.
Trained by gradient descent on the same negative log-likelihood as every other rung, its
optimum is the bigram count table of `redthread.models.ngram` (with a little weight decay in
place of add-k smoothing): the first rung where "counting" and "learning" meet.

Shape legend: B batch, T positions, V vocab.
"""

from __future__ import annotations

from dataclasses import dataclass

from torch import Tensor, nn

from redthread.models.base import LanguageModel
from redthread.models.config import ConfigMixin, check_positive_ints


@dataclass(frozen=True)
class BigramConfig(ConfigMixin):
    vocab_size: int = 65
    block_size: int = 64  # the window `generate` feeds; only the last token matters

    def __post_init__(self):
        check_positive_ints(self, "vocab_size", "block_size")


class BigramLM(LanguageModel):
    def __init__(self, cfg: BigramConfig):
        super().__init__()
        self.cfg = cfg
        self.logits = nn.Embedding(cfg.vocab_size, cfg.vocab_size)  # row a = the logits of P(. | a)
        nn.init.zeros_(self.logits.weight)  # start at the uniform distribution

    def forward(self, idx: Tensor, cache=None) -> Tensor:
        return self.logits(idx)  # (B, T) -> (B, T, V)

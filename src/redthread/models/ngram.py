"""n-gram counts: the bottom rung for sequences, P(token_t | previous n - 1 tokens) by counting.

The maximum-likelihood estimate of a conditional distribution over a finite context is a
table of relative frequencies: P(b | a) = count(a b) / count(a). Unseen pairs would get
probability zero (infinite NLL on new text), so add-k (Lidstone) smoothing adds k to every
count: P(b | a) = (count(a b) + k) / (count(a) + k V). With n = 1 this is the unigram model,
which ignores context entirely; n = 2 is the bigram. These are the baselines the demo prints
beside the Transformer: how much of the text's predictability needs more than one character
of context.
"""

from __future__ import annotations

import numpy as np


class NGramCounts:
    """Counts of (context of n - 1 tokens, next token), with add-k smoothing."""

    def __init__(self, order: int, vocab_size: int, k: float = 1.0):
        if order < 1:
            raise ValueError(f"order must be >= 1, got {order}")
        if vocab_size ** order > 2**31:
            raise ValueError(f"a dense table of {vocab_size}^{order} counts is too large")
        self.order, self.vocab_size, self.k = order, vocab_size, k
        self.counts = np.zeros((vocab_size ** (order - 1), vocab_size), dtype=np.float64)  # (contexts, V)

    def _contexts(self, tokens: np.ndarray) -> np.ndarray:
        """Index of the n - 1 tokens before each target tokens[n - 1:], in base V."""
        n, ctx = len(tokens), np.zeros(len(tokens) - self.order + 1, dtype=np.int64)
        for j in range(self.order - 1):
            ctx = ctx * self.vocab_size + tokens[j : n - self.order + 1 + j]
        return ctx

    def fit(self, tokens: np.ndarray) -> NGramCounts:
        tokens = np.asarray(tokens, dtype=np.int64)
        flat = self._contexts(tokens) * self.vocab_size + tokens[self.order - 1 :]
        self.counts += np.bincount(flat, minlength=self.counts.size).reshape(self.counts.shape)
        return self

    def log_probs(self) -> np.ndarray:
        """(contexts, V) table of log P(next | context), smoothed."""
        smoothed = self.counts + self.k
        return np.log(smoothed) - np.log(smoothed.sum(axis=1, keepdims=True))

    def nll(self, tokens: np.ndarray) -> float:
        """Mean negative log-likelihood (nats/token) of tokens[n - 1:] given their contexts."""
        tokens = np.asarray(tokens, dtype=np.int64)
        return float(-self.log_probs()[self._contexts(tokens), tokens[self.order - 1 :]].mean())

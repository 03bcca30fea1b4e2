"""n-gram counts: the bottom rung for sequences, P(token_t | previous n - 1 tokens) by counting.

Claims C1, C2 and C12 of the essay at their simplest: the maximum-likelihood estimate of a
conditional distribution over a finite context is a table of relative frequencies,
P(b | a) = count(a b) / count(a). Unseen pairs would get probability zero (infinite NLL on new
text), so add-k (Lidstone) smoothing adds k to every count:
P(b | a) = (count(a b) + k) / (count(a) + k V). With n = 1 this is the unigram model, which
ignores context entirely; n = 2 is the bigram. A context that never occurred in training has
nothing to smooth, so it backs off to the next lower order (its last n - 2 tokens) rather than
to the uniform distribution.

`NGramLM` keeps one table per order 1..n. A position with fewer than n - 1 tokens before it
(the start of a window or of a sequence) uses the highest order its context allows, so the
model gives a distribution at every position, like every other rung: model(idx) -> logits.
It is "trained" in closed form, by counting: the training loop calls `count(x, y)` on every
training window once (`redthread.train.loop.train`), or `fit_stream(tokens)` counts a stream.

Shape legend: B batch, T positions, V vocab.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from redthread.data.targets import IGNORE_INDEX
from redthread.errors import InvalidValue
from redthread.models.base import LanguageModel
from redthread.models.config import ConfigMixin, check_positive_ints

MAX_TABLE = 2**27  # entries of the largest count table (1 GiB of float64)


@dataclass(frozen=True)
class NGramConfig(ConfigMixin):
    vocab_size: int = 65
    block_size: int = 64  # the window `generate` feeds; only the last order - 1 tokens matter
    order: int = 3  # n: the prediction conditions on n - 1 previous tokens
    k: float = 0.1  # add-k smoothing

    def __post_init__(self):
        check_positive_ints(self, "vocab_size", "block_size", "order")
        if not self.k > 0:
            raise InvalidValue(f"the smoothing k must be > 0, got {self.k!r}")
        if self.vocab_size**self.order > MAX_TABLE:
            raise InvalidValue(
                f"an order-{self.order} table over {self.vocab_size} tokens has {self.vocab_size**self.order:,} "
                f"entries (limit {MAX_TABLE:,}): use a lower order or a smaller vocabulary"
            )


class NGramLM(LanguageModel):
    def __init__(self, cfg: NGramConfig):
        super().__init__()
        self.cfg = cfg
        V = cfg.vocab_size
        for j in range(1, cfg.order + 1):  # counts_j: (V^(j-1) contexts, V) for order j
            self.register_buffer(f"counts_{j}", torch.zeros(V ** (j - 1), V, dtype=torch.float64))
        self._log_probs: dict[int, Tensor] = {}  # smoothed tables, rebuilt after counting

    def counts(self, j: int) -> Tensor:
        return getattr(self, f"counts_{j}")

    def num_params(self) -> int:
        """Free parameters of the order-n table: V^(n-1) contexts x (V - 1) probabilities."""
        V = self.cfg.vocab_size
        return V ** (self.cfg.order - 1) * (V - 1)

    # -- counting: the closed-form maximum-likelihood fit ------------------------------------------

    def _context_ids(self, idx: Tensor, j: int) -> Tensor:
        """Base-V index of the j - 1 tokens ending at each position of idx (B, T) -> (B, T - j + 2)."""
        V, T = self.cfg.vocab_size, idx.size(1)
        ctx = torch.zeros(idx.size(0), T - j + 2, dtype=torch.int64, device=idx.device)
        for i in range(j - 1):  # oldest token first
            ctx = ctx * V + idx[:, i : T - j + 2 + i]
        return ctx

    @torch.no_grad()
    def count(self, x: Tensor, y: Tensor) -> None:
        """Add the (context, target) pairs of one batch: y[:, t] follows x[:, :t + 1]; IGNORE_INDEX skipped."""
        V = self.cfg.vocab_size
        for j in range(1, self.cfg.order + 1):
            if j - 2 >= x.size(1):
                break
            first = max(0, j - 2)  # the first position with j - 1 tokens of context
            ctx = self._context_ids(x, j) if j > 1 else torch.zeros_like(y)  # (B, T - first)
            tgt = y[:, first:]
            keep = tgt != IGNORE_INDEX
            flat = (ctx[keep] * V + tgt[keep]).cpu()
            table = self.counts(j)
            table += torch.bincount(flat, minlength=table.numel()).view_as(table).to(table)
        self._log_probs.clear()

    def fit_stream(self, tokens: np.ndarray | Tensor) -> NGramLM:
        """Count every position of one token stream (1-D) at every order its context allows."""
        t = torch.as_tensor(np.array(tokens, dtype=np.int64))  # a copy: memory-mapped tokens are read-only
        if t.numel() < 2:
            raise InvalidValue("need at least two tokens to count")
        self.count(t[None, :-1], t[None, 1:])
        return self

    # -- prediction ---------------------------------------------------------------------------------

    def log_probs(self, j: int) -> Tensor:
        """(V^(j-1), V) smoothed log P(next | context of j - 1 tokens).

        A context never seen in training has no counts to smooth: add-k would make it uniform.
        It backs off instead to the order below, i.e. to its last j - 2 tokens."""
        if j not in self._log_probs:
            counts = self.counts(j)
            smoothed = counts + self.cfg.k
            lp = smoothed.log() - smoothed.sum(1, keepdim=True).log()
            if j > 1:
                unseen = (counts.sum(1) == 0).nonzero().squeeze(1)  # contexts with no counts
                suffix = unseen % self.cfg.vocab_size ** (j - 2)  # drop the oldest token
                lp[unseen] = self.log_probs(j - 1).double()[suffix]
            self._log_probs[j] = lp.float()
        return self._log_probs[j]

    def forward(self, idx: Tensor, cache=None) -> Tensor:
        """idx (B, T) -> logits (B, T, V): normalised log-probabilities of the next token."""
        B, T = idx.shape
        out = torch.empty(B, T, self.cfg.vocab_size, device=idx.device)
        n = self.cfg.order
        # positions 0 .. n - 3 have only t + 1 tokens of context: order t + 2 (a unigram never needs any)
        for t in range(min(n - 2, T)):
            j = t + 2
            out[:, t] = self.log_probs(j)[self._context_ids(idx[:, : t + 1], j)[:, -1]]
        first = max(0, n - 2)
        if T > first:
            ctx = self._context_ids(idx, n) if n > 1 else torch.zeros(B, T, dtype=torch.int64, device=idx.device)
            out[:, first:] = self.log_probs(n)[ctx]  # (B, T - first, V)
        return out

    def nll_stream(self, tokens: np.ndarray | Tensor) -> float:
        """Mean NLL (nats/token) of tokens[1:] of one stream, each given everything before it."""
        t = torch.as_tensor(np.array(tokens, dtype=np.int64))  # a copy: memory-mapped tokens are read-only
        return self.nll(t[None, :-1], t[None, 1:]).item()

    def _apply(self, fn, recurse=True):
        self._log_probs.clear()  # moved or cast: rebuild the tables from the counts
        return super()._apply(fn, recurse)

    def _load_from_state_dict(self, *args, **kwargs):
        self._log_probs.clear()
        return super()._load_from_state_dict(*args, **kwargs)

"""Interpolated Kneser–Ney n-grams: the strongest counting model, for vocabularies too large for a dense table.

`models/ngram.py` keeps one dense table of V^(n-1) x V counts and smooths it by adding k. That is the
maximum-likelihood estimate made finite, and it is the right first rung; but with the 8,744 characters of
the Complete Tang Poems a dense bigram table already has 76 M cells, a trigram table 670 G, and add-k
gives every unseen pair the same share. Kneser and Ney (1995; the interpolated form of Chen and Goodman
1998) fix both: store only the n-grams that occur, and interpolate each order with the one below it,

    P_j(w | h) = max(a_j(h w) - D_j, 0) / sum_v a_j(h v)  +  gamma_j(h) * P_{j-1}(w | h'),
    gamma_j(h) = D_j * |{v : a_j(h v) > 0}| / sum_v a_j(h v),

where h' is h without its oldest token and P_0 is uniform over the V tokens. The discount D_j is taken
from every n-gram seen once or twice (D = n1 / (n1 + 2 n2)), and gamma_j(h) gives the mass it frees to
the order below, so each P_j sums to one. What a_j counts is the idea of Kneser–Ney:

- at the highest order, a_n(h w) = count(h w), the maximum-likelihood counts;
- at a lower order, a_j(h w) = |{u : count(u h w) > 0}|, the number of distinct tokens seen before h w.
  A lower order is only asked when the longer context says little, so it should rank a token by how many
  contexts it completes, not by how often it occurs ("Francisco" is frequent but follows only "San").

A context never seen at order j has nothing to interpolate: that order is skipped (P_j = P_{j-1}).

Every n-gram of up to n tokens is one 64-bit integer, its tokens' ids side by side (the oldest in the
highest bits), so the tables are sorted integer arrays and a lookup is a binary search. That limits
n * ceil(log2 V) to 62 bits: order 4 for vocabularies up to 32,768 tokens, order 8 for 128 characters.
Like `NGramLM` it is fitted by counting (the training loop calls `count(x, y)` on every training window
once) and gives a distribution at every position: model(idx) -> logits (B, T, V).

Shape legend: B batch, T positions, V vocab, N n-grams.
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

KEY_BITS = 62  # an n-gram key is a non-negative int64


def token_bits(vocab_size: int) -> int:
    """Bits that hold one token id."""
    return max(1, (vocab_size - 1).bit_length())


@dataclass(frozen=True)
class KneserNeyConfig(ConfigMixin):
    vocab_size: int = 65
    block_size: int = 64  # the window `generate` feeds; only the last order - 1 tokens matter
    order: int = 4  # n: the prediction conditions on n - 1 previous tokens

    def __post_init__(self):
        check_positive_ints(self, "vocab_size", "block_size", "order")
        if self.order * token_bits(self.vocab_size) > KEY_BITS:
            raise InvalidValue(
                f"an order-{self.order} n-gram over {self.vocab_size:,} tokens needs "
                f"{self.order * token_bits(self.vocab_size)} bits (limit {KEY_BITS}): use order "
                f"{KEY_BITS // token_bits(self.vocab_size)} or lower"
            )


@dataclass
class Level:
    """One order j of the interpolation, ready to look up."""

    grams: Tensor  # (N,) sorted keys of the j-grams with a > 0
    a: Tensor  # (N,) their counts (order n) or continuation counts (lower orders), float64
    contexts: Tensor  # (C,) sorted keys of their (j - 1)-token contexts
    start: Tensor  # (C,) where each context's j-grams begin in `grams`
    types: Tensor  # (C,) how many j-grams each context has
    total: Tensor  # (C,) sum of a over them, float64
    discount: float


class KneserNeyLM(LanguageModel):
    def __init__(self, cfg: KneserNeyConfig):
        super().__init__()
        self.cfg = cfg
        self.bits = token_bits(cfg.vocab_size)
        for j in range(1, cfg.order + 1):  # the raw counts of every j-gram seen, as sorted keys and counts
            self.register_buffer(f"grams_{j}", torch.zeros(0, dtype=torch.int64))
            self.register_buffer(f"counts_{j}", torch.zeros(0, dtype=torch.int64))
        self._pending: dict[int, list[Tensor]] = {j: [] for j in range(1, cfg.order + 1)}
        self._levels: list[Level] | None = None  # built from the counts at the first prediction

    def num_params(self) -> int:
        """The numbers it keeps: one count per distinct j-gram seen, j = 1..n."""
        self._merge()
        return sum(getattr(self, f"counts_{j}").numel() for j in range(1, self.cfg.order + 1))

    # -- counting ---------------------------------------------------------------------------------

    def _context_keys(self, idx: Tensor, j: int) -> Tensor:
        """Keys of the j - 1 tokens ending at each position of idx (B, T) that has that many: (B, T - max(0, j - 2))."""
        T, first = idx.size(1), max(0, j - 2)
        key = torch.zeros(idx.size(0), T - first, dtype=torch.int64, device=idx.device)
        for i in range(j - 1):  # the oldest context token first
            key = (key << self.bits) | idx[:, i : i + T - first]
        return key

    def _keys(self, x: Tensor, y: Tensor, j: int) -> Tensor:
        """Keys of the j-grams that end at each target y[:, t], their j - 1 context tokens from x."""
        return (self._context_keys(x, j) << self.bits) | y[:, max(0, j - 2) :].clamp(min=0)

    @torch.no_grad()
    def count(self, x: Tensor, y: Tensor) -> None:
        """Add the j-grams of one batch, j = 1..n: y[:, t] follows x[:, :t + 1]; IGNORE_INDEX skipped."""
        for j in range(1, self.cfg.order + 1):
            if j - 2 >= x.size(1):
                break
            keep = y[:, max(0, j - 2) :] != IGNORE_INDEX
            self._pending[j].append(self._keys(x.long(), y.long(), j)[keep].cpu())
        self._levels = None

    def fit_stream(self, tokens: np.ndarray | Tensor) -> KneserNeyLM:
        """Count every position of one token stream (1-D) at every order its context allows."""
        t = torch.as_tensor(np.array(tokens, dtype=np.int64))
        if t.numel() < 2:
            raise InvalidValue("need at least two tokens to count")
        self.count(t[None, :-1], t[None, 1:])
        return self

    def _merge(self) -> None:
        """Fold the batches counted since the last merge into the sorted (key, count) buffers."""
        for j, parts in self._pending.items():
            if not parts:
                continue
            old_grams, old_counts = getattr(self, f"grams_{j}").cpu(), getattr(self, f"counts_{j}").cpu()
            keys = torch.cat([old_grams, *parts])
            weights = torch.cat([old_counts, torch.ones(keys.numel() - old_counts.numel(), dtype=torch.int64)])
            grams, inverse = torch.unique(keys, sorted=True, return_inverse=True)
            counts = torch.zeros(grams.numel(), dtype=torch.int64).index_add_(0, inverse, weights)
            setattr(self, f"grams_{j}", grams)
            setattr(self, f"counts_{j}", counts)
            parts.clear()

    def state_dict(self, *args, **kwargs):
        self._merge()
        return super().state_dict(*args, **kwargs)

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):
        for j in range(1, self.cfg.order + 1):  # the tables' sizes come with the checkpoint
            for name in (f"grams_{j}", f"counts_{j}"):
                if prefix + name in state_dict:
                    self._buffers[name] = torch.empty_like(state_dict[prefix + name])
            self._pending[j].clear()
        self._levels = None
        return super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)

    def _apply(self, fn, recurse=True):
        self._merge()
        self._levels = None  # moved: rebuild the lookup tables there
        return super()._apply(fn, recurse)

    # -- the interpolated estimate ----------------------------------------------------------------

    def levels(self) -> list[Level]:
        """Orders 1..n as lookup tables: what a_j counts, each context's total and types, D_j."""
        if self._levels is None:
            self._merge()
            n, levels = self.cfg.order, []
            for j in range(1, n + 1):
                if j == n:  # the highest order: the counts themselves
                    grams, a = getattr(self, f"grams_{n}").cpu(), getattr(self, f"counts_{n}").cpu()
                else:  # a lower order: distinct tokens seen before each j-gram (drop the oldest of each (j+1)-gram)
                    longer = getattr(self, f"grams_{j + 1}").cpu()
                    grams, a = torch.unique(longer & ((1 << (self.bits * j)) - 1), sorted=True, return_counts=True)
                levels.append(self._level(grams, a.double(), device=getattr(self, f"grams_{n}").device))
            self._levels = levels
        return self._levels

    def _level(self, grams: Tensor, a: Tensor, device: torch.device) -> Level:
        n1, n2 = (a == 1).sum().item(), (a == 2).sum().item()
        discount = n1 / (n1 + 2 * n2) if n1 > 0 and n2 > 0 else 0.5
        contexts, types = torch.unique_consecutive(grams >> self.bits, return_counts=True)  # grams sorted: contexts too
        start = torch.cumsum(types, 0) - types
        total = torch.zeros(contexts.numel(), dtype=torch.float64).index_add_(
            0, torch.repeat_interleave(torch.arange(contexts.numel()), types), a)
        return Level(*(t.to(device) for t in (grams, a, contexts, start, types, total)), discount=discount)

    def unigram(self) -> Tensor:
        """P_1 (V,): the order-1 level (one context, the empty one) interpolated with the uniform P_0."""
        level, V = self.levels()[0], self.cfg.vocab_size
        p = torch.full((V,), 1.0 / V, dtype=torch.float64, device=level.a.device)
        if level.contexts.numel() == 0:  # nothing counted yet
            return p
        total = level.total[0]
        p *= level.discount * level.types[0] / total
        return p.index_add_(0, level.grams & ((1 << self.bits) - 1), (level.a - level.discount).clamp(min=0) / total)

    def forward(self, idx: Tensor, cache=None) -> Tensor:
        """idx (B, T) -> logits (B, T, V): the log of the interpolated P(next token | the last n - 1 tokens)."""
        B, T = idx.shape
        V, low = self.cfg.vocab_size, (1 << self.bits) - 1
        idx = idx.long()
        p = self.unigram()[None, :].repeat(B * T, 1)  # P_1 at every position, then each longer context in turn
        for j, level in enumerate(self.levels()[1:], start=2):
            first = max(0, j - 2)  # positions with j - 1 tokens of context
            if first >= T or level.contexts.numel() == 0:
                break
            ctx = self._context_keys(idx, j).flatten()  # (B * (T - first),)
            rows = (torch.arange(B, device=idx.device)[:, None] * T + torch.arange(first, T, device=idx.device))
            rows = rows.flatten()  # the rows of p they belong to
            where = torch.searchsorted(level.contexts, ctx).clamp(max=level.contexts.numel() - 1)
            seen = level.contexts[where] == ctx
            if not seen.any():
                continue
            rows, where = rows[seen], where[seen]
            total = level.total[where]
            p[rows] *= (level.discount * level.types[where] / total)[:, None]  # gamma_j(h) * P_{j-1}
            # + max(a - D, 0) / total for each j-gram the context was seen with: one entry per (position, j-gram)
            lengths = level.types[where]
            owner = torch.repeat_interleave(torch.arange(rows.numel(), device=idx.device), lengths)
            offset = torch.arange(owner.numel(), device=idx.device) - (torch.cumsum(lengths, 0) - lengths)[owner]
            gram = level.start[where][owner] + offset
            share = (level.a[gram] - level.discount).clamp(min=0) / total[owner]
            p.index_put_((rows[owner], level.grams[gram] & low), share, accumulate=True)
        return p.log().float().view(B, T, V)

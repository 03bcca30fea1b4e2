"""Speculative sampling: a cheaper rung of the ladder drafts, the Transformer decides (claim C12).

Every rung estimates the same thing, P(next token | context); a lower rung (bigram, n-gram
counts, MLP, LSTM/GRU, a smaller Transformer) estimates it worse but far more cheaply. Here the
cheap estimate q proposes K tokens one by one, and the better one, p, scores all K + 1 positions
in a single forward pass and keeps what it agrees with (Leviathan et al. 2023, "Fast Inference
from Transformers via Speculative Decoding", Algorithm 1; Chen et al. 2023, "Accelerating Large
Language Model Decoding with Speculative Sampling", Algorithm 2):

    x_1 .. x_K ~ q(. | context), one at a time                   the draft, K forward steps
    p_1 .. p_K+1 = target(context + x_1 .. x_K)                  one forward pass of K + 1 positions
    for i = 1 .. K:
        keep x_i with probability min(1, p_i(x_i) / q_i(x_i))
        on the first rejection: draw from norm(max(0, p_i - q_i)) instead, and stop
    all K kept: draw one more token from p_K+1

What is exact. Each kept or resampled token has exactly the distribution p of the token that
`generate(target, ...)` would draw there, whatever the draft is (Leviathan et al., Theorem 3.5 /
Appendix A.1): P(x) = q(x) min(1, p(x)/q(x)) + (1 - sum_y min(q(y), p(y))) norm(max(0, p - q))(x)
= min(q(x), p(x)) + max(0, p(x) - q(x)) = p(x). Here p is the *processed* target distribution:
the same processors as `generate` (repetition penalty -> temperature -> top-k -> top-p -> min-p),
on the same context (generate's window rule: the target never slides its window inside a round),
and q is the draft's distribution after the same processors. So the output has the distribution
of `generate(target, ...)` with the same settings; not the same draws for a seed (the random
numbers are used differently), and equal up to floating point only: the target's K + 1
positions come from one forward pass, whose logits may differ from one-at-a-time decoding in the
last bits. Greedy decoding (temperature 0) makes p and q one-hot: a draft is kept exactly when it
is the target's argmax, and the output is the target's greedy output token for token.

The draft costs what it costs: if it is rejected often, or is not much cheaper than the target,
speculative sampling is slower than plain sampling (docs/benchmarks.md measures each rung).

Caches. Each model reads the growing sequence through a `Reader`: its window, its cache and how
much of the sequence the cache holds. After a rejection the rejected drafts are forgotten: a
Transformer's KV cache is truncated (its length moves back; the stale entries are overwritten by
the next update), a recurrent state goes back to a copy taken before the rejected tokens were read.
Rungs without a cache are recomputed, over just the tokens their next-token logits depend on.

Batch 1: speculative sampling buys latency for one sequence (each row of a batch would accept a
different number of drafts).

Shape legend: T sequence length so far, K tokens drafted this round, V vocab.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from redthread.errors import InvalidValue, check_int
from redthread.generate.config import SampleConfig
from redthread.generate.processors import Processor, process
from redthread.generate.sampler import checked_prompt, decoding_step, sampling_settings, window_start
from redthread.layers.blocks import LayerCache
from redthread.models.base import model_device
from redthread.models.bigram import BigramLM
from redthread.models.mlp import MLPLM
from redthread.models.ngram import NGramLM
from redthread.models.recurrent import RecurrentState


@dataclass(frozen=True)
class Round:
    """One round: how many tokens the draft proposed, how many the target kept, and the tokens added
    (1, accepted + 1): the kept drafts, then the resampled token (or the bonus one when all were kept)."""

    drafted: int
    accepted: int
    tokens: Tensor


# -- the rule --------------------------------------------------------------------------------------------


def accept_or_resample(p: Tensor, q: Tensor, drafted: Tensor, generator: torch.Generator | None = None) -> tuple[int, Tensor]:
    """The verification step: p (K + 1, V) the target's P(next) at each drafted position and one past,
    q (K, V) the draft's, drafted (K,) the tokens drawn from q -> (n, token (1,)): keep the first n
    drafts, then append `token`."""
    K = drafted.numel()
    rows = torch.arange(K, device=p.device)
    ratio = p[rows, drafted] / q[rows, drafted]  # (K,); q(x) > 0 for a token drawn from q
    u = torch.rand(K, generator=generator, device=p.device)  # (K,)
    rejected = (u >= ratio).nonzero()  # keep x_i with probability min(1, ratio_i)
    n = int(rejected[0]) if rejected.numel() else K
    if n == K:
        return n, torch.multinomial(p[K], 1, generator=generator)  # every draft kept: a bonus token from p
    residual = (p[n] - q[n]).clamp(min=0)  # (V,): what p has and q lacks
    total = residual.sum()
    # a rejection has probability 0 when p == q; rounding can still reject, and then max(0, p - q) is
    # only rounding noise: fall back to p itself, the limit of the rule
    dist = residual / total if total > 1e-6 else p[n]
    return n, torch.multinomial(dist, 1, generator=generator)


def probabilities(logits: Tensor, seq: Tensor, processors: list[Processor], greedy: bool) -> Tensor:
    """P(next token) (n, V) after the processors, from the logits (n, V) at the last n positions of seq
    (1, T): row j's context is seq[:, :T - n + 1 + j], as `generate` gives it."""
    n, T = logits.size(0), seq.size(1)
    if processors:
        # row j holds its own prefix, padded with the first token: the one processor reading the
        # context, the repetition penalty, reads it as a set, and that token is in every prefix
        ends = torch.arange(T - n + 1, T + 1, device=seq.device)[:, None]  # (n, 1)
        ctx = torch.where(torch.arange(T, device=seq.device) < ends, seq, seq[:, :1])  # (n, T)
        logits = process(logits, ctx, processors)
    if greedy:
        return torch.zeros_like(logits).scatter_(-1, logits.argmax(dim=-1, keepdim=True), 1.0)  # (n, V) one-hot
    return logits.softmax(dim=-1)  # (n, V)


# -- how one model reads the growing sequence --------------------------------------------------------------


def tokens_read(model: nn.Module) -> int:
    """How many of the last tokens decide a rung's next-token logits: a speed path for the rungs without a
    cache, whose logits are the same over these few tokens as over their whole window (tested)."""
    if type(model) is BigramLM:  # the classes themselves: a subclass may read more
        return 1
    if type(model) is NGramLM:
        return max(1, model.cfg.order - 1)
    if type(model) is MLPLM:
        return model.cfg.context
    return model.block_size


class Reader:
    """One model reading the sequence: its window start, its cache, how far the cache has read, and how
    to forget tokens it read (the rejected drafts). A cache of a kind it does not know is not used."""

    def __init__(self, model: nn.Module, length: int, use_cache: bool):
        self.model, self.W = model, model.block_size
        self.start = max(0, length - self.W)  # a long prompt keeps its last W tokens, as in generate
        self.reads = tokens_read(model)
        self.cache = self.kind = self.step = None
        if use_cache:
            cache = model.make_cache(1, self.W)
            if isinstance(cache, list) and cache and all(isinstance(c, LayerCache) for c in cache):
                self.kind, self.step = "kv", decoding_step(model)
            elif isinstance(cache, RecurrentState):
                self.kind = "state"
            self.cache = cache if self.kind else None
        self.fed = self.start  # the cache holds seq[:, start:fed]
        self.saved: list[tuple[int, list, int]] = []  # recurrent states before each read: (fed, states, length)

    def slide(self, length: int) -> None:
        """generate's window rule, applied at the start of a round (never inside one: see `room`)."""
        start = window_start(length, self.start, self.W)
        if start != self.start:
            self.start = start
            self._refill()

    def room(self, length: int) -> int:
        """How many tokens can follow a sequence of `length` before the window would have to slide."""
        return self.W - (length - self.start)

    def logits(self, seq: Tensor, n: int) -> Tensor:
        """The next-token logits (n, V) at the last n positions of seq (1, T)."""
        T = seq.size(1)
        if self.cache is None:  # recompute, over the tokens those n positions depend on
            first = max(self.start, T - self.reads - (n - 1))
            return self.model(seq[:, first:])[0, -n:].float()  # (n, V)
        new = seq[:, self.fed :]  # (1, T - fed): what the cache has not read yet
        if self.kind == "state":
            self.saved.append((self.fed, list(self.cache.states), self.cache.length))
        if self.step is not None and n == 1 and new.size(1) == 1:
            out = self.step(new, self.cache)  # (1, V): the one-token fast path
        else:
            out = self.model(new, cache=self.cache)[0, -n:]  # (n, V)
        self.fed = T
        return out.float()

    def rewind(self, length: int) -> None:
        """Forget what was read from position `length` on; never before `start` (no slide inside a round)."""
        if self.fed > length and self.kind == "kv":
            for layer in self.cache:  # truncate: the entries past the new length are overwritten later
                layer.self_attn.length = length - self.start
            self.fed = length
        elif self.fed > length and self.kind == "state":
            while self.saved and self.saved[-1][0] > length:
                self.saved.pop()
            if self.saved:  # back to the state before the first token read past `length`
                self.fed, states, self.cache.length = self.saved[-1]
                self.cache.states[:] = states
            else:
                self._refill()
        elif self.fed > length:
            self.fed = length
        self.saved.clear()

    def _refill(self) -> None:
        if self.cache is not None:
            self.cache = self.model.make_cache(1, self.W)
        self.fed = self.start
        self.saved.clear()


# -- the loop ----------------------------------------------------------------------------------------------


def speculative_rounds(
    target: nn.Module,
    draft: nn.Module,
    idx: Tensor,
    max_new_tokens: int,
    k: int = 4,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    min_p: float | None = None,
    repetition_penalty: float | None = None,
    seed: int | None = None,
    use_cache: bool = True,
    sampling: SampleConfig | None = None,
) -> Iterator[Round]:
    """An iterator over the rounds of speculative sampling from `target`, drafting up to k tokens a
    round with `draft`, until max_new_tokens are made. idx (T,) or (1, T): one prompt.

    The arguments are checked here, at the call, not at the first round."""
    sampling = sampling_settings(sampling, temperature=temperature, top_k=top_k, top_p=top_p, min_p=min_p,
                                 repetition_penalty=repetition_penalty, seed=seed)
    processors, greedy = sampling.build_processors()
    check_int("k", k)
    check_int("max_new_tokens", max_new_tokens, minimum=0)
    if target.cfg.vocab_size != draft.cfg.vocab_size:
        raise InvalidValue(f"the draft's vocabulary ({draft.cfg.vocab_size} tokens) is not the target's "
                           f"({target.cfg.vocab_size}): a draft must propose the target's tokens")
    if model_device(target) != model_device(draft):
        raise InvalidValue(f"the draft is on {model_device(draft)} and the target on {model_device(target)}: "
                           "put both on one device")
    idx = checked_prompt(idx, target.cfg.vocab_size)
    if idx.size(0) != 1:
        raise InvalidValue(f"speculative sampling continues one prompt at a time (batch 1), got {idx.size(0)} rows")
    return _rounds(target, draft, idx, max_new_tokens, k, processors, greedy, sampling, use_cache)


@torch.inference_mode()
def _rounds(target, draft, idx, max_new_tokens, k, processors, greedy, sampling, use_cache) -> Iterator[Round]:
    device = model_device(target)
    seq = idx.to(device)  # (1, T)
    generator = sampling.generator(device)
    training = [m for m in (target, draft) if m.training]  # eval() walks every submodule: only where needed
    for model in training:
        model.eval()
    try:
        judge, proposer = Reader(target, seq.size(1), use_cache), Reader(draft, seq.size(1), use_cache)
        made = 0
        while made < max_new_tokens:
            T = seq.size(1)
            judge.slide(T)
            proposer.slide(T)
            # the last token is the target's own; neither window may slide inside the round
            K = min(k, max_new_tokens - made - 1, judge.room(T), proposer.room(T) + 1)
            seq, q = _draft(proposer, seq, K, processors, greedy, generator)  # (1, T + K), (K, V)
            p = probabilities(judge.logits(seq, K + 1), seq, processors, greedy)  # (K + 1, V): one forward pass
            n, token = accept_or_resample(p, q, seq[0, T:], generator)
            seq = torch.cat([seq[:, : T + n], token[None]], dim=1)  # (1, T + n + 1)
            judge.rewind(T + n)  # keep the kept drafts, forget the rest
            proposer.rewind(T + n)
            made += n + 1
            yield Round(drafted=K, accepted=n, tokens=seq[:, T:])
    finally:
        for model in training:
            model.train()


def _draft(proposer: Reader, seq: Tensor, K: int, processors, greedy, generator) -> tuple[Tensor, Tensor]:
    """K tokens drawn one at a time from the draft's processed q: seq (1, T) -> (1, T + K), and q (K, V)."""
    qs = []
    for _ in range(K):
        q = probabilities(proposer.logits(seq, 1), seq, processors, greedy)  # (1, V)
        seq = torch.cat([seq, torch.multinomial(q, 1, generator=generator)], dim=1)  # (1, T + 1)
        qs.append(q)
    V = proposer.model.cfg.vocab_size
    return seq, torch.cat(qs) if qs else torch.empty(0, V, device=seq.device)


def speculative_generate(
    target: nn.Module,
    draft: nn.Module,
    idx: Tensor,
    max_new_tokens: int = 100,
    k: int = 4,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    min_p: float | None = None,
    repetition_penalty: float | None = None,
    seed: int | None = None,
    use_cache: bool = True,
    on_round: Callable[[Round], None] | None = None,
    sampling: SampleConfig | None = None,
) -> Tensor:
    """Continue one prompt idx (T,) or (1, T) by max_new_tokens -> (1, T + new), drawn from `target` as
    `generate` draws them, with `draft` proposing up to k tokens a round; `on_round` sees every Round."""
    rounds = speculative_rounds(target, draft, idx, max_new_tokens, k, temperature, top_k, top_p, min_p,
                                repetition_penalty, seed, use_cache, sampling)
    new = []
    for r in rounds:
        new.append(r.tokens)
        if on_round is not None:
            on_round(r)
    prompt = (idx[None] if idx.dim() == 1 else idx).to(model_device(target))
    return torch.cat([prompt, *new], dim=1)

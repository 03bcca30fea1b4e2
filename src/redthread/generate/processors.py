"""Logits processors: how a learned P(next | context) becomes a choice of the next token.

Every rung of the ladder ends in the same place: logits over the vocabulary for the next
token. Generation (claim C12 of `shared/mission/SEED_EN.md`: "generation = iterative
sampling from the learned P(next | context) (greedy, top-k, top-p / nucleus)") reshapes
those logits with a few small processors and then picks a token, greedily or by sampling.

Each processor is a class with one signature, `__call__(logits, idx) -> logits`, checks its
argument in `__init__`, never modifies its inputs, and removes a token by setting its logit
to -inf. `build_processors` applies them in one fixed order:

    repetition penalty -> temperature -> top-k -> top-p -> min-p

The semantics are those of Hugging Face `transformers` (`RepetitionPenaltyLogitsProcessor`,
`TemperatureLogitsWarper`, `TopKLogitsWarper`, `TopPLogitsWarper`, `MinPLogitsWarper`, all
with `min_tokens_to_keep=1`), and the tests check equality against them.

References:
- Repetition penalty: Keskar et al. 2019, "CTRL: A Conditional Transformer Language Model
  for Controllable Generation", §4.1 (penalized sampling). CTRL divides the logit of every
  token already in the context by the penalty; like HF we multiply negative logits
  instead, so the penalty always lowers the token's probability.
- Top-k: Fan et al. 2018, "Hierarchical Neural Story Generation", §5.
- Top-p (nucleus): Holtzman et al. 2019, "The Curious Case of Neural Text Degeneration",
  §3.1: keep the smallest set of most probable tokens whose total probability reaches p.
- Min-p: Nguyen et al. 2024, "Turning Up the Heat: Min-p Sampling for Creative and
  Coherent LLM Outputs": keep the tokens whose probability is at least p times the
  probability of the most likely token.

Shapes: B batch, T context length so far, V vocab.
"""

from __future__ import annotations

import math
import numbers
from typing import Protocol

import torch
from torch import Tensor

from redthread.errors import InvalidValue


class Processor(Protocol):
    def __call__(self, logits: Tensor, idx: Tensor) -> Tensor: ...


def _float(name: str, value: object) -> float:
    """A finite real number (bools are not numbers here), or an InvalidValue (a ValueError) naming it."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise InvalidValue(f"{name} must be a finite number, got {value!r}")
    return float(value)


def _as_float32(logits: Tensor) -> Tensor:
    # softmax/cumsum in half precision lose the tail of the distribution; float64 stays as is
    return logits.float() if logits.dtype in (torch.float16, torch.bfloat16) else logits


class RepetitionPenalty:
    """Make tokens already in the context less likely (CTRL, Keskar et al. 2019, §4.1)."""

    def __init__(self, penalty: float):
        penalty = _float("repetition_penalty", penalty)
        if penalty <= 0:
            raise InvalidValue(f"repetition_penalty must be > 0, got {penalty!r}")
        self.penalty = penalty

    def __call__(self, logits: Tensor, idx: Tensor) -> Tensor:
        logits = _as_float32(logits)
        seen = torch.zeros_like(logits, dtype=torch.bool).scatter_(1, idx, True)  # (B, V)
        # dividing a negative logit would raise its probability, so negatives are multiplied
        penalized = torch.where(logits < 0, logits * self.penalty, logits / self.penalty)
        # an extreme penalty (1e-308, 1e308) overflows: keep finite logits finite, at the limit the penalty tends to
        big = torch.finfo(logits.dtype).max
        penalized = torch.where(torch.isfinite(logits), penalized.clamp(-big, big), logits)
        return torch.where(seen, penalized, logits)

    def __repr__(self) -> str:
        return f"RepetitionPenalty({self.penalty})"


class Temperature:
    """Divide the logits by t: t < 1 sharpens the distribution, t > 1 flattens it.

    The top logit is subtracted first (softmax does not change; HF's `scores / t` gives the same
    distribution), so it stays at 0 and the others go to -inf as t -> 0: any positive finite t
    works, and a tiny one is greedy (ties share the mass), the limit, instead of inf / inf = NaN.
    """

    def __init__(self, t: float):
        t = _float("temperature", t)
        if t <= 0:
            # t == 0 is greedy decoding, which build_processors handles without dividing by 0
            raise InvalidValue(f"temperature must be > 0 here (0 means greedy), got {t!r}")
        self.t = t

    def __call__(self, logits: Tensor, idx: Tensor) -> Tensor:
        logits = _as_float32(logits)
        top = logits.amax(dim=-1, keepdim=True)  # (B, 1)
        t = min(self.t, torch.finfo(logits.dtype).max)  # t past the dtype's range would turn -inf / inf into NaN
        # t below the dtype's smallest number divides by 0: the top's 0 / 0 is set to 0, the rest are -inf
        return torch.where(logits == top, 0.0, (logits - top) / t)

    def __repr__(self) -> str:
        return f"Temperature({self.t})"


class TopK:
    """Keep the k largest logits (and any tied with the k-th); k >= V keeps all."""

    def __init__(self, k: int):
        if isinstance(k, bool) or not isinstance(k, numbers.Integral) or k < 1:
            raise InvalidValue(f"top_k must be an integer >= 1, got {k!r}")
        self.k = int(k)

    def __call__(self, logits: Tensor, idx: Tensor) -> Tensor:
        logits = _as_float32(logits)
        k = min(self.k, logits.size(-1))
        kth = torch.topk(logits, k, dim=-1).values[:, -1:]  # (B, 1)
        return logits.masked_fill(logits < kth, float("-inf"))

    def __repr__(self) -> str:
        return f"TopK({self.k})"


class TopP:
    """Nucleus: keep the smallest set of most probable tokens with total probability >= p."""

    def __init__(self, p: float):
        p = _float("top_p", p)
        if not 0 < p <= 1:
            raise InvalidValue(f"top_p must be in (0, 1], got {p!r}")
        self.p = p

    def __call__(self, logits: Tensor, idx: Tensor) -> Tensor:
        logits = _as_float32(logits)
        # As HF: sort ascending and drop the low tail whose total mass is <= 1 - p; the
        # order of tied logits is the sort's, so ties break exactly as in HF.
        sorted_logits, order = torch.sort(logits, descending=False)  # (B, V), (B, V)
        tail_mass = sorted_logits.softmax(dim=-1).cumsum(dim=-1)  # (B, V)
        remove_sorted = tail_mass <= 1 - self.p
        remove_sorted[:, -1] = False  # the most probable token always stays
        remove = remove_sorted.scatter(1, order, remove_sorted)  # back to vocab order
        return logits.masked_fill(remove, float("-inf"))

    def __repr__(self) -> str:
        return f"TopP({self.p})"


class MinP:
    """Keep tokens whose probability is at least p times the top token's (Nguyen et al. 2024).

    p = 0 keeps every token: the filter is off, as top_p = 1 is, and as HF's `MinPLogitsWarper`,
    vLLM and llama.cpp read min_p = 0."""

    def __init__(self, p: float):
        p = _float("min_p", p)
        if not 0 <= p <= 1:
            raise InvalidValue(f"min_p must be in [0, 1], got {p!r}")
        self.p = p

    def __call__(self, logits: Tensor, idx: Tensor) -> Tensor:
        logits = _as_float32(logits)
        probs = logits.softmax(dim=-1)  # (B, V)
        threshold = self.p * probs.amax(dim=-1, keepdim=True)  # (B, 1)
        # the top token always passes (p <= 1), so at least one token is kept
        return logits.masked_fill(probs < threshold, float("-inf"))

    def __repr__(self) -> str:
        return f"MinP({self.p})"


def build_processors(
    temperature: float | None = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    min_p: float | None = None,
    repetition_penalty: float | None = None,
) -> tuple[list[Processor], bool]:
    """The processors for these settings in the fixed order, and whether to decode greedily.

    `temperature == 0` means greedy: the argmax is taken, so temperature and the filters
    (which always keep the top token) are left out, but the repetition penalty, which can
    change the argmax, stays. Every argument is validated either way. No-op settings
    (None, temperature 1, top_p 1, min_p 0, repetition_penalty 1) add no processor.
    """
    if temperature is not None:
        temperature = _float("temperature", temperature)
        if temperature < 0:
            raise InvalidValue(f"temperature must be >= 0, got {temperature!r}")
    greedy = temperature == 0

    penalty = None if repetition_penalty is None else RepetitionPenalty(repetition_penalty)
    filters: list[Processor] = []
    if temperature is not None and temperature not in (0.0, 1.0):
        filters.append(Temperature(temperature))
    if top_k is not None:
        filters.append(TopK(top_k))
    if top_p is not None:
        nucleus = TopP(top_p)
        if nucleus.p < 1:
            filters.append(nucleus)
    if min_p is not None:
        floor = MinP(min_p)
        if floor.p > 0:
            filters.append(floor)

    processors: list[Processor] = []
    if penalty is not None and penalty.penalty != 1:
        processors.append(penalty)
    if not greedy:
        processors.extend(filters)
    return processors, greedy


def process(logits: Tensor, idx: Tensor, processors: list[Processor]) -> Tensor:
    """Apply the processors in order to next-token logits (B, V) given the context idx (B, T)."""
    logits = _as_float32(logits)
    for processor in processors:
        logits = processor(logits, idx)
    return logits


def sample_next(
    logits: Tensor,
    idx: Tensor,
    processors: list[Processor],
    greedy: bool,
    generator: torch.Generator | None = None,
) -> Tensor:
    """Pick the next token id (B, 1): the argmax if greedy, else a draw from softmax(logits)."""
    logits = process(logits, idx, processors)  # (B, V)
    if greedy:
        return logits.argmax(dim=-1, keepdim=True)  # (B, 1)
    probs = logits.softmax(dim=-1)  # (B, V)
    return torch.multinomial(probs, num_samples=1, generator=generator)  # (B, 1)

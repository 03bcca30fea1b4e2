"""Encoder and decoder blocks: attention + FFN, each wrapped in a residual connection and LayerNorm.

Claim C11: residual connections give the gradient a direct path through a deep stack, and
LayerNorm keeps each sublayer's input distribution stable (Ba et al. 2016).
- post-norm, as in the original paper (Vaswani et al. 2017, section 3.1): x = LN(x + Sublayer(x))
- pre-norm, the default here (Xiong et al. 2020; GPT-2): x = x + Sublayer(LN(x)), which trains
  deep stacks without a careful warm-up; the stack then ends with one final LayerNorm.

EncoderBlock: self-attention over the whole input (non-causal) + FFN.
DecoderBlock: masked (causal) self-attention, then, when `cross=True`, cross-attention to the
encoder output, then FFN. A decoder-only language model uses `cross=False`.

Shape legend: B batch, T target length, S source length, C d_model.
"""

from __future__ import annotations

from dataclasses import dataclass

from torch import Tensor, nn

from redthread.errors import RedthreadError
from redthread.layers.attention import MultiHeadAttention
from redthread.layers.feedforward import FeedForward
from redthread.layers.kv_cache import KVCache

NORMS = ("pre", "post")


@dataclass
class LayerCache:
    """The caches of one decoder block: its own past keys/values, and the projected encoder output."""

    self_attn: KVCache
    cross_attn: KVCache | None = None


class Residual(nn.Module):
    """x + dropout(sublayer(...)) with LayerNorm before (pre-norm) or after (post-norm)."""

    def __init__(self, d_model: int, norm: str, dropout: float, bias: bool, eps: float = 1e-5):
        super().__init__()
        if norm not in NORMS:
            raise RedthreadError(f"norm must be one of {NORMS}, got {norm!r}")
        self.pre = norm == "pre"
        self.norm = nn.LayerNorm(d_model, eps=eps, bias=bias)
        self.dropout = nn.Dropout(dropout) if dropout > 0 else None  # None: not even a no-op call

    def normed_input(self, x: Tensor) -> Tensor:
        return self.norm(x) if self.pre else x

    def add(self, x: Tensor, out: Tensor) -> Tensor:
        x = x + (out if self.dropout is None else self.dropout(out))
        return x if self.pre else self.norm(x)


class EncoderBlock(nn.Module):
    def __init__(
        self,
        d_model, n_head, d_ff, dropout=0.0, bias=True, norm="pre", activation="gelu", scale=None, rotary_len=None,
        norm_eps=1e-5,
    ):
        super().__init__()
        self.self_attn = MultiHeadAttention(
            d_model, n_head, causal=False, dropout=dropout, bias=bias, scale=scale, rotary_len=rotary_len
        )
        self.self_attn_res = Residual(d_model, norm, dropout, bias, norm_eps)
        self.ffn = FeedForward(d_model, d_ff, bias=bias, activation=activation)
        self.ffn_res = Residual(d_model, norm, dropout, bias, norm_eps)

    def forward(self, x: Tensor, mask: Tensor | None = None) -> Tensor:
        """x (B, S, C), mask broadcastable to (B, H, S, S) -> (B, S, C)."""
        x = self.self_attn_res.add(x, self.self_attn(self.self_attn_res.normed_input(x), mask=mask)[0])
        return self.ffn_res.add(x, self.ffn(self.ffn_res.normed_input(x)))


class DecoderBlock(nn.Module):
    def __init__(
        self,
        d_model, n_head, d_ff, dropout=0.0, bias=True, norm="pre", activation="gelu", scale=None, rotary_len=None,
        norm_eps=1e-5, cross=False,
    ):
        super().__init__()
        self.self_attn = MultiHeadAttention(
            d_model, n_head, causal=True, dropout=dropout, bias=bias, scale=scale, rotary_len=rotary_len
        )
        self.self_attn_res = Residual(d_model, norm, dropout, bias, norm_eps)
        if cross:
            self.cross_attn = MultiHeadAttention(d_model, n_head, causal=False, dropout=dropout, bias=bias, scale=scale)
            self.cross_attn_res = Residual(d_model, norm, dropout, bias, norm_eps)
        else:
            self.cross_attn = None
        self.ffn = FeedForward(d_model, d_ff, bias=bias, activation=activation)
        self.ffn_res = Residual(d_model, norm, dropout, bias, norm_eps)

    def forward(
        self,
        x: Tensor,
        memory: Tensor | None = None,
        memory_mask: Tensor | None = None,
        cache: LayerCache | None = None,
    ) -> Tensor:
        """x (B, T, C); memory (B, S, C) the encoder output; memory_mask broadcastable to (B, H, T, S)."""
        h = self.self_attn_res.normed_input(x)
        x = self.self_attn_res.add(x, self.self_attn(h, cache=None if cache is None else cache.self_attn)[0])
        if self.cross_attn is not None:
            if memory is None:  # without it, cross-attention would silently become non-causal self-attention
                raise RedthreadError("this decoder has cross-attention: pass memory (the encoder output)")
            h = self.cross_attn_res.normed_input(x)
            kv_cache = None if cache is None else cache.cross_attn
            x = self.cross_attn_res.add(x, self.cross_attn(h, context=memory, mask=memory_mask, cache=kv_cache)[0])
        return self.ffn_res.add(x, self.ffn(self.ffn_res.normed_input(x)))

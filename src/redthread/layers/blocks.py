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

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from redthread.errors import InvalidValue
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
            raise InvalidValue(f"norm must be one of {NORMS}, got {norm!r}")
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
        d_model, n_head, d_ff, dropout=0.0, bias=True, norm="pre", activation="gelu", scale=None, rotary=False,
        block_size=None, norm_eps=1e-5, qk_norm=False,
    ):
        super().__init__()
        self.self_attn = MultiHeadAttention(
            d_model, n_head, causal=False, dropout=dropout, bias=bias, scale=scale, rotary=rotary, block_size=block_size,
            qk_norm=qk_norm,
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
        d_model, n_head, d_ff, dropout=0.0, bias=True, norm="pre", activation="gelu", scale=None, rotary=False,
        block_size=None, norm_eps=1e-5, cross=False, qk_norm=False,
    ):
        super().__init__()
        self.self_attn = MultiHeadAttention(
            d_model, n_head, causal=True, dropout=dropout, bias=bias, scale=scale, rotary=rotary, block_size=block_size,
            qk_norm=qk_norm,
        )
        self.self_attn_res = Residual(d_model, norm, dropout, bias, norm_eps)
        if cross:
            self.cross_attn = MultiHeadAttention(d_model, n_head, causal=False, dropout=dropout, bias=bias, scale=scale,
                                                 qk_norm=qk_norm)
            self.cross_attn_res = Residual(d_model, norm, dropout, bias, norm_eps)
        else:
            self.cross_attn = None
        self.ffn = FeedForward(d_model, d_ff, bias=bias, activation=activation)
        self.ffn_res = Residual(d_model, norm, dropout, bias, norm_eps)

    def forward(
        self,
        x: Tensor,
        context: Tensor | None = None,
        context_mask: Tensor | None = None,
        cache: LayerCache | None = None,
    ) -> Tensor:
        """x (B, T, C); context (B, S, C) the encoder output; context_mask broadcastable to (B, H, T, S)."""
        h = self.self_attn_res.normed_input(x)
        x = self.self_attn_res.add(x, self.self_attn(h, cache=None if cache is None else cache.self_attn)[0])
        if self.cross_attn is not None:
            if context is None:  # without it, cross-attention would silently become non-causal self-attention
                raise InvalidValue("this decoder has cross-attention: pass context (the encoder output)")
            h = self.cross_attn_res.normed_input(x)
            kv_cache = None if cache is None else cache.cross_attn
            x = self.cross_attn_res.add(x, self.cross_attn(h, context=context, mask=context_mask, cache=kv_cache)[0])
        return self.ffn_res.add(x, self.ffn(self.ffn_res.normed_input(x)))


class DecodeStep:
    """A decoder block's step for one new token per row through its cache: x (B, C) -> (B, C).

    The same math as `DecoderBlock.forward` on (B, 1, C) with a cache, for generation, where at
    batch 1 a step spends as much time on dispatching small ops as in its matrix-vector products
    (docs/benchmarks.md). So: (B, C) rows, the fewest tensor ops, no submodule calls (module
    hooks do not fire; `generate` falls back to `forward` when something observes the model),
    and every matrix copied once, transposed to (in, out), because `x @ W` with a contiguous W
    streams its rows faster than `x @ W.T` at batch 1 (GPT-2's Conv1D layout). The copies cost
    one more set of the block's matrices and do not follow later changes to the weights
    (`TransformerLM.decoder_step` rebuilds them). Self-attention blocks only (no cross-attention).
    """

    def __init__(self, block: DecoderBlock):
        if block.cross_attn is not None:
            raise InvalidValue("DecodeStep covers self-attention blocks only; this one has cross-attention")
        attn, ffn = block.self_attn, block.ffn
        self.qkv, self.out = _transposed(attn.qkv_proj), _transposed(attn.out_proj)
        self.fc_in, self.fc_out = _transposed(ffn.fc_in), _transposed(ffn.fc_out)
        self.act = ffn.act
        self.norm1, self.norm2 = block.self_attn_res.norm, block.ffn_res.norm
        self.pre = block.self_attn_res.pre
        self.n_head, self.d_head, self.scale, self.rotary = attn.n_head, attn.d_head, attn.scale, attn.rotary
        self.norm_qk = attn._norm  # QK-norm where the block has it, else the identity

    def __call__(self, x: Tensor, cache: LayerCache) -> Tensor:
        if self.pre:
            x = x + self.attend(_norm(self.norm1, x), cache.self_attn)
            return x + self.feed_forward(_norm(self.norm2, x))
        x = _norm(self.norm1, x + self.attend(x, cache.self_attn))
        return _norm(self.norm2, x + self.feed_forward(x))

    def attend(self, x: Tensor, cache: KVCache) -> Tensor:
        B, C = x.shape
        qkv = _linear(x, *self.qkv).view(B, 3, self.n_head, 1, self.d_head)  # (B, 3, H, 1, D)
        qk, v = self.norm_qk(qkv[:, :2]), qkv[:, 2]  # (B, 2, H, 1, D), (B, H, 1, D)
        if self.rotary is not None:
            qk = self.rotary(qk, cache.length)
        q, k = qk.unbind(1)  # (B, H, 1, D) each
        k, v = cache.update(k, v)  # (B, H, S, D)
        y = F.scaled_dot_product_attention(q, k, v, scale=self.scale)  # one query: every cached key is visible
        return _linear(y.reshape(B, C), *self.out)  # (B, H, 1, D) -> (B, C) -> (B, C)

    def feed_forward(self, x: Tensor) -> Tensor:
        return _linear(self.act(_linear(x, *self.fc_in)), *self.fc_out)  # (B, C) -> (B, d_ff) -> (B, C)


def _transposed(linear: nn.Linear) -> tuple[Tensor, Tensor | None]:
    return linear.weight.detach().t().contiguous(), linear.bias  # (in, out)


def _linear(x: Tensor, w_t: Tensor, bias: Tensor | None) -> Tensor:
    """x @ w_t + bias with w_t (in, out): nn.Linear with a transposed weight."""
    return x @ w_t if bias is None else torch.addmm(bias, x, w_t)


def _norm(norm: nn.LayerNorm, x: Tensor) -> Tensor:
    return F.layer_norm(x, norm.normalized_shape, norm.weight, norm.bias, norm.eps)

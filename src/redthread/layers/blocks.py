"""Encoder and decoder blocks: attention + FFN, each wrapped in a residual connection and LayerNorm.

Claim C11: residual connections give the gradient a direct path through a deep stack, and
LayerNorm keeps each sublayer's input distribution stable (Ba et al. 2016).
- post-norm, as in the original paper (Vaswani et al. 2017, section 3.1): x = LN(x + Sublayer(x))
- pre-norm, the default here (Xiong et al. 2020; GPT-2): x = x + Sublayer(LN(x)), which trains
  deep stacks without a careful warm-up; the stack then ends with one final LayerNorm.
Each block's `forward` writes both orders out, two lines each (three with cross-attention).

EncoderBlock: self-attention over the whole input (non-causal) + FFN.
DecoderBlock: masked (causal) self-attention, then, when `cross=True`, cross-attention to the
encoder output, then FFN. A decoder-only language model uses `cross=False`.
Both are built from one `BlockConfig`; `TransformerConfig.block` derives it from a model's config.
The batch-1 decoding step that copies a DecoderBlock's weights is `layers/decode_step.py`.

Shape legend: B batch, T target length, S source length, C d_model.
"""

from __future__ import annotations

from dataclasses import dataclass

from torch import Tensor, nn

from redthread.errors import InvalidValue
from redthread.layers.attention import MultiHeadAttention
from redthread.layers.feedforward import FeedForward
from redthread.layers.kv_cache import KVCache

NORMS = ("pre", "post")


@dataclass(frozen=True)
class BlockConfig:
    """Everything a block is built from, written once."""

    d_model: int
    n_head: int
    d_ff: int
    dropout: float = 0.0  # on each sublayer's output, before the residual sum (and on the attention weights)
    bias: bool = True  # in every Linear and LayerNorm
    norm: str = "pre"  # LayerNorm before each sublayer ("pre") or after the residual sum ("post": the paper)
    activation: str = "gelu"  # the FFN's non-linearity (layers/feedforward.py)
    scale: float | None = None  # the attention scores' scale; None: 1/sqrt(d_head); 1.0: none (claim C7's experiment)
    rotary: bool = False  # rotary positions inside self-attention, over up to block_size positions
    block_size: int | None = None
    norm_eps: float = 1e-5
    qk_norm: bool = False  # RMS-normalise each head's queries and keys before the scores
    attn_dropout: float | None = None  # on the attention weights; None: dropout, as in the paper

    @property
    def attention_dropout(self) -> float:
        return self.dropout if self.attn_dropout is None else self.attn_dropout


def attention(cfg: BlockConfig, causal: bool, cross: bool = False) -> MultiHeadAttention:
    """A block's multi-head attention; rotary positions rotate self-attention only."""
    return MultiHeadAttention(cfg.d_model, cfg.n_head, causal=causal, dropout=cfg.attention_dropout, bias=cfg.bias,
                              scale=cfg.scale, rotary=cfg.rotary and not cross, block_size=cfg.block_size,
                              qk_norm=cfg.qk_norm)


@dataclass
class LayerCache:
    """The caches of one decoder block: its own past keys/values, and the projected encoder output."""

    self_attn: KVCache
    cross_attn: KVCache | None = None


class Residual(nn.Module):
    """The LayerNorm of one residual connection, as `.norm`: the block's `forward` writes the sum.

    Kept as a module of its own so that the parameter names stay `self_attn_res.norm.weight`, the
    names checkpoints and the Hugging Face key tables (interop/) use."""

    def __init__(self, d_model: int, norm: str, bias: bool = True, eps: float = 1e-5):
        super().__init__()
        if norm not in NORMS:
            raise InvalidValue(f"norm must be one of {NORMS}, got {norm!r}")
        self.pre = norm == "pre"
        self.norm = nn.LayerNorm(d_model, eps=eps, bias=bias)

    def normed_input(self, x: Tensor) -> Tensor:
        """What the sublayer reads: LN(x) with pre-norm, x with post-norm."""
        return self.norm(x) if self.pre else x


class EncoderBlock(nn.Module):
    def __init__(self, cfg: BlockConfig):
        super().__init__()
        self.self_attn = attention(cfg, causal=False)
        self.self_attn_res = Residual(cfg.d_model, cfg.norm, cfg.bias, cfg.norm_eps)  # .norm: LN 1
        self.ffn = FeedForward(cfg.d_model, cfg.d_ff, bias=cfg.bias, activation=cfg.activation)
        self.ffn_res = Residual(cfg.d_model, cfg.norm, cfg.bias, cfg.norm_eps)  # .norm: LN 2
        self.drop = nn.Dropout(cfg.dropout)
        self.pre = cfg.norm == "pre"

    def forward(self, x: Tensor, mask: Tensor | None = None) -> Tensor:
        """x (B, S, C), mask broadcastable to (B, H, S, S) -> (B, S, C)."""
        ln1, ln2 = self.self_attn_res.norm, self.ffn_res.norm
        if self.pre:  # x + Sublayer(LN(x))
            x = x + self.drop(self.self_attn(ln1(x), mask=mask)[0])
            x = x + self.drop(self.ffn(ln2(x)))
        else:  # LN(x + Sublayer(x)): the paper
            x = ln1(x + self.drop(self.self_attn(x, mask=mask)[0]))
            x = ln2(x + self.drop(self.ffn(x)))
        return x


class DecoderBlock(nn.Module):
    def __init__(self, cfg: BlockConfig, cross: bool = False):
        super().__init__()
        self.self_attn = attention(cfg, causal=True)
        self.self_attn_res = Residual(cfg.d_model, cfg.norm, cfg.bias, cfg.norm_eps)  # .norm: LN 1
        if cross:
            self.cross_attn = attention(cfg, causal=False, cross=True)
            self.cross_attn_res = Residual(cfg.d_model, cfg.norm, cfg.bias, cfg.norm_eps)  # .norm: LN 2
        else:
            self.cross_attn = self.cross_attn_res = None
        self.ffn = FeedForward(cfg.d_model, cfg.d_ff, bias=cfg.bias, activation=cfg.activation)
        self.ffn_res = Residual(cfg.d_model, cfg.norm, cfg.bias, cfg.norm_eps)  # .norm: LN 3
        self.drop = nn.Dropout(cfg.dropout)
        self.pre = cfg.norm == "pre"

    def forward(
        self,
        x: Tensor,
        context: Tensor | None = None,
        context_mask: Tensor | None = None,
        cache: LayerCache | None = None,
    ) -> Tensor:
        """x (B, T, C); context (B, S, C) the encoder output; context_mask broadcastable to (B, H, T, S)."""
        cross = self.cross_attn is not None
        if cross and context is None:  # without it, cross-attention would silently become non-causal self-attention
            raise InvalidValue("this decoder has cross-attention: pass context (the encoder output)")
        kv, kv_cross = (None, None) if cache is None else (cache.self_attn, cache.cross_attn)
        ln1, ln3 = self.self_attn_res.norm, self.ffn_res.norm
        ln2 = self.cross_attn_res.norm if cross else None
        if self.pre:  # x + Sublayer(LN(x))
            x = x + self.drop(self.self_attn(ln1(x), cache=kv)[0])
            if cross:
                x = x + self.drop(self.cross_attn(ln2(x), context=context, mask=context_mask, cache=kv_cross)[0])
            x = x + self.drop(self.ffn(ln3(x)))
        else:  # LN(x + Sublayer(x)): the paper
            x = ln1(x + self.drop(self.self_attn(x, cache=kv)[0]))
            if cross:
                x = ln2(x + self.drop(self.cross_attn(x, context=context, mask=context_mask, cache=kv_cross)[0]))
            x = ln3(x + self.drop(self.ffn(x)))
        return x

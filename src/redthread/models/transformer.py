"""The Transformer: the top rung of the ladder, P(token_t | tokens_<t) from attention stacked deep.

Every piece of claims C6-C11 of the essay is assembled here from `redthread.layers`:
token embedding + positional encoding (C8) -> N blocks of multi-head attention (C6, C7, C9)
and a position-wise FFN (C10), each with a residual connection and LayerNorm (C11) -> a
linear layer whose softmax is the next-token distribution (C2, C12).

- `TransformerLM`: decoder-only language model (GPT). `Decoder` is the same stack with
  cross-attention to an encoder's output.
- `Encoder`: bidirectional self-attention (BERT-style, the paper's left half).
- `EncoderDecoder`: the original sequence-to-sequence Transformer (Vaswani et al. 2017, fig. 1).

The file reads top to bottom: the config (the paper's settings first, then variants, interop and
experiment switches), the embedding, then the models, each a stack of `layers/blocks.py`'s blocks
(whose attention is `layers/attention.py`). The batch-1 decoding step is `layers/decode_step.py`.
Models return raw logits; the likelihood lives in `redthread.models.likelihoods`.
Shape legend: B batch, T target length, S source length, C d_model, V vocab.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import ClassVar

import torch
from torch import Tensor, nn

from redthread.errors import InvalidValue
from redthread.layers.blocks import NORMS, BlockConfig, DecoderBlock, EncoderBlock, LayerCache
from redthread.layers.decode_step import decoder_step
from redthread.layers.feedforward import ACTIVATIONS
from redthread.layers.kv_cache import KVCache
from redthread.layers.positional import POSITIONAL
from redthread.models.base import LanguageModel
from redthread.models.config import ConfigMixin, check_settings, setting

EMB_STD = 0.02  # GPT-2's initial scale of embeddings and weights


@dataclass(frozen=True)
class TransformerConfig(ConfigMixin):
    # --- the paper's model (Vaswani et al. 2017, section 3: N, h, d_model, d_ff, P_drop) ---
    vocab_size: int = setting(65, "tokens the model knows (set by the tokenizer)", ge=1)
    block_size: int = setting(256, "the context window: the most positions the model sees at once", ge=1)
    n_layer: int = setting(4, "Transformer blocks", ge=1)
    n_head: int = setting(4, "attention heads per block (must divide d_model)", ge=1)
    d_model: int = setting(128, "the width of every token's vector", ge=1)
    d_ff: int | None = setting(None, "the feed-forward network's hidden width; None: 4 * d_model", ge=1)
    dropout: float = setting(
        0.0, "dropout on residual branches and (unless attn_dropout says otherwise) attention weights", ge=0, lt=1)
    tie_weights: bool = setting(True, "lm_head shares the token embedding matrix (Press & Wolf 2017)")
    src_vocab_size: int | None = setting(None, "encoder-decoder only; None: vocab_size", ge=1)

    # --- variants: positions, norm placement, activation, biases, QK-norm, soft-capping ---
    pos: str = setting("sinusoidal", "positions: sinusoidal (the paper), learned, rope (rotary, inside attention) or none")
    norm: str = setting("pre", "LayerNorm before each sublayer (pre) or after the residual sum (post: the original paper)")
    activation: str = setting("gelu", "the feed-forward network's non-linearity (relu2: ReLU squared)")
    bias: bool = setting(True, "biases in Linear and LayerNorm layers")
    qk_norm: bool = setting(False, "RMS-normalise each head's queries and keys before the scores (QK-norm)")
    logit_softcap: float | None = setting(
        None, "squash the logits smoothly into (-cap, cap): cap * tanh(logits / cap); None: off", gt=0)
    attn_dropout: float | None = setting(
        None, "dropout on the attention weights alone; None: dropout (0 keeps CPU attention on its fused kernel)",
        ge=0, lt=1)

    # --- interop only: what loading BERT needs (interop/huggingface.py) ---
    norm_eps: float = setting(1e-5, "every LayerNorm's epsilon (BERT: 1e-12)", gt=0, lt=1)
    embed_norm: bool = setting(False, "a LayerNorm on the embeddings, before dropout (BERT)")
    type_vocab_size: int = setting(0, "> 0: token-type (segment) embeddings added to the input (BERT)", ge=0)

    # --- experiment only ---
    scale_attention: bool = setting(True, "divide scores by sqrt(d_head) (claim C7); False only for experiments")

    CHOICES: ClassVar[dict[str, tuple[str, ...]]] = {
        "norm": NORMS, "pos": tuple(POSITIONAL), "activation": tuple(ACTIVATIONS)}

    def __post_init__(self):
        check_settings(self)  # the bounds, switches and choices declared above
        if self.d_model % self.n_head != 0:
            raise InvalidValue(f"d_model ({self.d_model}) must be divisible by n_head ({self.n_head})")

    @property
    def d_head(self) -> int:
        return self.d_model // self.n_head

    @property
    def ffn_size(self) -> int:
        return self.d_ff or 4 * self.d_model

    @property
    def block(self) -> BlockConfig:
        """What each block is built from."""
        return BlockConfig(self.d_model, self.n_head, self.ffn_size, self.dropout, self.bias, self.norm, self.activation,
                           scale=None if self.scale_attention else 1.0, rotary=self.pos == "rope",
                           block_size=self.block_size, norm_eps=self.norm_eps, qk_norm=self.qk_norm,
                           attn_dropout=self.attn_dropout)


class Embedding(nn.Module):
    """Token embedding plus positions: the paper's sqrt(d_model) * E[idx] + PE (section 3.4),
    multiplied throughout by the constant EMB_STD.

    Dividing by a constant keeps the paper's balance between token and position (token entries
    of standard deviation 1 against sinusoids of amplitude 1) while starting the residual stream
    at GPT-2's scale, 0.02. With pre-norm the stream's scale decides how much the first blocks'
    small outputs can change it, and the small scale trains much faster: on tiny-Shakespeare,
    config (a), 2000 steps, unit scale ends ~0.1-0.3 nats/char worse (docs/benchmarks.md).

    BERT adds two pieces, both off by default: token-type (segment) embeddings
    (`type_vocab_size` > 0) and a LayerNorm over the sum (`embed_norm`).
    """

    def __init__(self, vocab_size: int, cfg: TransformerConfig):
        super().__init__()
        self.tok_emb = nn.Embedding(vocab_size, cfg.d_model)
        self.pos_emb = POSITIONAL[cfg.pos](cfg.block_size, cfg.d_model)
        self.pos_scale = EMB_STD if cfg.pos == "sinusoidal" else 1.0  # learned positions start at EMB_STD already
        self.type_emb = nn.Embedding(cfg.type_vocab_size, cfg.d_model) if cfg.type_vocab_size else None
        self.norm = nn.LayerNorm(cfg.d_model, eps=cfg.norm_eps, bias=cfg.bias) if cfg.embed_norm else None
        self.drop = nn.Dropout(cfg.dropout)
        self.block_size = cfg.block_size

    def forward(self, idx: Tensor, start: int = 0, token_types: Tensor | None = None) -> Tensor:
        """idx (B, T) -> (B, T, C); token_types (B, T), default all 0, when the model has type embeddings."""
        T = idx.size(1)
        if start + T > self.block_size:
            raise InvalidValue(f"sequence of {start + T} tokens is longer than the context window ({self.block_size})")
        x = self.tok_emb(idx)  # (B, T, C)
        pos = self.pos_emb(start, T)  # (T, C) or None
        if pos is not None:
            x = x + self.pos_scale * pos
        if self.type_emb is not None:
            x = x + (self.type_emb.weight[0] if token_types is None else self.type_emb(token_types))
        elif token_types is not None:
            raise InvalidValue("this model has no token-type embeddings (type_vocab_size=0): pass no token_types")
        return self.drop(x if self.norm is None else self.norm(x))


class TransformerLM(LanguageModel):
    """Decoder-only Transformer language model: model(idx) -> logits (B, T, V).

    `cross=True` adds cross-attention to a `context` (an encoder's output): that is `Decoder`.
    """

    attends = True

    def __init__(self, cfg: TransformerConfig, cross: bool = False):
        super().__init__()
        self.cfg = cfg
        self.embed = Embedding(cfg.vocab_size, cfg)
        self.blocks = nn.ModuleList(DecoderBlock(cfg.block, cross=cross) for _ in range(cfg.n_layer))
        self.norm_f = nn.LayerNorm(cfg.d_model, eps=cfg.norm_eps, bias=cfg.bias) if cfg.norm == "pre" else nn.Identity()
        self.lm_head = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)
        init_weights(self, cfg.n_layer)
        if cfg.tie_weights:
            self.lm_head.weight = self.embed.tok_emb.weight

    def forward(
        self,
        idx: Tensor,
        cache: list[LayerCache] | None = None,
        context: Tensor | None = None,
        context_mask: Tensor | None = None,
    ) -> Tensor:
        """idx (B, T) int64 -> logits (B, T, V). With a cache, idx holds only the new tokens."""
        start = 0 if cache is None else cache[0].self_attn.length
        x = self.embed(idx, start)  # (B, T, C)
        for i, block in enumerate(self.blocks):
            x = block(x, context=context, context_mask=context_mask, cache=None if cache is None else cache[i])
        return softcap(self.lm_head(self.norm_f(x)), self.cfg.logit_softcap)  # (B, T, V)

    def make_cache(self, batch_size: int, capacity: int | None = None, context_len: int = 0) -> list[LayerCache]:
        """One preallocated cache per block for incremental decoding."""
        cfg, p = self.cfg, self.lm_head.weight
        capacity = capacity or cfg.block_size
        kv = dict(device=p.device, dtype=p.dtype)
        return [
            LayerCache(
                self_attn=KVCache(batch_size, cfg.n_head, capacity, cfg.d_head, **kv),
                cross_attn=KVCache(batch_size, cfg.n_head, context_len, cfg.d_head, **kv) if context_len else None,
            )
            for _ in range(cfg.n_layer)
        ]

    def num_params(self, non_embedding: bool = True) -> int:
        """Parameter count; by default without the embeddings (the count that FLOPs scale with)."""
        n = sum(p.numel() for p in self.parameters())
        if non_embedding:
            n -= self.embed.tok_emb.weight.numel()
            if isinstance(self.embed.pos_emb, nn.Module):
                n -= sum(p.numel() for p in self.embed.pos_emb.parameters())
        return n

    def flops_per_token(self, T: int | None = None) -> int:
        """Training FLOPs per token: 6 N for the matmuls (forward + backward) plus attention
        scores and weighted sums, 6 * 2 * n_layer * d_model * T (Kaplan et al. 2020; PaLM appendix B)."""
        T = T or self.cfg.block_size
        n = self.num_params() + self.lm_head.weight.numel() * self.cfg.tie_weights
        return 6 * n + 12 * self.cfg.n_layer * self.cfg.d_model * T

    # the speed path of generate(): layers/decode_step.py

    @property
    def can_step(self) -> bool:
        """Whether `decoder_step` gives what `forward` gives: every block is self-attention only, and
        `forward` is this class's own (a subclass that changes the logits, e.g. masks a token, would be bypassed)."""
        return type(self).forward is TransformerLM.forward and all(block.cross_attn is None for block in self.blocks)

    def decoder_step(self) -> Callable[[Tensor, list[LayerCache]], Tensor]:
        """`step(idx, cache)`: `forward(idx, cache)[:, -1]` for one new token per row, idx (B, 1) -> logits (B, V),
        in fewer ops: `generate()`'s step at batch 1, built once and kept until a parameter changes."""
        return decoder_step(self, partial(softcap, cap=self.cfg.logit_softcap))


def init_weights(model: nn.Module, n_layer: int) -> None:
    """GPT-2 initialisation: N(0, 0.02) for matrices and embeddings, zero biases, and residual
    output projections scaled down by 1/sqrt(2 n_layer) so the residual stream does not grow with depth."""
    for name, p in model.named_parameters():
        if name.endswith("bias"):
            nn.init.zeros_(p)
        elif "norm" in name:
            nn.init.ones_(p)
        elif name.endswith(("out_proj.weight", "fc_out.weight")):
            nn.init.normal_(p, std=EMB_STD / math.sqrt(2 * n_layer))
        else:
            nn.init.normal_(p, std=EMB_STD)


def softcap(logits: Tensor, cap: float | None) -> Tensor:
    """cap * tanh(logits / cap): the logits kept within (-cap, cap), near the identity well inside
    (Gemma 2; the speedrun records); None leaves them as they are."""
    return logits if cap is None else cap * torch.tanh(logits / cap)


class Decoder(TransformerLM):
    """The paper's decoder: masked self-attention, cross-attention to the encoder, FFN."""

    def __init__(self, cfg: TransformerConfig):
        super().__init__(cfg, cross=True)


class Encoder(nn.Module):
    """Bidirectional encoder: src (B, S) -> context (B, S, C). src_mask (B, S): True = real token."""

    def __init__(self, cfg: TransformerConfig, vocab_size: int | None = None):
        super().__init__()
        self.cfg = cfg
        self.embed = Embedding(vocab_size or cfg.vocab_size, cfg)
        self.blocks = nn.ModuleList(EncoderBlock(cfg.block) for _ in range(cfg.n_layer))
        self.norm_f = nn.LayerNorm(cfg.d_model, eps=cfg.norm_eps, bias=cfg.bias) if cfg.norm == "pre" else nn.Identity()
        init_weights(self, cfg.n_layer)

    def forward(self, src: Tensor, src_mask: Tensor | None = None, token_types: Tensor | None = None) -> Tensor:
        """token_types (B, S): segment ids, for a model with type_vocab_size > 0 (BERT); default all 0."""
        mask = None if src_mask is None else src_mask[:, None, None, :]  # (B, 1, 1, S): keys to attend to
        x = self.embed(src, token_types=token_types)  # (B, S, C)
        for block in self.blocks:
            x = block(x, mask=mask)
        return self.norm_f(x)


class EncoderDecoder(nn.Module):
    """The sequence-to-sequence Transformer: model(src, tgt) -> logits (B, T, V) of P(tgt_t | tgt_<t, src)."""

    def __init__(self, cfg: TransformerConfig):
        super().__init__()
        self.cfg = cfg
        self.encoder = Encoder(cfg, vocab_size=cfg.src_vocab_size or cfg.vocab_size)
        self.decoder = Decoder(cfg)

    @property
    def block_size(self) -> int:
        return self.cfg.block_size

    def forward(self, src: Tensor, tgt: Tensor, src_mask: Tensor | None = None) -> Tensor:
        context = self.encoder(src, src_mask)  # (B, S, C)
        return self.decoder(tgt, context=context, context_mask=padding_mask(src_mask))

    def conditioned_on(self, src: Tensor, src_mask: Tensor | None = None) -> ConditionedDecoder:
        """A language model of the target given this source, for `generate()`."""
        return ConditionedDecoder(self.decoder, self.encoder(src, src_mask), padding_mask(src_mask))


def padding_mask(src_mask: Tensor | None) -> Tensor | None:
    return None if src_mask is None else src_mask[:, None, None, :]  # (B, 1, 1, S)


class ConditionedDecoder(nn.Module):
    """A decoder with its encoder output fixed: looks like a TransformerLM to `generate()`."""

    def __init__(self, decoder: Decoder, context: Tensor, mask: Tensor | None):
        super().__init__()
        self.decoder, self.context, self.mask = decoder, context, mask

    @property
    def cfg(self) -> TransformerConfig:
        return self.decoder.cfg

    @property
    def block_size(self) -> int:
        return self.decoder.block_size

    def forward(self, idx: Tensor, cache: list[LayerCache] | None = None) -> Tensor:
        context, mask = self.context, self.mask
        if context.size(0) != idx.size(0):  # N samples per source: repeat the source
            reps = idx.size(0) // context.size(0)
            context = context.repeat_interleave(reps, dim=0)
            mask = None if mask is None else mask.repeat_interleave(reps, dim=0)
        return self.decoder(idx, cache=cache, context=context, context_mask=mask)

    def make_cache(self, batch_size: int, capacity: int | None = None) -> list[LayerCache]:
        return self.decoder.make_cache(batch_size, capacity, context_len=self.context.size(1))

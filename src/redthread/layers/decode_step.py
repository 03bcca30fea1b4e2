"""The fast path of decoding one token per row at batch 1: the same logits as the model's `forward`
through its cache, in fewer tensor ops. A speed path, kept beside the blocks and the model rather
than inside them; `TransformerLM.decoder_step()` hands it to `generate()` (generate/sampler.py).

At batch 1 a decoding step spends as much time on dispatching small ops as in its matrix-vector
products (docs/benchmarks.md). So `DecodeStep` runs a DecoderBlock on (B, C) rows with the fewest
tensor ops and no submodule calls, on copies of its matrices laid out for `x @ W`; the copies take
as long as decoding ~100 tokens, so `decoder_step` keeps them per model until a parameter changes.

Shape legend: B batch, C d_model, H heads, D head dim, S cached length, V vocab.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from functools import partial

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from redthread.errors import InvalidValue
from redthread.layers.blocks import DecoderBlock, LayerCache
from redthread.layers.kv_cache import KVCache

Step = Callable[[Tensor, list[LayerCache]], Tensor]

# a model -> (its parameters' identities and versions, its decoding step): see `decoder_step`
DECODER_STEPS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def decoder_step(model: nn.Module, finish: Callable[[Tensor], Tensor]) -> Step:
    """`step(idx, cache)`: `model(idx, cache)[:, -1]` for one new token per row, idx (B, 1) -> logits (B, V).

    `model` is a decoder-only stack of self-attention blocks with `embed`, `blocks`, `norm_f` and
    `lm_head` (a TransformerLM); `finish` is applied to the logits (its soft cap) and must not hold
    the model. The step and its matrix copies are kept for the model's lifetime (beside it, in
    DECODER_STEPS, not in the state dict) and rebuilt once a parameter has changed (replaced, moved,
    or written in place: its version counter moves).
    """
    key = [(id(p), p._version, p.data_ptr(), p.dtype) for p in model.parameters()]
    kept = DECODER_STEPS.get(model)
    if kept is None or kept[0] != key:
        kept = DECODER_STEPS[model] = (key, _build(model, finish))
    return kept[1]


def _build(model: nn.Module, finish: Callable[[Tensor], Tensor]) -> Step:
    # the step holds the model's parts, not the model, so DECODER_STEPS lets the model go
    embed, blocks = model.embed, [DecodeStep(block) for block in model.blocks]
    norm_f = model.norm_f if isinstance(model.norm_f, nn.LayerNorm) else None
    lm_head = model.lm_head.weight  # (V, C); tied to the embedding: left as is (V is small)

    def step(idx: Tensor, cache: list[LayerCache]) -> Tensor:
        x = embed(idx, cache[0].self_attn.length)[:, 0]  # (B, C)
        for block, layer_cache in zip(blocks, cache):
            x = block(x, layer_cache)
        if norm_f is not None:
            x = _norm(norm_f, x)
        return finish(F.linear(x, lm_head))  # (B, V)

    return step


class DecodeStep:
    """A decoder block's step for one new token per row through its cache: x (B, C) -> (B, C).

    The same math as `DecoderBlock.forward` on (B, 1, C) with a cache: (B, C) rows, the fewest
    tensor ops, no submodule calls (module hooks do not fire; `generate` falls back to `forward`
    when something observes the model), and every matrix copied once, transposed to (in, out),
    because `x @ W` with a contiguous W streams its rows faster than `x @ W.T` at batch 1 (GPT-2's
    Conv1D layout). The copies cost one more set of the block's matrices and do not follow later
    changes to the weights (`decoder_step` rebuilds them). A layer that is not an nn.Linear brings its own
    product (`step_product()`: generate/quantize.py's int8 layers). Self-attention blocks only (no cross-attention).
    """

    def __init__(self, block: DecoderBlock):
        if block.cross_attn is not None:
            raise InvalidValue("DecodeStep covers self-attention blocks only; this one has cross-attention")
        attn, ffn = block.self_attn, block.ffn
        self.qkv, self.out = _product(attn.qkv_proj), _product(attn.out_proj)  # x (B, in) -> (B, out)
        self.fc_in, self.fc_out = _product(ffn.fc_in), _product(ffn.fc_out)
        self.act = ffn.act
        self.norm1, self.norm2 = block.self_attn_res.norm, block.ffn_res.norm
        self.pre = block.pre
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
        qkv = self.qkv(x).view(B, 3, self.n_head, 1, self.d_head)  # (B, 3, H, 1, D)
        qk, v = self.norm_qk(qkv[:, :2]), qkv[:, 2]  # (B, 2, H, 1, D), (B, H, 1, D)
        if self.rotary is not None:
            qk = self.rotary(qk, cache.length)
        q, k = qk.unbind(1)  # (B, H, 1, D) each
        k, v = cache.update(k, v)  # (B, H, S, D)
        y = F.scaled_dot_product_attention(q, k, v, scale=self.scale)  # one query: every cached key is visible
        return self.out(y.reshape(B, C))  # (B, H, 1, D) -> (B, C) -> (B, C)

    def feed_forward(self, x: Tensor) -> Tensor:
        return self.fc_out(self.act(self.fc_in(x)))  # (B, C) -> (B, d_ff) -> (B, C)


def _product(linear: nn.Module) -> Callable[[Tensor], Tensor]:
    """x (B, in) -> linear(x) (B, out): for an nn.Linear, x @ w_t + bias with its weight copied as w_t (in, out);
    any other layer gives its own `step_product()` (an int8 layer's kernel), or the step refuses it."""
    if not isinstance(linear, nn.Linear):
        if not hasattr(linear, "step_product"):
            raise InvalidValue(f"DecodeStep multiplies by nn.Linear layers or layers with a step_product(), "
                               f"not {type(linear).__name__}")
        return linear.step_product()
    w_t = linear.weight.detach().t().contiguous()  # (in, out)
    return partial(torch.mm, mat2=w_t) if linear.bias is None else partial(torch.addmm, linear.bias, mat2=w_t)


def _norm(norm: nn.LayerNorm, x: Tensor) -> Tensor:
    return F.layer_norm(x, norm.normalized_shape, norm.weight, norm.bias, norm.eps)

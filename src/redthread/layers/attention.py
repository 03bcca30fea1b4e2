"""Attention: the math (`scaled_dot_product_attention`) and the module (`MultiHeadAttention`).

Rung on the ladder: attention, P(token_i | whole context). Claim C6 of the essay:
    Output_i = sum_j softmax_j(Query_i . Key_j) Value_j
The weights of each row are a conditional distribution over positions (they sum to 1),
computed from the data for every query, unlike linear regression's fixed global weights.
Claim C7: the scores are divided by sqrt(d_k) so their variance does not grow with d_k
(Vaswani et al. 2017, "Attention Is All You Need", eq. 1). Claim C9: several heads attend
in different subspaces and are concatenated (ibid., section 3.2.2).

Shape legend: B batch, T query length, S key length, C d_model, H heads, D head dim.
Masks are boolean with True = may attend (as `F.scaled_dot_product_attention`).
"""

from __future__ import annotations

from contextvars import ContextVar

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from redthread.errors import InvalidValue
from redthread.layers.kv_cache import KVCache
from redthread.layers.positional import RotaryEmbedding

# Set by `redthread.viz.record.record_attention` while a recording is open (per thread / async
# task): an object with wants(module) -> bool and add(module, att, q, k), q and k as the scores
# use them (after any rotary rotation). None: nothing records.
RECORDER: ContextVar = ContextVar("redthread_attention_recorder", default=None)


def scaled_dot_product_attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    mask: Tensor | None = None,
    scale: float | None = None,
    dropout_p: float = 0.0,
) -> tuple[Tensor, Tensor]:
    """softmax(Q K^T * scale) V, written out, returning the output and the weights.

    q (..., T, D), k (..., S, D), v (..., S, Dv); mask broadcastable to (..., T, S),
    True = may attend. `scale=None` is 1/sqrt(D); `scale=1.0` switches the scaling off
    (the C7 experiment). Returns y (..., T, Dv) and att (..., T, S), each row summing to 1.
    """
    scale = q.size(-1) ** -0.5 if scale is None else scale
    scores = (q @ k.transpose(-2, -1)) * scale  # (..., T, D) @ (..., D, S) -> (..., T, S)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    att = scores.softmax(dim=-1)  # (..., T, S)
    if dropout_p > 0.0:
        att = F.dropout(att, p=dropout_p)
    return att @ v, att  # (..., T, S) @ (..., S, Dv) -> (..., T, Dv)


def causal_mask(T: int, S: int, device: torch.device | None = None) -> Tensor:
    """(T, S) boolean mask for T new queries that follow S - T cached keys: query i sees keys <= S - T + i."""
    offset = S - T
    rows = torch.arange(T, device=device)[:, None] + offset
    return torch.arange(S, device=device)[None, :] <= rows  # (T, S)


class MultiHeadAttention(nn.Module):
    """Multi-head self- or cross-attention with an optional KV cache.

    Self-attention when `context` is None (q, k, v all from x); cross-attention otherwise
    (q from x, k and v from `context`, e.g. the encoder output). The three input projections
    share one (3C, C) weight, laid out [W_q; W_k; W_v] like `nn.MultiheadAttention.in_proj_weight`:
    one matmul for self-attention, two slices for cross-attention.

    The explicit path (`scaled_dot_product_attention` above) runs only when the weights are
    asked for; otherwise the fused `F.scaled_dot_product_attention` kernel gives the same output.
    """

    def __init__(
        self,
        d_model: int,
        n_head: int,
        causal: bool = False,
        dropout: float = 0.0,
        bias: bool = True,
        scale: float | None = None,
        rotary: bool = False,
        block_size: int | None = None,
        qk_norm: bool = False,
    ):
        super().__init__()
        if n_head < 1 or d_model % n_head != 0:
            raise InvalidValue(f"d_model ({d_model}) must be divisible by n_head ({n_head})")
        self.d_model, self.n_head, self.d_head = d_model, n_head, d_model // n_head
        self.causal = causal
        self.dropout = dropout
        self.scale = scale  # None: 1/sqrt(d_head)
        self.qk_norm = qk_norm  # RMS-normalise each head's q and k (no gain) before positions and scores
        self.qkv_proj = nn.Linear(d_model, 3 * d_model, bias=bias)
        self.out_proj = nn.Linear(d_model, d_model, bias=bias)
        if rotary and not block_size:
            raise InvalidValue("rotary positions need the block_size, the most positions they rotate")
        # rotary positions (pos="rope") for self-attention over up to block_size positions
        self.rotary = RotaryEmbedding(block_size, self.d_head) if rotary else None

    def _proj_slice(self, x: Tensor, start: int, end: int) -> Tensor:
        """x @ W[start:end]^T + b[start:end]: part of the packed [W_q; W_k; W_v] projection."""
        w, b = self.qkv_proj.weight, self.qkv_proj.bias
        return F.linear(x, w[start:end], None if b is None else b[start:end])

    def _norm(self, x: Tensor) -> Tensor:
        """QK-norm (Dehghani et al. 2023; Henry et al. 2020): each head's vectors scaled to RMS 1, so
        no score can grow without bound however large the projections become."""
        return F.rms_norm(x, (self.d_head,)) if self.qk_norm else x

    def _heads(self, x: Tensor, n: int = 1) -> Tensor:
        """(B, L, n * C) -> (n, B, H, L, D): split the model dimension into heads."""
        B, L, _ = x.shape
        return x.view(B, L, n, self.n_head, self.d_head).permute(2, 0, 3, 1, 4)

    def _qkv(self, x: Tensor, context: Tensor | None, cache: KVCache | None) -> tuple[Tensor, Tensor, Tensor]:
        """q (B, H, T, D) and k, v (B, H, S, D), through the cache when there is one."""
        C = self.d_model
        if context is not None:  # cross-attention: keys and values from the context, projected once per cache
            q = self._norm(self._heads(self._proj_slice(x, 0, C))[0])
            if cache is not None and cache.length > 0:
                return q, cache.keys(), cache.values()
            k, v = self._heads(self._proj_slice(context, C, 3 * C), 2)
            k = self._norm(k)
            return (q, *cache.update(k, v)) if cache is not None else (q, k, v)
        qkv = self._heads(self.qkv_proj(x), 3)  # (3, B, H, T, D), one matmul for all three
        if self.rotary is None:
            q, k, v = qkv.unbind(0)  # unbind (not indexing): its backward is one stack, no zero-fill
            q, k = self._norm(q), self._norm(k)
        else:  # normalise, then rotate q and k together, from this chunk's first position
            qk, v = qkv.split((2, 1))
            q, k = self.rotary(self._norm(qk), 0 if cache is None else cache.length).unbind(0)
            v = v.squeeze(0)
        if cache is not None:
            k, v = cache.update(k, v)  # (B, H, S, D): past + new
        return q, k, v

    def forward(
        self,
        x: Tensor,
        context: Tensor | None = None,
        mask: Tensor | None = None,
        need_weights: bool = False,
        cache: KVCache | None = None,
    ) -> tuple[Tensor, Tensor | None]:
        """x (B, T, C), context (B, S, C) or None, mask broadcastable to (B, H, T, S).

        With a cache, self-attention appends this step's keys and values and attends over
        all of them; cross-attention projects `context` once and reuses it afterwards.
        Returns y (B, T, C) and att (B, H, T, S) when need_weights, else None.
        """
        B, T, C = x.shape
        q, k, v = self._qkv(x, context, cache)  # (B, H, T, D), (B, H, S, D), (B, H, S, D)
        S = k.size(2)
        recorder = RECORDER.get()  # inside rt.record_attention: the weights are wanted
        record = recorder is not None and recorder.wants(self)
        need_weights = need_weights or record
        causal = self.causal and context is None and T > 1  # a single new query may see every cached key
        if causal and (mask is not None or T != S or need_weights):
            cm = causal_mask(T, S, x.device)  # (T, S); also covers a chunk after a cached prefix
            mask = cm if mask is None else mask & cm
            causal = False
        dropout_p = self.dropout if self.training else 0.0  # > 0 takes the CPU's fused kernel off to the math path

        if need_weights:
            y, att = scaled_dot_product_attention(q, k, v, mask=mask, scale=self.scale, dropout_p=dropout_p)
        else:
            y = F.scaled_dot_product_attention(
                q, k, v, attn_mask=mask, dropout_p=dropout_p, is_causal=causal, scale=self.scale
            )  # (B, H, T, D)
            att = None
        if record:
            recorder.add(self, att, q, k)  # the explicit path: q @ k^T * scale gave att's scores
        y = y.transpose(1, 2).reshape(B, T, C)  # (B, H, T, D) -> (B, T, C)
        return self.out_proj(y), att

"""Attention math and MultiHeadAttention against PyTorch's, plus the KV-cache invariant.

References: a per-element loop of softmax(q.k * scale) v, `F.scaled_dot_product_attention`,
and `torch.nn.MultiheadAttention` with copied weights (float64, atol 1e-10).
Our masks are True = may attend; `nn.MultiheadAttention`'s `attn_mask` and
`key_padding_mask` are True = may NOT attend, so they are inverted at that boundary.
"""

import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from redthread.errors import RedthreadError
from redthread.layers.attention import MultiHeadAttention, causal_mask, scaled_dot_product_attention
from redthread.layers.kv_cache import KVCache

ATOL64 = 1e-10
B, T, S, C, H = 2, 5, 7, 12, 3
D = C // H


def rand(*shape, seed=0, dtype=torch.float64):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=dtype)


def random_mask(shape, seed=0):
    """A boolean mask, True = may attend, with at least one allowed key per row."""
    m = torch.rand(shape, generator=torch.Generator().manual_seed(seed)) > 0.5
    m[..., 0] = True
    return m


def naive_attention(q, k, v, mask, scale):
    """softmax(q.k * scale) v, one scalar at a time (q (B, T, D), k (B, S, D), v (B, S, Dv))."""
    q, k, v = q.tolist(), k.tolist(), v.tolist()
    mask = None if mask is None else mask.tolist()
    y, att = [], []
    for b in range(len(q)):
        y.append([]), att.append([])
        for t in range(len(q[b])):
            scores = [sum(qd * kd for qd, kd in zip(q[b][t], k[b][s])) * scale for s in range(len(k[b]))]
            allowed = [mask is None or mask[b][t][s] for s in range(len(scores))]
            top = max(sc for sc, ok in zip(scores, allowed) if ok)
            e = [math.exp(sc - top) if ok else 0.0 for sc, ok in zip(scores, allowed)]
            w = [ei / sum(e) for ei in e]
            att[b].append(w)
            y[b].append([sum(w[s] * v[b][s][j] for s in range(len(w))) for j in range(len(v[b][0]))])
    return torch.tensor(y, dtype=torch.float64), torch.tensor(att, dtype=torch.float64)


# --- scaled_dot_product_attention -------------------------------------------------------


@pytest.mark.parametrize("masked", [False, True])
def test_scaled_dot_product_attention_matches_naive_loop(masked):
    q, k, v = rand(B, T, D, seed=1), rand(B, S, D, seed=2), rand(B, S, 3, seed=3)
    mask = random_mask((B, T, S), seed=4) if masked else None
    y, att = scaled_dot_product_attention(q, k, v, mask=mask)
    y_ref, att_ref = naive_attention(q, k, v, mask, D**-0.5)
    torch.testing.assert_close(att, att_ref, atol=1e-12, rtol=0)
    torch.testing.assert_close(y, y_ref, atol=1e-12, rtol=0)


@pytest.mark.parametrize("masked", [False, True])
@pytest.mark.parametrize("scale", [None, 1.0, 0.3])
def test_scaled_dot_product_attention_matches_torch_sdpa(masked, scale):
    q, k, v = rand(B, H, T, D, seed=1), rand(B, H, S, D, seed=2), rand(B, H, S, D, seed=3)
    mask = random_mask((B, 1, T, S), seed=4) if masked else None
    y, _ = scaled_dot_product_attention(q, k, v, mask=mask, scale=scale)
    y_ref = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=scale)
    torch.testing.assert_close(y, y_ref, atol=ATOL64, rtol=0)


def test_scaled_dot_product_attention_rows_sum_to_one():
    q, k, v = rand(B, H, T, D, seed=1) * 5, rand(B, H, S, D, seed=2), rand(B, H, S, D, seed=3)
    for mask in (None, random_mask((B, H, T, S), seed=4)):
        _, att = scaled_dot_product_attention(q, k, v, mask=mask)
        assert att.shape == (B, H, T, S)
        assert (att >= 0).all()
        torch.testing.assert_close(att.sum(-1), torch.ones(B, H, T, dtype=torch.float64), atol=1e-12, rtol=0)


def test_scaled_dot_product_attention_mask_true_means_may_attend():
    q, k, v = rand(B, H, T, D, seed=1), rand(B, H, S, D, seed=2), rand(B, H, S, D, seed=3)
    mask = random_mask((B, H, T, S), seed=4)
    assert (~mask).any() and mask.any()
    _, att = scaled_dot_product_attention(q, k, v, mask=mask)
    assert (att[~mask] == 0).all()  # exactly zero, not merely small
    assert (att[mask] > 0).all()
    # a key that no query may attend to has no influence on the output
    mask[..., -1] = False
    v2 = v.clone()
    v2[..., -1, :] = 1e6
    y, _ = scaled_dot_product_attention(q, k, v, mask=mask)
    y2, _ = scaled_dot_product_attention(q, k, v2, mask=mask)
    assert torch.equal(y, y2)


def test_scaled_dot_product_attention_scale_one_is_unscaled_scores():
    """scale=1.0 turns the 1/sqrt(D) off: it equals the default applied to q * sqrt(D)."""
    q, k, v = rand(B, H, T, D, seed=1), rand(B, H, S, D, seed=2), rand(B, H, S, D, seed=3)
    y1, att1 = scaled_dot_product_attention(q, k, v, scale=1.0)
    _, att_def = scaled_dot_product_attention(q, k, v)
    y_up, att_up = scaled_dot_product_attention(q * D**0.5, k, v)
    torch.testing.assert_close(att1, att_up, atol=1e-12, rtol=0)
    torch.testing.assert_close(y1, y_up, atol=1e-12, rtol=0)
    # the log-weights (up to a per-row constant) differ by exactly the factor sqrt(D)
    centred = lambda a: a.log() - a.log().mean(-1, keepdim=True)  # noqa: E731
    torch.testing.assert_close(centred(att1), centred(att_def) * D**0.5, atol=1e-9, rtol=0)
    assert not torch.allclose(att1, att_def, atol=1e-3)


# --- MultiHeadAttention vs nn.MultiheadAttention -----------------------------------------


def mha_pair(causal=False, bias=True, seed=0):
    """Ours and nn.MultiheadAttention in float64 with the same weights."""
    torch.manual_seed(seed)
    ours = MultiHeadAttention(C, H, causal=causal, bias=bias).double()
    ref = nn.MultiheadAttention(C, H, batch_first=True, bias=bias, dtype=torch.float64)
    with torch.no_grad():
        if bias:  # unit-scale biases, so a bias that was not copied would show
            ours.qkv_proj.bias.normal_()
            ours.out_proj.bias.normal_()
        ref.in_proj_weight.copy_(ours.qkv_proj.weight)  # same [W_q; W_k; W_v] layout
        ref.out_proj.weight.copy_(ours.out_proj.weight)
        if bias:
            ref.in_proj_bias.copy_(ours.qkv_proj.bias)
            ref.out_proj.bias.copy_(ours.out_proj.bias)
    return ours, ref


def run_ref(ref, x, context, keep, attn_allowed):
    """nn.MultiheadAttention with OUR masks (True = may attend) inverted at the boundary."""
    kv = x if context is None else context
    y, att = ref(
        x,
        kv,
        kv,
        key_padding_mask=None if keep is None else ~keep,  # torch: True = ignore this key
        attn_mask=None if attn_allowed is None else ~attn_allowed,  # torch: True = NOT allowed
        need_weights=True,
        average_attn_weights=False,
    )
    return y, att


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("padding", [False, True])
@pytest.mark.parametrize("causal", [False, True])
def test_multi_head_attention_self_matches_nn_multiheadattention(causal, padding, bias):
    ours, ref = mha_pair(causal=causal, bias=bias)
    x = rand(B, T, C, seed=5)
    keep = random_mask((B, T), seed=6) if padding else None  # (B, S) True = real key
    mask = None if keep is None else keep[:, None, None, :]  # (B, 1, 1, S)
    y, att = ours(x, mask=mask, need_weights=True)
    y_ref, att_ref = run_ref(ref, x, None, keep, causal_mask(T, T) if causal else None)
    assert att.shape == (B, H, T, T)
    torch.testing.assert_close(att, att_ref, atol=ATOL64, rtol=0)
    torch.testing.assert_close(y, y_ref, atol=ATOL64, rtol=0)
    y_fused, att_fused = ours(x, mask=mask)  # the fused path too
    assert att_fused is None
    torch.testing.assert_close(y_fused, y_ref, atol=ATOL64, rtol=0)


@pytest.mark.parametrize("padding", [False, True])
def test_multi_head_attention_cross_matches_nn_multiheadattention(padding):
    ours, ref = mha_pair()
    x, context = rand(B, T, C, seed=5), rand(B, S, C, seed=7)  # different query and key lengths
    keep = random_mask((B, S), seed=6) if padding else None
    mask = None if keep is None else keep[:, None, None, :]
    y, att = ours(x, context=context, mask=mask, need_weights=True)
    y_ref, att_ref = run_ref(ref, x, context, keep, None)
    assert y.shape == (B, T, C) and att.shape == (B, H, T, S)
    torch.testing.assert_close(att, att_ref, atol=ATOL64, rtol=0)
    torch.testing.assert_close(y, y_ref, atol=ATOL64, rtol=0)
    torch.testing.assert_close(ours(x, context=context, mask=mask)[0], y_ref, atol=ATOL64, rtol=0)


def test_multi_head_attention_causal_flag_equals_explicit_causal_mask():
    ours, _ = mha_pair(causal=True)
    plain = MultiHeadAttention(C, H, causal=False).double()
    plain.load_state_dict(ours.state_dict())
    x = rand(B, T, C, seed=5)
    for need_weights in (False, True):
        y, _ = ours(x, need_weights=need_weights)
        y_ref, _ = plain(x, mask=causal_mask(T, T), need_weights=need_weights)
        torch.testing.assert_close(y, y_ref, atol=ATOL64, rtol=0)


def test_multi_head_attention_mask_is_inverse_of_nn_multiheadattention_attn_mask():
    """Pins the convention: our True = may attend; nn.MultiheadAttention's True = may not."""
    ours, ref = mha_pair()
    x = rand(B, T, C, seed=5)
    allowed = random_mask((T, T), seed=8)
    allowed[:, -1] = False  # every row has an allowed and a forbidden key, so both conventions are defined
    y, att = ours(x, mask=allowed, need_weights=True)
    assert (att[..., ~allowed] == 0).all()
    y_inv, _ = run_ref(ref, x, None, None, allowed)  # inverted: ~allowed
    torch.testing.assert_close(y, y_inv, atol=ATOL64, rtol=0)
    y_raw, att_raw = ref(x, x, x, attn_mask=allowed, need_weights=True, average_attn_weights=False)  # not inverted
    assert (att_raw[..., allowed] == 0).all()
    assert not torch.allclose(y, y_raw, atol=1e-3)


def test_causal_mask_offsets_queries_after_cached_keys():
    m = causal_mask(2, 5)
    assert m.tolist() == [[True, True, True, True, False], [True, True, True, True, True]]
    assert torch.equal(causal_mask(4, 4), torch.ones(4, 4, dtype=torch.bool).tril())


# --- explicit path vs fused kernel --------------------------------------------------------


@pytest.mark.parametrize("masked", [False, True])
@pytest.mark.parametrize("causal", [False, True])
def test_multi_head_attention_explicit_path_matches_fused(causal, masked):
    torch.manual_seed(0)
    mha = MultiHeadAttention(C, H, causal=causal, dropout=0.0)
    x = torch.randn(B, T, C)
    mask = random_mask((B, T), seed=3)[:, None, None, :] if masked else None
    y_explicit, att = mha(x, mask=mask, need_weights=True)
    y_fused, none = mha(x, mask=mask, need_weights=False)
    assert att is not None and none is None
    torch.testing.assert_close(y_explicit, y_fused, atol=1e-5, rtol=0)
    if causal:
        assert (att.triu(diagonal=1) == 0).all()


def test_multi_head_attention_rejects_indivisible_heads():
    with pytest.raises(RedthreadError, match=r"10.*4"):
        MultiHeadAttention(10, 4)


# --- KV cache ------------------------------------------------------------------------------


@pytest.mark.parametrize("need_weights", [False, True])
@pytest.mark.parametrize("chunks", [[1] * 9, [2, 3, 1, 3], [9], [4, 5]])
def test_multi_head_attention_kv_cache_matches_full_causal(chunks, need_weights):
    ours, _ = mha_pair(causal=True)
    L = sum(chunks)
    x = rand(B, L, C, seed=9)
    y_full, _ = ours(x)
    cache = KVCache(B, H, L, D, dtype=torch.float64)
    outs, start = [], 0
    for n in chunks:
        y, att = ours(x[:, start : start + n], cache=cache, need_weights=need_weights)
        if need_weights:
            assert att.shape == (B, H, n, start + n)  # new queries see the cached prefix and themselves
        outs.append(y)
        start += n
    assert cache.length == L
    torch.testing.assert_close(torch.cat(outs, dim=1), y_full, atol=ATOL64, rtol=0)


def test_multi_head_attention_cross_kv_cache_matches_no_cache():
    ours, _ = mha_pair()
    x, context = rand(B, 6, C, seed=5), rand(B, S, C, seed=7)
    y_full, _ = ours(x, context=context)
    cache = KVCache(B, H, S, D, dtype=torch.float64)
    outs = [ours(x[:, a:b], context=context, cache=cache)[0] for a, b in [(0, 2), (2, 3), (3, 6)]]
    assert cache.length == S  # the context is projected once, on the first call
    torch.testing.assert_close(torch.cat(outs, dim=1), y_full, atol=ATOL64, rtol=0)


def test_kv_cache_update_overflow_raises():
    cache = KVCache(1, 2, 4, 3)
    k = torch.randn(1, 2, 3, 3)
    keys, values = cache.update(k, k + 1)
    assert torch.equal(keys, k) and torch.equal(values, k + 1)
    with pytest.raises(ValueError, match="overflow"):
        cache.update(k[:, :, :2], k[:, :, :2])
    assert cache.length == 3  # a failed update leaves the cache as it was
    assert torch.equal(cache.keys(), k)
    cache.update(k[:, :, :1], k[:, :, :1])  # exactly filling it is fine
    assert cache.length == 4
    cache.reset()
    assert cache.length == 0 and cache.keys().shape == (1, 2, 0, 3)

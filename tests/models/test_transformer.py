"""The Transformer models: causality, cache = recompute, generation invariants, encoder masks,
config validation, permutation equivariance without positions (C8), and a tiny overfit."""

import functools

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from redthread.errors import RedthreadError
from redthread.generate.sampler import generate
from redthread.models.likelihoods import token_nll
from redthread.models.transformer import Encoder, EncoderDecoder, TransformerConfig, TransformerLM

ATOL64 = 1e-10
FEW = settings(max_examples=12, deadline=None)
V, W = 11, 16  # vocab size, block size


def tiny_cfg(**overrides) -> TransformerConfig:
    kw = dict(vocab_size=V, block_size=W, n_layer=2, n_head=2, d_model=16, d_ff=32)
    return TransformerConfig(**{**kw, **overrides})


def randomize(model, seed=0):
    """Larger random weights than GPT-2's init, so attention is far from uniform and tokens matter."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn(p.shape, generator=g, dtype=p.dtype) * 0.3)
    return model


@functools.cache  # shared, read-only: no test trains or mutates these
def lm(seed=0, **overrides) -> TransformerLM:
    torch.manual_seed(seed)
    return randomize(TransformerLM(tiny_cfg(**overrides)), seed).double().eval()


@functools.cache
def seq2seq(seed=0, **overrides) -> EncoderDecoder:
    torch.manual_seed(seed)
    return randomize(EncoderDecoder(tiny_cfg(src_vocab_size=7, **overrides)), seed).double().eval()


def tokens(shape, seed, vocab=V):
    return torch.randint(0, vocab, shape, generator=torch.Generator().manual_seed(seed))


def change_from(idx, t, seed, vocab=V):
    """idx with every token at positions >= t replaced by a different one."""
    out = idx.clone()
    out[:, t:] = (idx[:, t:] + tokens(idx[:, t:].shape, seed, vocab - 1) + 1) % vocab
    return out


# --- causality -------------------------------------------------------------------------------


@FEW
@given(t=st.integers(1, W - 1), seed=st.integers(0, 1000))
def test_transformer_lm_future_tokens_do_not_change_past_logits(t, seed):
    model = lm()
    idx = tokens((2, W), seed)
    idx2 = change_from(idx, t, seed + 1)
    with torch.no_grad():
        a, b = model(idx), model(idx2)
    torch.testing.assert_close(a[:, :t], b[:, :t], atol=1e-12, rtol=0)
    assert not torch.allclose(a[:, t:], b[:, t:], atol=1e-6)  # the change is visible where it may be


@FEW
@given(t=st.integers(1, 9), seed=st.integers(0, 1000))
def test_encoder_decoder_future_target_tokens_do_not_change_past_logits(t, seed):
    model = seq2seq()
    src, tgt = tokens((2, 8), seed, vocab=7), tokens((2, 10), seed + 1)
    tgt2 = change_from(tgt, t, seed + 2)
    with torch.no_grad():
        a, b = model(src, tgt), model(src, tgt2)
    torch.testing.assert_close(a[:, :t], b[:, :t], atol=1e-12, rtol=0)
    assert not torch.allclose(a[:, t:], b[:, t:], atol=1e-6)


# --- KV cache and generation ---------------------------------------------------------------


@pytest.mark.parametrize("chunks", [[1] * 12, [3, 1, 4, 2, 2], [12]])
def test_transformer_lm_cache_matches_recompute(chunks):
    model = lm()
    idx = tokens((3, sum(chunks)), seed=4)
    with torch.no_grad():
        full = model(idx)
        cache = model.make_cache(3)
        parts, start = [], 0
        for n in chunks:
            parts.append(model(idx[:, start : start + n], cache=cache))
            start += n
    assert cache[0].self_attn.length == sum(chunks)
    torch.testing.assert_close(torch.cat(parts, dim=1), full, atol=ATOL64, rtol=0)


GENERATION_CASES = {
    "greedy": dict(prompt_len=4, new=8, temperature=0.0),
    "sampled": dict(prompt_len=4, new=8, temperature=0.9, top_k=6, seed=3),
    "sampled_top_p": dict(prompt_len=2, new=10, temperature=1.3, top_p=0.9, seed=11),
    "greedy_slides": dict(prompt_len=5, new=30, temperature=0.0),  # 35 tokens > block_size 16
    "sampled_slides": dict(prompt_len=5, new=30, temperature=1.0, seed=5),
    "long_prompt": dict(prompt_len=W + 5, new=12, temperature=1.0, seed=2),  # the prompt alone overflows
    "num_samples": dict(prompt_len=3, new=20, temperature=1.0, seed=9, num_samples=3),
}


@pytest.mark.parametrize("case", GENERATION_CASES)
def test_generate_with_cache_matches_without(case):
    kw = dict(GENERATION_CASES[case])
    prompt = tokens((2, kw.pop("prompt_len")), seed=7)
    new = kw.pop("new")
    model = lm()
    cached = generate(model, prompt, new, use_cache=True, **kw)
    uncached = generate(model, prompt, new, use_cache=False, **kw)
    n = kw.get("num_samples", 1)
    assert cached.shape == (2 * n, prompt.size(1) + new)
    assert torch.equal(cached[:, : prompt.size(1)], prompt.repeat_interleave(n, dim=0))
    assert torch.equal(cached, uncached)


def test_generate_num_samples_draws_different_continuations():
    model = lm()
    out = generate(model, tokens((1, 3), seed=7), 20, temperature=1.0, seed=9, num_samples=3)
    assert len({tuple(row.tolist()) for row in out}) > 1  # one shared generator, three different draws


@pytest.mark.parametrize("temperature", [1.0, 0.5, 2.0])
def test_generate_top_k_one_matches_greedy(temperature):
    model = lm()
    prompt = tokens((2, 4), seed=8)
    greedy = generate(model, prompt, 25, temperature=0.0)
    top1 = generate(model, prompt, 25, temperature=temperature, top_k=1, seed=0)
    assert torch.equal(top1, greedy)


def test_generate_greedy_matches_argmax_of_recomputed_logits():
    """Greedy decoding re-derived by hand, window rule included (sampler docstring): the context is
    the last W tokens until it overflows, then restarts from the last W // 2."""
    model = lm()
    out = generate(model, tokens((2, 4), seed=8), 30, temperature=0.0)
    start = 0
    with torch.no_grad():
        for t in range(4, out.size(1)):
            if t - start > W:
                start = t - W // 2
            assert torch.equal(model(out[:, start:t])[:, -1].argmax(-1), out[:, t]), t


# --- encoder-decoder ---------------------------------------------------------------------------


def padded_source(seed=3):
    src = tokens((2, 8), seed, vocab=7)
    keep = torch.ones(2, 8, dtype=torch.bool)
    keep[0, 5:] = False  # row 0: 5 real tokens, 3 padding
    keep[1, 2] = False  # row 1: a hole in the middle
    return src, keep


@pytest.mark.parametrize("masked", [False, True])
def test_encoder_decoder_conditioned_cache_matches_full_forward(masked):
    model = seq2seq()
    src, keep = padded_source()
    src_mask = keep if masked else None
    tgt = tokens((2, 10), seed=4)
    with torch.no_grad():
        full = model(src, tgt, src_mask=src_mask)
        cond = model.conditioned_on(src, src_mask)
        torch.testing.assert_close(cond(tgt), full, atol=ATOL64, rtol=0)
        cache = cond.make_cache(2)
        parts = [cond(tgt[:, a:b], cache=cache) for a, b in [(0, 3), (3, 4), (4, 9), (9, 10)]]
    torch.testing.assert_close(torch.cat(parts, dim=1), full, atol=ATOL64, rtol=0)


@pytest.mark.parametrize("kw", [dict(temperature=0.0), dict(temperature=1.0, seed=1, num_samples=3)])
def test_encoder_decoder_generate_with_cache_matches_without(kw):
    model = seq2seq()
    src, keep = padded_source()
    cond = model.conditioned_on(src, keep)
    bos = torch.zeros(2, 1, dtype=torch.long)
    cached = generate(cond, bos, 20, use_cache=True, **kw)  # 21 tokens > block_size: the window slides
    assert torch.equal(cached, generate(cond, bos, 20, use_cache=False, **kw))


def test_encoder_decoder_generate_num_samples_keeps_each_source_with_its_rows():
    model = seq2seq()
    src, keep = padded_source()
    bos = torch.zeros(1, 1, dtype=torch.long)
    both = generate(model.conditioned_on(src, keep), bos.repeat(2, 1), 10, temperature=0.0, num_samples=3)
    for b in range(2):
        alone = generate(model.conditioned_on(src[b : b + 1], keep[b : b + 1]), bos, 10, temperature=0.0)
        assert torch.equal(both[3 * b : 3 * b + 3], alone.expand(3, -1)), b
    assert not torch.equal(both[0], both[3])  # the two sources lead to different outputs


def test_encoder_padding_mask_ignores_padded_tokens():
    torch.manual_seed(0)
    encoder = randomize(Encoder(tiny_cfg(), vocab_size=7)).double().eval()
    src, keep = padded_source()
    src2 = src.clone()
    src2[~keep] = (src[~keep] + 1) % 7  # change every padded token
    with torch.no_grad():
        out, out2 = encoder(src, keep), encoder(src2, keep)
        unmasked, unmasked2 = encoder(src), encoder(src2)
    torch.testing.assert_close(out[keep], out2[keep], atol=1e-12, rtol=0)
    assert not torch.allclose(unmasked[keep], unmasked2[keep], atol=1e-6)  # without the mask they leak


def test_encoder_decoder_padding_mask_ignores_padded_source_tokens():
    model = seq2seq()
    src, keep = padded_source()
    src2 = src.clone()
    src2[~keep] = (src[~keep] + 3) % 7
    tgt = tokens((2, 6), seed=4)
    with torch.no_grad():
        torch.testing.assert_close(model(src, tgt, keep), model(src2, tgt, keep), atol=1e-12, rtol=0)


def test_decoder_without_context_raises():
    model = seq2seq().decoder
    with pytest.raises(RedthreadError, match="pass context"):
        model(tokens((1, 6), seed=1))


# --- config validation -----------------------------------------------------------------------


def test_transformer_config_indivisible_heads_names_both_values():
    with pytest.raises(RedthreadError) as err:
        TransformerConfig(d_model=130, n_head=4)
    msg = str(err.value)
    assert "130" in msg and "4" in msg and "\n" not in msg


@pytest.mark.parametrize(
    "field,value",
    [
        ("pos", "alibi"),
        ("norm", "middle"),
        ("activation", "swish"),
        ("dropout", 1.0),
        ("dropout", -0.1),
        ("dropout", float("nan")),
        ("n_layer", 0),
        ("vocab_size", 10.5),
        ("block_size", True),
        ("d_ff", 0),
    ],
)
def test_transformer_config_rejects_bad_value_naming_it(field, value):
    with pytest.raises(RedthreadError) as err:
        TransformerConfig(**{field: value})
    msg = str(err.value)
    assert field in msg and str(value) in msg and "\n" not in msg


@pytest.mark.parametrize(
    "field,value",
    [("dropout", "0.1"), ("d_ff", True), ("n_layer", 2.0)],
)
def test_transformer_config_rejects_non_numbers(field, value):
    with pytest.raises(RedthreadError, match=field):
        TransformerConfig(**{field: value})


def test_transformer_config_from_dict_round_trips_and_rejects_unknown_keys():
    cfg = tiny_cfg(norm="post", pos="learned")
    assert TransformerConfig.from_dict(cfg.to_dict()) == cfg
    with pytest.raises(RedthreadError, match="n_heads"):
        TransformerConfig.from_dict({**cfg.to_dict(), "n_heads": 2})


# --- permutation equivariance (C8) ---------------------------------------------------------------


@pytest.mark.parametrize("norm", ["pre", "post"])
def test_encoder_without_positions_is_permutation_equivariant(norm):
    torch.manual_seed(0)
    encoder = randomize(Encoder(tiny_cfg(pos="none", norm=norm))).eval()
    src = tokens((2, 12), seed=5)
    perm = torch.randperm(12, generator=torch.Generator().manual_seed(6))
    with torch.no_grad():
        out, out_perm = encoder(src), encoder(src[:, perm])
    torch.testing.assert_close(out_perm, out[:, perm], atol=1e-5, rtol=0)


def test_encoder_with_sinusoidal_positions_is_not_permutation_equivariant():
    torch.manual_seed(0)
    encoder = randomize(Encoder(tiny_cfg(pos="sinusoidal"))).eval()
    src = tokens((2, 12), seed=5)
    perm = torch.randperm(12, generator=torch.Generator().manual_seed(6))
    with torch.no_grad():
        out, out_perm = encoder(src), encoder(src[:, perm])
    assert (out_perm - out[:, perm]).abs().max() > 1e-2


# --- learning ------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [0, 1])
def test_transformer_lm_overfits_a_tiny_corpus(seed):
    torch.manual_seed(seed)
    model = TransformerLM(TransformerConfig(vocab_size=10, block_size=64, n_layer=2, n_head=2, d_model=32))
    seq = tokens((1, 64), seed=100 + seed, vocab=10)  # a fixed random sequence: nothing to learn but memorise
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    first = token_nll(model(seq[:, :-1]), seq[:, 1:]).item()
    for _ in range(300):
        loss = token_nll(model(seq[:, :-1]), seq[:, 1:])
        opt.zero_grad()
        loss.backward()
        opt.step()
    with torch.no_grad():
        final = token_nll(model(seq[:, :-1]), seq[:, 1:]).item()
    assert first > 2.0  # about log(10) at init
    assert final < 0.05

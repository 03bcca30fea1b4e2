"""The neuron view's numbers: the recorded queries and keys are the ones the scores use.

For a redthread TransformerLM (sinusoidal and rotary positions) and for tiny random-init Hugging Face
BERT and GPT-2 models converted by redthread's own interop (no download): q and k equal the
projections computed apart from the model (rotated by hand for rope; by `transformers` for BERT
and GPT-2), q . k * scale equals the pre-softmax score of the explicit path, and the softmax over
each row (causal rows masked) equals the recorded attention weight. Tolerance: 1e-5 max abs in
float32. Then the payload's `vectors` (the explorer) and the one-line errors for bad input.
"""

import math
from unittest import mock

import numpy as np
import pytest
import torch
import transformers

import redthread as rt
from redthread.data.tokenizers import CharTokenizer
from redthread.layers import attention as attention_module
from redthread.viz.explorer import VECTOR_DECIMALS, payload_tab, render_explorer
from redthread.viz.inspector import Inspector, char_reader
from redthread.viz.record import record_attention
from tests.interop.test_huggingface import hf_bert, hf_gpt2, tokens

TOL = 1e-5
transformers.logging.set_verbosity_error()


def causal_softmax(scores):
    T, S = scores.shape[-2:]
    allowed = torch.ones(T, S, dtype=torch.bool).tril(S - T)  # (T, S): query t sees keys up to t + S - T
    return scores.masked_fill(~allowed, float("-inf")).softmax(-1)


def rotate(x):
    """Rotary positions by hand (Su et al. 2021, eq. 34): the pairs (x_i, x_{i + D/2}) of position p
    turn by the angle p * 10000^(-2i / D)."""
    T, D = x.shape[-2:]
    angle = torch.arange(T, dtype=torch.float64)[:, None] * 10000.0 ** (-torch.arange(0, D, 2, dtype=torch.float64) / D)
    cos, sin = angle.cos().float(), angle.sin().float()  # (T, D/2)
    a, b = x[..., : D // 2], x[..., D // 2 :]
    return torch.cat([a * cos - b * sin, b * cos + a * sin], -1)


def tiny_lm(pos):
    torch.manual_seed(0)
    cfg = rt.TransformerConfig(vocab_size=11, block_size=16, n_layer=2, n_head=2, d_model=16, pos=pos)
    model = rt.TransformerLM(cfg).eval()
    with torch.no_grad():  # larger weights than the init, so the weights are far from uniform
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.3)
    return model


@pytest.mark.parametrize("pos", ["sinusoidal", "rope"])
def test_recorded_q_and_k_give_the_scores_and_the_weights_of_a_transformer_lm(pos):
    model, idx = tiny_lm(pos), torch.randint(11, (2, 9), generator=torch.Generator().manual_seed(1))
    inputs, explicit = [], []
    hooks = [b.self_attn.register_forward_pre_hook(lambda m, args: inputs.append(args[0])) for b in model.blocks]

    def spy(q, k, v, mask=None, scale=None, dropout_p=0.0):  # what the explicit path scores: q @ k^T * scale
        explicit.append((q @ k.transpose(-2, -1)) * (q.size(-1) ** -0.5 if scale is None else scale))
        return real(q, k, v, mask, scale, dropout_p)

    real = attention_module.scaled_dot_product_attention
    try:
        with mock.patch.object(attention_module, "scaled_dot_product_attention", spy), torch.no_grad():
            with record_attention(model, vectors=True) as maps:
                model(idx)
    finally:
        for h in hooks:
            h.remove()
    C, H, D = 16, 2, 8
    for layer, block in enumerate(model.blocks):
        qk = maps.query_key("decoder", layer)
        assert qk.q.shape == (2, H, 9, D) and qk.k.shape == (2, H, 9, D) and qk.scale == pytest.approx(D**-0.5)
        with torch.no_grad():  # the projections, apart from the model: [W_q; W_k; W_v] x + b, split into heads
            w, b = block.self_attn.qkv_proj.weight, block.self_attn.qkv_proj.bias
            q = (inputs[layer] @ w[:C].T + b[:C]).view(2, 9, H, D).transpose(1, 2)  # (B, H, T, D)
            k = (inputs[layer] @ w[C : 2 * C].T + b[C : 2 * C]).view(2, 9, H, D).transpose(1, 2)
        if pos == "rope":
            unrotated = causal_softmax((q @ k.transpose(-2, -1)) * D**-0.5)
            assert (unrotated - maps.decoder[layer]).abs().max() > 1e-3  # the rotation matters here
            q, k = rotate(q), rotate(k)
        torch.testing.assert_close(qk.q, q, atol=TOL, rtol=0)
        torch.testing.assert_close(qk.k, k, atol=TOL, rtol=0)
        torch.testing.assert_close(qk.scores(), explicit[layer], atol=TOL, rtol=0)  # the pre-softmax scores
        torch.testing.assert_close(causal_softmax(qk.scores()), maps.decoder[layer], atol=TOL, rtol=0)


def test_cached_generation_records_the_same_q_and_k_as_one_full_pass():
    model, prompt = tiny_lm("rope"), torch.randint(11, (1, 4), generator=torch.Generator().manual_seed(2))
    with record_attention(model, vectors=-1) as stepped:
        out = rt.generate(model, prompt, 5, temperature=0.0)
    with record_attention(model, vectors=-1) as full:
        model(out[:, :-1])
    a, b = stepped.query_key("decoder", 1), full.query_key("decoder", 1)
    torch.testing.assert_close(a.q, b.q, atol=TOL, rtol=0)
    torch.testing.assert_close(a.k, b.k, atol=TOL, rtol=0)
    assert list(full.vectors) == [("decoder", 1)]  # -1: the last layer only


def hf_heads(x, H):
    """(B, T, H * D) -> (B, H, T, D), as transformers splits heads."""
    B, T, C = x.shape
    return x.view(B, T, H, C // H).transpose(1, 2)


def run_both(hf, ours, idx, hooks):
    """transformers' outputs with its attentions, and our recording with every layer's q and k; then the hooks go."""
    try:
        with torch.no_grad():
            ref = hf(idx, output_attentions=True)
            with record_attention(ours, vectors=True) as maps:
                ours(idx)
    finally:
        for h in hooks:
            h.remove()
    return ref, maps


def test_recorded_q_and_k_of_a_converted_bert_match_transformers(tmp_path):
    hf = hf_bert(tmp_path)
    ours = rt.from_pretrained(tmp_path)
    idx, H = tokens((2, 12), seed=1), 4
    seen = {}
    hooks = [m.register_forward_hook(lambda mod, i, out, key=(n, name): seen.__setitem__(key, out))
             for n, layer in enumerate(hf.encoder.layer)
             for name, m in (("q", layer.attention.self.query), ("k", layer.attention.self.key))]
    ref, maps = run_both(hf, ours, idx, hooks)
    for layer in range(2):
        qk = maps.query_key("encoder", layer)
        torch.testing.assert_close(qk.q, hf_heads(seen[(layer, "q")], H), atol=TOL, rtol=0)
        torch.testing.assert_close(qk.k, hf_heads(seen[(layer, "k")], H), atol=TOL, rtol=0)
        torch.testing.assert_close(qk.scores().softmax(-1), ref.attentions[layer], atol=TOL, rtol=0)


def test_recorded_q_and_k_of_a_converted_gpt2_match_transformers(tmp_path):
    hf = hf_gpt2(tmp_path)
    ours = rt.from_pretrained(tmp_path)
    idx, H = tokens((2, 12), seed=5), 4
    seen = []
    hooks = [block.attn.c_attn.register_forward_hook(lambda mod, i, out: seen.append(out)) for block in hf.transformer.h]
    ref, maps = run_both(hf, ours, idx, hooks)
    for layer in range(2):
        q, k, _ = seen[layer].split(32, dim=-1)  # c_attn: [q; k; v], (B, T, 3C)
        qk = maps.query_key("decoder", layer)
        torch.testing.assert_close(qk.q, hf_heads(q, H), atol=TOL, rtol=0)
        torch.testing.assert_close(qk.k, hf_heads(k, H), atol=TOL, rtol=0)
        torch.testing.assert_close(causal_softmax(qk.scores()), ref.attentions[layer], atol=TOL, rtol=0)


def test_an_encoder_decoder_records_q_and_k_of_every_kind():
    torch.manual_seed(0)
    model = rt.EncoderDecoder(rt.TransformerConfig(vocab_size=11, block_size=16, n_layer=2, n_head=2, d_model=16)).eval()
    src, tgt = torch.randint(11, (1, 7)), torch.randint(11, (1, 5))
    with torch.no_grad(), record_attention(model, vectors=0) as maps:
        model(src, tgt)
    assert sorted(maps.vectors) == [("cross", 0), ("decoder", 0), ("encoder", 0)]
    cross = maps.query_key("cross", 0)
    assert cross.q.shape == (1, 2, 5, 8) and cross.k.shape == (1, 2, 7, 8)
    torch.testing.assert_close(cross.scores().softmax(-1), maps.cross[0], atol=TOL, rtol=0)
    torch.testing.assert_close(causal_softmax(maps.query_key("decoder", 0).scores()), maps.decoder[0], atol=TOL, rtol=0)


def test_vectors_are_kept_only_when_asked_for():
    model = tiny_lm("sinusoidal")
    with torch.no_grad(), record_attention(model) as maps:
        model(torch.zeros(1, 3, dtype=torch.long))
    assert maps.vectors == {}
    with pytest.raises(rt.RedthreadError, match="no query and key vectors were recorded for decoder layer 0"):
        maps.query_key("decoder", 0)


@pytest.mark.parametrize("vectors, kind, message", [
    (2, ValueError, "layer 2 for the query and key vectors is out of range: the model has 2 decoder attention layers"),
    (-3, ValueError, "layer -3 for the query and key vectors is out of range"),
    ("last", TypeError, "vectors must be True, False or a layer number"),
])
def test_an_out_of_range_layer_is_a_one_line_error(vectors, kind, message):
    with pytest.raises(kind, match=message) as info, record_attention(tiny_lm("sinusoidal"), vectors=vectors):
        pass
    assert isinstance(info.value, rt.RedthreadError) and "\n" not in str(info.value)


# --- the payload -----------------------------------------------------------------------------


def inspector():
    tok = CharTokenizer.from_text("the cat sat on the mat")
    torch.manual_seed(0)
    cfg = rt.TransformerConfig(vocab_size=tok.vocab_size, block_size=32, n_layer=3, n_head=2, d_model=16, pos="rope")
    return Inspector("tiny", rt.TransformerLM(cfg).eval(), "lm", "tiny", 32, char_reader(tok), tok.decode)


def page_weights(tab):
    """The softmax the page computes, from the payload's rounded q and k: (H, T, S)."""
    v = tab["vectors"]
    scores = torch.tensor(v["q"], dtype=torch.float64) @ torch.tensor(v["k"], dtype=torch.float64).transpose(-2, -1)
    return causal_softmax(scores * v["scale"])


def test_the_payload_carries_one_layer_and_its_softmax_is_the_weight():
    ins = inspector()
    tab = ins.attention_payload("the cat sat")["tabs"][0]
    v = tab["vectors"]
    assert v["layer"] == 2 and v["scale"] == pytest.approx(8**-0.5)  # the last of 3 layers, 1/sqrt(D)
    assert np.asarray(v["q"]).shape == (2, 11, 8) and np.asarray(v["k"]).shape == (2, 11, 8)
    assert all(round(x, VECTOR_DECIMALS) == x for x in np.asarray(v["q"]).ravel())
    worst = (page_weights(tab) - torch.tensor(tab["weights"][2], dtype=torch.float64)).abs().max().item()
    assert worst < 1e-3, worst  # both rounded: the weights to 1e-4, q and k to 1e-4
    assert ins.attention_payload("the cat sat", neuron_layer=0)["tabs"][0]["vectors"]["layer"] == 0
    assert "vectors" not in ins.attention_payload("the cat sat", neuron_layer=None)["tabs"][0]


@pytest.mark.parametrize("layer, kind, message", [
    (3, ValueError, "layer 3 for the query and key vectors is out of range: the model has 3 decoder"),
    (True, TypeError, "neuron_layer must be a layer number"),
    (1.0, TypeError, "neuron_layer must be a layer number"),
])
def test_the_inspector_refuses_a_bad_neuron_layer(layer, kind, message):
    with pytest.raises(kind, match=message):
        inspector().attention_payload("the cat", neuron_layer=layer)


def vectors_tab(**change):
    rng = np.random.default_rng(0)
    w = rng.random((2, 3, 4, 5))
    w /= w.sum(-1, keepdims=True)
    vectors = {"layer": 1, "scale": 0.5, "q": rng.normal(size=(3, 4, 4)), "k": rng.normal(size=(3, 5, 4)), **change}
    return {"kind": "cross", "queries": list("abcd"), "keys": list("vwxyz"), "weights": w.tolist(),
            "vectors": {k: v.tolist() if isinstance(v, np.ndarray) else v for k, v in vectors.items()}}


@pytest.mark.parametrize("change, message", [
    ({"layer": 2}, "layer 2 is out of range: the tab has 2 layers"),
    ({"layer": "1"}, "layer must be an integer"),
    ({"scale": 0}, "scale must be a finite number > 0"),
    ({"scale": math.inf}, "scale must be a finite number > 0"),
    ({"q": np.zeros((2, 4, 4))}, r"'q' has shape \(2, 4, 4\); expected \(H=3, T=4, D\)"),
    ({"k": np.zeros((3, 4, 4))}, r"'k' has shape \(3, 4, 4\); expected \(H=3, S=5, D\)"),
    ({"k": np.zeros((3, 5, 3))}, "same head dimension D, got 4 and 3"),
    ({"q": np.full((3, 4, 4), np.nan)}, "'q' must be finite numbers"),
    ({"q": [[["a"] * 4] * 4] * 3}, "'q' must hold numbers"),
    ({"extra": 1}, "unknown key"),
])
def test_the_explorer_refuses_bad_vectors(change, message):
    page = {"title": "t", "model": "m", "tabs": [vectors_tab(**change)]}
    with pytest.raises(rt.RedthreadError, match=message) as info:
        render_explorer(page)
    assert "\n" not in str(info.value)


def test_payload_tab_takes_vectors_as_tensors():
    tab = vectors_tab()
    v = {k: torch.tensor(x) if isinstance(x, list) else x for k, x in tab["vectors"].items()}
    clean = payload_tab("cross", tab["queries"], tab["keys"], torch.tensor(tab["weights"]), vectors=v)
    assert clean["vectors"]["layer"] == 1 and np.asarray(clean["vectors"]["k"]).shape == (3, 5, 4)
    assert '"vectors":{"layer":1,"scale":0.5' in render_explorer({"title": "t", "model": "m", "tabs": [clean]})

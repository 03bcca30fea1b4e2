"""The options the speedrun records use, each a TransformerConfig field: QK-norm, ReLU squared,
logit soft-capping, dropout on the attention weights apart from the residual branches. Each computes
what its formula says, the explicit attention path still equals the fused one, and GPT-2 export
refuses what GPT-2 cannot hold."""

import json
import math

import pytest
import torch
import torch.nn.functional as F

from redthread.errors import InvalidValue
from redthread.interop.huggingface import export_gpt2, gpt2_config
from redthread.layers.attention import MultiHeadAttention
from redthread.layers.feedforward import FeedForward
from redthread.models.transformer import TransformerConfig, TransformerLM
from redthread.viz.record import record_attention

SMALL = dict(vocab_size=11, block_size=16, n_layer=2, n_head=2, d_model=16)


def test_qk_norm_gives_every_head_query_and_key_unit_rms_and_the_fused_path_agrees():
    torch.manual_seed(0)
    mha = MultiHeadAttention(16, 2, causal=True, qk_norm=True, rotary=True, block_size=16).double()
    with torch.no_grad():
        mha.qkv_proj.weight.mul_(20)  # large projections: without the norm, scores would be huge
    x = torch.randn(2, 7, 16, dtype=torch.float64)
    fused, _ = mha(x)
    explicit, att = mha(x, need_weights=True)
    torch.testing.assert_close(fused, explicit)
    model = TransformerLM(TransformerConfig(**SMALL, qk_norm=True, pos="none"))
    with record_attention(model, vectors=0) as maps:
        model(torch.randint(11, (1, 9)))
    q, k = maps.query_key("decoder", 0).q, maps.query_key("decoder", 0).k
    for v in (q, k):  # (B, H, T, D)
        torch.testing.assert_close(v.pow(2).mean(-1), torch.ones(v.shape[:-1]), atol=1e-3, rtol=0)  # up to rms_norm's eps


def test_qk_norm_adds_no_parameters_and_normalises_queries_and_keys_only():
    torch.manual_seed(0)
    plain = MultiHeadAttention(16, 2, causal=True)
    normed = MultiHeadAttention(16, 2, causal=True, qk_norm=True)
    normed.load_state_dict(plain.state_dict())  # no new parameters
    x = torch.randn(1, 5, 16)
    q, k, v = plain._heads(plain.qkv_proj(x), 3)  # (B, H, T, D) each
    rms = lambda t: F.rms_norm(t, (8,))  # noqa: E731
    want = F.scaled_dot_product_attention(rms(q), rms(k), v, is_causal=True)  # values untouched
    torch.testing.assert_close(normed(x)[0], plain.out_proj(want.transpose(1, 2).reshape(1, 5, 16)))
    assert not torch.allclose(plain(x)[0], normed(x)[0])


def test_qk_norm_in_cross_attention_explicit_and_fused_agree():
    torch.manual_seed(0)
    mha = MultiHeadAttention(16, 2, qk_norm=True).double()
    x, context = torch.randn(2, 3, 16, dtype=torch.float64), torch.randn(2, 6, 16, dtype=torch.float64)
    fused, _ = mha(x, context=context)
    explicit, _ = mha(x, context=context, need_weights=True)
    torch.testing.assert_close(fused, explicit)


def test_relu2_is_relu_squared():
    torch.manual_seed(0)
    ffn = FeedForward(8, 32, activation="relu2")
    x = torch.randn(3, 8)
    torch.testing.assert_close(ffn(x), ffn.fc_out(F.relu(ffn.fc_in(x)) ** 2))


def test_logit_softcap_squashes_the_logits_within_the_cap():
    torch.manual_seed(0)
    plain = TransformerLM(TransformerConfig(**SMALL))
    capped = TransformerLM(TransformerConfig(**SMALL, logit_softcap=0.5))
    capped.load_state_dict(plain.state_dict())
    idx = torch.randint(11, (2, 10))
    logits = capped(idx)
    assert logits.abs().max() < 0.5
    torch.testing.assert_close(logits, 0.5 * torch.tanh(plain(idx) / 0.5))


@pytest.mark.parametrize("option", [dict(qk_norm=True), dict(logit_softcap=30.0), dict(activation="relu2")])
def test_gpt2_export_refuses_what_gpt2_cannot_hold(option, tmp_path):
    model = TransformerLM(TransformerConfig(**SMALL, **option))
    with pytest.raises(InvalidValue, match="cannot export") as e:
        export_gpt2(model, tmp_path / "out")
    assert "\n" not in str(e.value) and not (tmp_path / "out").exists()


@pytest.mark.parametrize("bad", [dict(logit_softcap=0), dict(logit_softcap=-1.0), dict(logit_softcap=math.inf),
                                 dict(logit_softcap=True), dict(qk_norm="yes"), dict(activation="swish")])
def test_bad_option_values_are_one_line_errors(bad):
    with pytest.raises(InvalidValue) as e:
        TransformerConfig(**SMALL, **bad)
    assert next(iter(bad)) in str(e.value) and "\n" not in str(e.value)


def test_a_config_saved_before_these_options_loads_with_them_off():
    saved = TransformerConfig(**SMALL).to_dict()
    for name in ("qk_norm", "logit_softcap", "attn_dropout"):
        saved.pop(name)
    cfg = TransformerConfig.from_dict(saved)
    assert cfg.qk_norm is False and cfg.logit_softcap is None and cfg.attn_dropout is None


def dropout_rates(model: torch.nn.Module) -> tuple[set, set]:
    """(the attention layers' dropout on their weights, the residual branches' nn.Dropout rates)."""
    attention = {m.dropout for m in model.modules() if isinstance(m, MultiHeadAttention)}
    residual = {m.p for name, m in model.named_modules() if isinstance(m, torch.nn.Dropout) and name.endswith(".drop")}
    return attention, residual


def test_attn_dropout_sets_the_attention_weights_rate_alone_and_none_means_dropout():
    assert dropout_rates(TransformerLM(TransformerConfig(**SMALL, dropout=0.1))) == ({0.1}, {0.1})
    assert dropout_rates(TransformerLM(TransformerConfig(**SMALL, dropout=0.1, attn_dropout=0.0))) == ({0.0}, {0.1})
    assert dropout_rates(TransformerLM(TransformerConfig(**SMALL, dropout=0.0, attn_dropout=0.2))) == ({0.2}, {0.0})


@pytest.mark.parametrize("attn_dropout", [0.0, None])
def test_in_training_only_the_attention_rate_decides_whether_the_weights_are_dropped(attn_dropout):
    torch.manual_seed(0)
    model = TransformerLM(TransformerConfig(**SMALL, dropout=0.5, attn_dropout=attn_dropout, pos="rope")).train()
    x = torch.randint(11, (2, 9))
    with record_attention(model) as maps:
        a = model(x)
    assert not torch.allclose(a, model(x))  # the residual branches drop at random either way
    rows = torch.stack([w.sum(-1) for w in maps.decoder])  # (L, B, H, T): each a softmax's sum, unless dropped
    assert torch.allclose(rows, torch.ones_like(rows)) == (attn_dropout == 0.0)


def test_gpt2_export_and_import_keep_attention_dropout_apart(tmp_path):
    model = TransformerLM(TransformerConfig(**SMALL, pos="learned", dropout=0.1, attn_dropout=0.0))
    export_gpt2(model, tmp_path / "out")
    hf = json.loads((tmp_path / "out" / "config.json").read_text())
    assert (hf["resid_pdrop"], hf["attn_pdrop"]) == (0.1, 0.0)
    assert (gpt2_config(hf).dropout, gpt2_config(hf).attn_dropout) == (0.1, 0.0)
    assert gpt2_config({**hf, "attn_pdrop": 0.1}).attn_dropout is None

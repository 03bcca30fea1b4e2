"""rt.record_attention: the weights of every layer, by kind, equal to the explicit computation."""

from unittest import mock

import pytest
import torch

import redthread as rt
from redthread.layers import attention as attention_module


def tiny(**kw):
    torch.manual_seed(0)
    cfg = rt.TransformerConfig(vocab_size=11, block_size=16, n_layer=2, n_head=2, d_model=16, **kw)
    return cfg


def test_decoder_maps_are_causal_distributions_equal_to_need_weights():
    model = rt.TransformerLM(tiny()).eval()
    idx = torch.randint(11, (3, 9))
    with rt.record_attention(model) as maps:
        logits = model(idx)
    assert maps.kinds == ["decoder"] and len(maps.decoder) == 2
    att = maps.decoder[1]
    assert att.shape == (3, 2, 9, 9)
    torch.testing.assert_close(att.sum(-1), torch.ones(3, 2, 9))
    assert torch.all(att.triu(1) == 0)  # causal: no weight on the future
    # the recorded run gives the same logits as an unrecorded one
    torch.testing.assert_close(logits, model(idx), atol=1e-5, rtol=0)
    # layer 0's weights equal what the module returns when asked directly
    x = model.embed(idx)
    _, direct = model.blocks[0].self_attn(model.blocks[0].self_attn_res.normed_input(x), need_weights=True)
    torch.testing.assert_close(maps.decoder[0], direct)
    assert maps.stacked("decoder").shape == (2, 3, 2, 9, 9)


def test_encoder_decoder_records_three_kinds_with_padding_mask():
    model = rt.EncoderDecoder(tiny()).eval()
    src, tgt = torch.randint(11, (2, 7)), torch.randint(11, (2, 5))
    src_mask = torch.ones(2, 7, dtype=torch.bool)
    src_mask[1, 4:] = False
    with rt.record_attention(model) as maps:
        model(src, tgt, src_mask)
    assert maps.kinds == ["encoder", "decoder", "cross"]
    assert maps.encoder[0].shape == (2, 2, 7, 7)
    assert maps.decoder[1].shape == (2, 2, 5, 5)
    assert maps.cross[1].shape == (2, 2, 5, 7)
    assert torch.all(maps.cross[0][1, :, :, 4:] == 0)  # padded source positions get no weight
    assert torch.all(maps.encoder[1][1, :, :, 4:] == 0)


def test_cached_generation_records_the_same_map_as_one_full_pass():
    model = rt.TransformerLM(tiny(pos="rope")).eval()
    prompt = torch.randint(11, (2, 4))
    with rt.record_attention(model) as stepped:
        out = rt.generate(model, prompt, 6, temperature=0.0)
    with rt.record_attention(model) as full:
        model(out[:, :-1])  # the last token was sampled, never fed back
    for a, b in zip(stepped.decoder, full.decoder):
        torch.testing.assert_close(a, b, atol=1e-6, rtol=0)


def test_no_recording_uses_the_fused_kernel_and_keeps_no_state():
    model = rt.TransformerLM(tiny()).eval()
    idx = torch.randint(11, (1, 6))
    with mock.patch.object(attention_module, "scaled_dot_product_attention", wraps=attention_module.scaled_dot_product_attention) as explicit:
        model(idx)
        assert explicit.call_count == 0  # not recording: the fused kernel only
        with rt.record_attention(model):
            model(idx)
        assert explicit.call_count == 2  # recording: the explicit path, once per layer
        model(idx)
        assert explicit.call_count == 2  # and back to the fused kernel afterwards
    before = {k: v.clone() for k, v in model.state_dict().items()}
    assert set(before) == set(model.state_dict())  # no buffer of weights left on the model
    assert not any("att" in name for name, _ in model.named_buffers())


def test_only_the_recorded_model_is_recorded_and_recordings_do_not_nest():
    a, b = rt.TransformerLM(tiny()).eval(), rt.TransformerLM(tiny()).eval()
    idx = torch.randint(11, (1, 5))
    with rt.record_attention(a) as maps:
        b(idx)
        a(idx)
        with pytest.raises(rt.RedthreadError, match="do not nest"), rt.record_attention(b):
            pass
    assert len(maps.decoder) == 2 and maps.decoder[0].shape == (1, 2, 5, 5)


def test_model_without_attention_and_unknown_kind_are_one_line_errors():
    with pytest.raises(rt.RedthreadError, match="no attention layers"), rt.record_attention(rt.build_model("bigram", vocab_size=5)):
        pass
    model = rt.TransformerLM(tiny()).eval()
    with rt.record_attention(model) as maps:
        model(torch.zeros(1, 3, dtype=torch.long))
    with pytest.raises(rt.RedthreadError, match="unknown attention kind"):
        maps["self"]
    with pytest.raises(rt.RedthreadError, match="no cross attention"):
        maps.stacked("cross")

"""Encoder/decoder blocks against `nn.TransformerEncoderLayer` / `nn.TransformerDecoderLayer`
with copied weights (float64, atol 1e-10), and the sinusoidal table against its formula."""

import math

import pytest
import torch
from torch import nn

from redthread.errors import RedthreadError
from redthread.layers.attention import causal_mask
from redthread.layers.blocks import BlockConfig, DecoderBlock, EncoderBlock, Residual
from redthread.layers.positional import sinusoidal_table

ATOL64 = 1e-10
B, T, S, C, H, F = 2, 6, 5, 16, 4, 24


def randomize(module, seed):
    """Move every parameter off its default init (LayerNorm ones/zeros would hide a swapped norm)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.add_(torch.randn(p.shape, generator=g, dtype=p.dtype) * 0.3)


def copy_attention(ref_attn, ours_attn):
    ref_attn.in_proj_weight.copy_(ours_attn.qkv_proj.weight)
    ref_attn.in_proj_bias.copy_(ours_attn.qkv_proj.bias)
    ref_attn.out_proj.weight.copy_(ours_attn.out_proj.weight)
    ref_attn.out_proj.bias.copy_(ours_attn.out_proj.bias)


def copy_norm(ref_norm, ours_norm):
    ref_norm.weight.copy_(ours_norm.weight)
    ref_norm.bias.copy_(ours_norm.bias)


def copy_ffn(ref, ours_ffn):
    ref.linear1.weight.copy_(ours_ffn.fc_in.weight)
    ref.linear1.bias.copy_(ours_ffn.fc_in.bias)
    ref.linear2.weight.copy_(ours_ffn.fc_out.weight)
    ref.linear2.bias.copy_(ours_ffn.fc_out.bias)


@pytest.mark.parametrize("activation", ["gelu", "relu"])
@pytest.mark.parametrize("padding", [False, True])
@pytest.mark.parametrize("norm", ["pre", "post"])
def test_encoder_block_matches_nn_transformer_encoder_layer(norm, padding, activation):
    torch.manual_seed(0)
    ours = EncoderBlock(BlockConfig(C, H, F, dropout=0.0, norm=norm, activation=activation)).double()
    randomize(ours, seed=1)
    ref = nn.TransformerEncoderLayer(
        C, H, F, dropout=0.0, activation=activation, batch_first=True, norm_first=norm == "pre", dtype=torch.float64
    )
    with torch.no_grad():
        copy_attention(ref.self_attn, ours.self_attn)
        copy_ffn(ref, ours.ffn)
        copy_norm(ref.norm1, ours.self_attn_res.norm)
        copy_norm(ref.norm2, ours.ffn_res.norm)
    x = torch.randn(B, S, C, dtype=torch.float64)
    keep = torch.ones(B, S, dtype=torch.bool)
    if padding:
        keep[0, -2:] = False  # the last two tokens of the first row are padding
    # train mode (dropout 0) keeps PyTorch on its reference path rather than the fused fast path
    y = ours(x, mask=keep[:, None, None, :] if padding else None)  # ours: True = real token
    y_ref = ref(x, src_key_padding_mask=~keep if padding else None)  # torch: True = padding
    torch.testing.assert_close(y, y_ref, atol=ATOL64, rtol=0)


@pytest.mark.parametrize("norm", ["pre", "post"])
def test_decoder_block_matches_nn_transformer_decoder_layer(norm):
    torch.manual_seed(0)
    ours = DecoderBlock(BlockConfig(C, H, F, dropout=0.0, norm=norm, activation="gelu"), cross=True).double()
    randomize(ours, seed=2)
    ref = nn.TransformerDecoderLayer(
        C, H, F, dropout=0.0, activation="gelu", batch_first=True, norm_first=norm == "pre", dtype=torch.float64
    )
    with torch.no_grad():
        copy_attention(ref.self_attn, ours.self_attn)
        copy_attention(ref.multihead_attn, ours.cross_attn)
        copy_ffn(ref, ours.ffn)
        copy_norm(ref.norm1, ours.self_attn_res.norm)
        copy_norm(ref.norm2, ours.cross_attn_res.norm)
        copy_norm(ref.norm3, ours.ffn_res.norm)
    x, context = torch.randn(B, T, C, dtype=torch.float64), torch.randn(B, S, C, dtype=torch.float64)
    keep = torch.ones(B, S, dtype=torch.bool)
    keep[1, -3:] = False
    y = ours(x, context=context, context_mask=keep[:, None, None, :])
    y_ref = ref(x, context, tgt_mask=~causal_mask(T, T), memory_key_padding_mask=~keep)
    torch.testing.assert_close(y, y_ref, atol=ATOL64, rtol=0)


def test_residual_rejects_unknown_norm():
    with pytest.raises(RedthreadError, match="'middle'"):
        Residual(C, "middle", 0.0, True)


@pytest.mark.parametrize("pos,i", [(0, 0), (0, 1), (1, 0), (1, 1), (5, 4), (37, 9), (100, 14), (63, 15)])
def test_sinusoidal_table_matches_formula(pos, i):
    d = 16
    table = sinusoidal_table(128, d)
    assert table.shape == (128, d)
    angle = pos / 10000 ** ((i - i % 2) / d)  # PE(pos, 2i) = sin(pos / 10000^(2i/d)), PE(pos, 2i+1) = cos(...)
    expected = math.sin(angle) if i % 2 == 0 else math.cos(angle)
    assert table[pos, i].item() == pytest.approx(expected, abs=1e-6)


def test_sinusoidal_table_odd_width_matches_formula():
    d = 7
    table = sinusoidal_table(20, d)
    for pos in (0, 3, 19):
        for i in range(d):
            angle = pos / 10000 ** ((i - i % 2) / d)
            expected = math.sin(angle) if i % 2 == 0 else math.cos(angle)
            assert table[pos, i].item() == pytest.approx(expected, abs=1e-6)

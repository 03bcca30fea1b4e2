"""Int8 weights for decoding (generate/quantize.py): the int8 copy's logits stay near float32's, the float32
model is untouched, the KV-cached step runs the int8 kernel and gives the tokens of recomputation, bad input
gets a one-line error.

The logit tolerances are measured: on the shipped shakespeare-transformer (4 layers x 128), over the 4 x 128
positions of the validation windows below, int8's logits differ from float32's by at most MEASURED_MAX and
by MEASURED_RMS root-mean-square, against logits up to MEASURED_SCALE (torch 2.13, CPU); the bounds are
those figures rounded up by about half. A layer's product is pinned tighter, against its own arithmetic
written out in float32 (`test_an_int8_layer_multiplies_by_its_int8_weights_and_scales`).
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import redthread as rt
from redthread.commands.sample import run_data
from redthread.errors import RedthreadError
from redthread.generate.quantize import Int8Linear, int8_rows, quantize_int8
from redthread.generate.sampler import generate
from redthread.layers.decode_step import DecodeStep

MEASURED_MAX, MEASURED_RMS, MEASURED_SCALE = 0.220, 0.0360, 15.6  # max |int8 - fp32|, its rms, max |fp32 logit|
MAX_DIFF, RMS_DIFF = 0.33, 0.055


def tiny(seed: int = 0, **settings) -> rt.TransformerLM:
    """2 layers x 32, its blocks' matrices scaled by 16: at init the greedy tokens repeat one token, these move."""
    torch.manual_seed(seed)
    cfg = rt.TransformerConfig(**{"vocab_size": 20, "block_size": 24, "n_layer": 2, "n_head": 2, "d_model": 32, **settings})
    model = rt.TransformerLM(cfg).eval()
    with torch.no_grad():
        for p in model.blocks.parameters():
            if p.dim() > 1:
                p.mul_(16)
    return model


def shakespeare() -> tuple[rt.TransformerLM, torch.Tensor]:
    """The shipped model and 4 windows (4, 128) of its validation split (the periodic estimate's fixed windows)."""
    ckpt = rt.read_checkpoint("shakespeare-transformer")
    x, _ = next(iter(run_data(ckpt).eval_batches("val", 4, 1)))
    return ckpt.model.eval(), x


def test_int8_logits_are_near_float32s_on_the_shipped_model():
    model, x = shakespeare()
    with torch.inference_mode():
        fp32, int8 = model(x), quantize_int8(model)(x)
    diff = (int8 - fp32).abs()
    assert diff.max() <= MAX_DIFF and diff.pow(2).mean().sqrt() <= RMS_DIFF, (diff.max(), diff.pow(2).mean().sqrt())
    assert diff.max() > 0  # int8 does change them: the copy is not the float32 model


def test_an_int8_layer_multiplies_by_its_int8_weights_and_scales():
    torch.manual_seed(0)
    linear = nn.Linear(64, 48)
    q, s = int8_rows(linear.weight)
    assert q.dtype == torch.int8 and torch.equal(s, s.bfloat16().float())
    assert q.abs().amax(1).min() >= 125 and q.abs().max() <= 127  # s rounded up to bfloat16: at most 2**-7 above
    assert ((s[:, None] * q.float() - linear.weight).abs() <= s[:, None] / 2 * 1.0001).all()  # rounding, no clipping
    x = torch.randn(5, 64)
    expected = F.linear(x.bfloat16().float(), s[:, None] * q.float()).bfloat16().float() + linear.bias
    with torch.no_grad():
        got = Int8Linear(linear)(x)
    assert got.dtype == torch.float32 and torch.allclose(got, expected, rtol=0, atol=1e-6)


def test_the_float32_model_is_untouched():
    model = tiny()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    tokens = generate(model, torch.tensor([[1, 2, 3]]), 20, temperature=0.0)
    int8 = quantize_int8(model)
    assert all(type(m) is not Int8Linear for m in model.modules())
    assert model.state_dict().keys() == before.keys()
    assert all(torch.equal(v, before[k]) for k, v in model.state_dict().items())
    assert torch.equal(generate(model, torch.tensor([[1, 2, 3]]), 20, temperature=0.0), tokens)
    layers = [m for m in int8.modules() if isinstance(m, Int8Linear)]
    assert len(layers) == 4 * model.cfg.n_layer  # qkv, out, fc_in, fc_out of each block
    assert isinstance(int8.lm_head, nn.Linear) and int8.lm_head.weight is int8.embed.tok_emb.weight  # still tied


@pytest.mark.parametrize("settings", [{}, {"pos": "rope", "bias": False}, {"norm": "post", "pos": "learned"}])
def test_int8_greedy_with_the_cache_gives_the_tokens_of_recomputation(settings):
    int8 = quantize_int8(tiny(**settings))
    prompt = torch.tensor([[1, 5, 7, 2]])
    cached = generate(int8, prompt, 40, temperature=0.0)  # 44 > block_size 24: the window slides and refills
    assert torch.equal(cached, generate(int8, prompt, 40, temperature=0.0, use_cache=False))
    assert len(set(cached[0, 4:].tolist())) > 3  # the tokens move


def test_the_shipped_models_int8_greedy_tokens_with_the_cache_are_those_of_recomputation():
    model, x = shakespeare()
    int8 = quantize_int8(model)
    cached = generate(int8, x[:1, :16], 120, temperature=0.0)  # 136 > its context of 128: slides once
    assert torch.equal(cached, generate(int8, x[:1, :16], 120, temperature=0.0, use_cache=False))


def test_the_cached_step_runs_the_int8_kernel(monkeypatch):
    int8 = quantize_int8(tiny())
    calls = []
    kernel = torch._weight_int8pack_mm
    monkeypatch.setattr(torch, "_weight_int8pack_mm", lambda *a: calls.append(a[0].shape) or kernel(*a))
    generate(int8, torch.tensor([[1, 2, 3]]), 10, temperature=0.0)
    # 4 products a block: the prompt through forward (3 rows each), then 9 new tokens through the cached step (1 row)
    assert [rows for rows, _ in calls] == [3] * 4 * int8.cfg.n_layer + [1] * 9 * 4 * int8.cfg.n_layer


def test_the_step_refuses_a_layer_it_cannot_multiply_by():
    block = tiny().blocks[0]
    block.ffn.fc_in = nn.Sequential(block.ffn.fc_in)
    with pytest.raises(RedthreadError, match="step_product"):
        DecodeStep(block)


@pytest.mark.parametrize("model, message", [
    (lambda: rt.build_model("lstm", vocab_size=10, block_size=8), "takes a decoder-only TransformerLM"),
    (lambda: tiny(d_model=24, n_head=2), "divisible by 16"),
    (lambda: quantize_int8(tiny()), "int8 already"),
])
def test_a_model_it_cannot_quantize_gets_one_line(model, message):
    with pytest.raises(RedthreadError, match=message) as err:
        quantize_int8(model())
    assert "\n" not in str(err.value)

"""The one-token decoding step (`TransformerLM.decoder_step`, `DecodeStep`): the same logits as
`forward` through the cache, for every block variant, and `generate` falls back to `forward`
whenever something observes the modules (hooks, an attention recording)."""

import pytest
import torch

from redthread.errors import RedthreadError
from redthread.generate.sampler import decoding_step, generate
from redthread.layers.decode_step import DecodeStep
from redthread.models.transformer import Decoder, TransformerConfig, TransformerLM
from redthread.viz.record import record_attention

V, W = 11, 16

VARIANTS = {
    "default": {},
    "post_norm": dict(norm="post"),
    "rope": dict(pos="rope"),
    "learned": dict(pos="learned"),
    "no_positions_no_bias_relu": dict(pos="none", bias=False, activation="relu"),
    "gelu_tanh_untied": dict(activation="gelu_tanh", tie_weights=False),
    "speedrun_options": dict(pos="rope", qk_norm=True, activation="relu2", logit_softcap=5.0, tie_weights=False),
    "qk_norm_post_norm": dict(norm="post", qk_norm=True),
}


def model_for(seed=0, **overrides) -> TransformerLM:
    torch.manual_seed(seed)
    cfg = TransformerConfig(vocab_size=V, block_size=W, n_layer=2, n_head=2, d_model=16, d_ff=32, **overrides)
    model = TransformerLM(cfg).double().eval()
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():  # larger than GPT-2's init, so attention is far from uniform
            p.add_(torch.randn(p.shape, generator=g, dtype=p.dtype) * 0.3)
    return model


@pytest.mark.parametrize("variant", VARIANTS)
def test_decoder_step_matches_forward_through_the_cache(variant):
    model = model_for(**VARIANTS[variant])
    idx = torch.randint(0, V, (3, 12), generator=torch.Generator().manual_seed(1))
    step = model.decoder_step()
    with torch.no_grad():
        full = model(idx)  # (B, T, V)
        cache = model.make_cache(3)
        model(idx[:, :4], cache=cache)  # a prompt through forward, then one token at a time
        for t in range(4, 12):
            logits = step(idx[:, t : t + 1], cache)  # (B, V)
            torch.testing.assert_close(logits, full[:, t], atol=1e-10, rtol=0)
    assert cache[0].self_attn.length == 12


def test_generate_takes_the_step_and_matches_recompute():
    model = model_for(pos="rope")
    assert decoding_step(model) is not None
    prompt = torch.randint(0, V, (2, 3), generator=torch.Generator().manual_seed(2))
    cached = generate(model, prompt, 30, temperature=1.0, seed=4)  # slides past the window of 16
    assert torch.equal(cached, generate(model, prompt, 30, temperature=1.0, seed=4, use_cache=False))


def test_generate_falls_back_to_forward_when_observed():
    model = model_for()
    seen = []
    handle = model.blocks[0].ffn.register_forward_hook(lambda m, args, out: seen.append(out.shape))
    try:
        assert decoding_step(model) is None
        generate(model, torch.tensor([[1, 2]]), 3, temperature=0.0)
    finally:
        handle.remove()
    assert len(seen) == 3  # the prompt and two single-token steps went through the hooked module
    with record_attention(model) as maps:
        assert decoding_step(model) is None
        generate(model, torch.tensor([[1, 2]]), 3, temperature=0.0)
    assert maps.decoder  # recorded through forward


def test_decode_step_refuses_cross_attention():
    cfg = TransformerConfig(vocab_size=V, block_size=W, n_layer=1, n_head=2, d_model=16)
    decoder = Decoder(cfg)
    assert not decoder.can_step and decoding_step(decoder) is None
    with pytest.raises(RedthreadError, match="cross-attention"):
        DecodeStep(decoder.blocks[0])


def test_decoder_step_is_kept_until_a_parameter_changes():
    model = model_for(seed=3)
    step = model.decoder_step()
    assert model.decoder_step() is step  # the matrix copies are made once
    idx = torch.randint(0, V, (2, 6), generator=torch.Generator().manual_seed(5))
    with torch.no_grad():
        model.blocks[1].ffn.fc_in.weight.mul_(-1.5)  # written in place: its version counter moves
        full = model(idx)
        fresh = model.decoder_step()
        assert fresh is not step
        cache = model.make_cache(2)
        model(idx[:, :5], cache=cache)
        torch.testing.assert_close(fresh(idx[:, 5:], cache), full[:, 5], atol=1e-10, rtol=0)
    model.float()  # parameters replaced by float32 copies
    assert model.decoder_step() is not fresh


def test_generate_keeps_a_subclass_forward():
    class NoTokenZero(TransformerLM):  # a subclass that changes the logits, as experiments/sampling.py does
        def forward(self, idx, cache=None):
            return super().forward(idx, cache=cache).index_fill(-1, torch.tensor([0]), float("-inf"))

    torch.manual_seed(0)
    model = NoTokenZero(TransformerConfig(vocab_size=V, block_size=W, n_layer=1, n_head=2, d_model=16)).eval()
    assert not model.can_step and decoding_step(model) is None
    out = generate(model, torch.tensor([[1, 2]]), 40, temperature=2.0, seed=0)
    assert (out[:, 2:] != 0).all()

"""Positional encodings: rotary positions make q . k a function of the offset i - j only (C8)."""

import pytest
import torch

from redthread.generate.sampler import generate
from redthread.layers.positional import RotaryEmbedding
from redthread.models.transformer import TransformerConfig, TransformerLM


def test_rotary_scores_depend_only_on_relative_position():
    rope = RotaryEmbedding(64, 16)
    g = torch.Generator().manual_seed(0)
    q, k = torch.randn(1, 1, 1, 16, generator=g), torch.randn(1, 1, 1, 16, generator=g)
    scores = {(i, j): (rope(q, i) * rope(k, j)).sum().item() for i in range(0, 40, 7) for j in range(0, 40, 5)}
    for (i, j), s in scores.items():
        shifted = (rope(q, i + 11) * rope(k, j + 11)).sum().item()
        assert s == pytest.approx(shifted, abs=1e-5)  # float32 tables
    assert len({round(s, 6) for s in scores.values()}) > 5  # and it does depend on the offset


def test_rotary_preserves_norms_and_is_identity_at_position_zero():
    rope = RotaryEmbedding(32, 8)
    x = torch.randn(2, 3, 5, 8)
    assert torch.allclose(rope(x, 0)[:, :, :1], x[:, :, :1])
    assert torch.allclose(rope(x, 7).norm(dim=-1), x.norm(dim=-1), atol=1e-5)


def test_rope_model_cache_equals_recompute():
    torch.manual_seed(0)
    model = TransformerLM(TransformerConfig(vocab_size=17, block_size=12, n_layer=2, n_head=2, d_model=16, pos="rope")).double()
    prompt = torch.randint(17, (2, 5))
    cached = generate(model, prompt, 30, temperature=0.9, seed=4, use_cache=True)  # past the window: it slides
    recomputed = generate(model, prompt, 30, temperature=0.9, seed=4, use_cache=False)
    assert torch.equal(cached, recomputed)

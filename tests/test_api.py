"""The public API exactly as the README and the foundation issue write it."""

import torch

import redthread as rt


def test_public_api_calls_from_the_readme(tmp_path):
    cfg = rt.TransformerConfig(vocab_size=65, block_size=64, n_layer=4, n_head=4, d_model=128, dropout=0.0)
    model = rt.TransformerLM(cfg)
    idx = torch.randint(65, (2, 10))
    assert model(idx).shape == (2, 10, 65)

    q = k = v = torch.randn(2, 4, 10, 32)
    y, att = rt.scaled_dot_product_attention(q, k, v, mask=None)
    assert y.shape == (2, 4, 10, 32) and att.shape == (2, 4, 10, 10)

    mha = rt.MultiHeadAttention(128, 4)
    x = torch.randn(2, 10, 128)
    y, att = mha(x, context=None, mask=None, need_weights=False)
    assert y.shape == x.shape and att is None
    y, att = mha(x, need_weights=True)
    assert att.shape == (2, 4, 10, 10)

    out = rt.generate(model, idx, max_new_tokens=5, temperature=1.0, top_k=None, top_p=None, seed=0)
    assert out.shape == (2, 15) and torch.equal(out[:, :10], idx)

    rt.save_checkpoint(tmp_path, model)
    loaded = rt.load_checkpoint(tmp_path)
    model.eval(), loaded.eval()
    assert torch.equal(model(idx), loaded(idx))

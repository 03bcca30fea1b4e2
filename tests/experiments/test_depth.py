import math

import torch

from redthread.experiments.depth import VARIANTS, StackLM, regimes, token_identity
from redthread.layers.blocks import DecoderBlock
from redthread.models.transformer import TransformerConfig, TransformerLM
from tests.experiments.conftest import assert_parts

PARTS = {"residuals": ["identity_residual", "identity_no_residual", "residual_trains", "residual_gap"],
         "LayerNorm": ["layernorm_gap"]}


def test_stack_with_residual_and_layernorm_matches_the_library_transformer():
    cfg = TransformerConfig(vocab_size=11, block_size=8, n_layer=2, n_head=2, d_model=16)
    torch.manual_seed(0)
    ours, ref = StackLM(cfg, residual=True, norm=True), TransformerLM(cfg)
    for mine, theirs in zip(ours.blocks, ref.blocks):
        assert isinstance(theirs, DecoderBlock)
        mine.self_attn.load_state_dict(theirs.self_attn.state_dict())
        mine.ffn.load_state_dict(theirs.ffn.state_dict())
        mine.attn_norm.load_state_dict(theirs.self_attn_res.norm.state_dict())
        mine.ffn_norm.load_state_dict(theirs.ffn_res.norm.state_dict())
    ours.embed.load_state_dict(ref.embed.state_dict())
    ours.norm_f.load_state_dict(ref.norm_f.state_dict())
    idx = torch.randint(11, (3, 8))
    torch.testing.assert_close(ours(idx), ref(idx))


def test_token_identity_against_hand_computed_cases():
    # one dimension: values 0, 2 (token 0) and 10, 12 (token 1); mean 6, total SS 36+16+16+36 = 104,
    # within-token SS 1+1+1+1 = 4: share 1 - 4/104
    tokens = torch.tensor([0, 0, 1, 1])
    assert math.isclose(token_identity(torch.tensor([[0.0], [2.0], [10.0], [12.0]]), tokens), 1 - 4 / 104)
    # a second dimension the token does not explain at all (group means 1 and 1, mean 1): SS 32 total, 32 within
    h = torch.tensor([[0.0, 1.0], [2.0, 1.0], [10.0, 5.0], [12.0, -3.0]])
    assert math.isclose(token_identity(h, torch.tensor([3, 3, 7, 7])), 1 - 36 / 136)
    # vectors that are a function of the token: 1; all equal (collapsed): 0; label ids need not be 0..G-1
    emb = torch.randn(5, 4, generator=torch.Generator().manual_seed(0))
    ids = torch.tensor([4, 0, 2, 4, 1, 3, 0, 2])
    assert math.isclose(token_identity(emb[ids], ids + 100), 1.0, abs_tol=1e-12)
    assert token_identity(torch.ones(8, 3), ids) == 0.0


def test_depth_quick_structure(quick_report):
    report, md, data, _ = quick_report("depth")
    assert_parts(report, data, PARTS)
    n = data["numbers"]
    res, stress, depths = regimes(quick=True)
    assert n["identity_depths"] == depths and res.depth in depths
    assert stress.grad_clip == 0 and stress.depth > res.depth and stress.d_model > res.d_model
    for v in VARIANTS:
        assert all(-1e-9 <= x <= 1 + 1e-9 for x in n["token_identity_init"][v].values())
    assert all(0 <= x < 0.5 for x in n["token_identity_chance"].values())
    for key in ("residuals", "layernorm"):
        picked, sweep = n[f"{key}_picked_lr"], n[f"{key}_sweep_val_nll"]
        assert len(picked) == 2
        for arm, nlls in sweep.items():  # each arm's rate is its own sweep's lowest validation NLL
            assert float(min(nlls, key=nlls.get)) == picked[arm]
        assert len(n[f"{key}_gap"]) >= 2 and all(math.isfinite(g) for g in n[f"{key}_gap"])

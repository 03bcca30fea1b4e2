import torch

from redthread.experiments.depth import StackLM
from redthread.experiments.report import FAILS
from redthread.layers.blocks import DecoderBlock
from redthread.models.transformer import TransformerConfig, TransformerLM


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


def test_depth_quick_verdict(quick_report):
    report, md, data, _ = quick_report("depth")
    # trainability holds (checks 1-3); the gradient-norm check does not: with LayerNorm and no residuals
    # the first block's gradient stays within 100x of the last one's, though the stack does not train
    assert report.verdict == FAILS, md
    assert [c.passed for c in report.checks] == [True, True, True, False], md
    n = data["numbers"]
    deepest = str(n["depths"][-1])
    assert n["gap_closed"]["residual + LayerNorm"][deepest] >= 0.8
    assert n["gap_closed"]["LayerNorm only"][deepest] < 0.5 and n["gap_closed"]["neither"][deepest] < 0.5
    assert n["gap_closed"]["LayerNorm only"][str(n["depths"][0])] >= 0.8
    assert 0.1 <= n["grad_ratio_first_last"]["residual + LayerNorm"]["24"] <= 10
    assert n["grad_ratio_first_last"]["neither"]["24"] < 1e-2
    assert 1e-2 < n["grad_ratio_first_last"]["LayerNorm only"]["24"] < 1
    assert n["grad_ratio_first_last"]["LayerNorm only, GPT-2 init"]["24"] < 1e-6  # the init artefact the set-up avoids

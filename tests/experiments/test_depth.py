import math

import pytest
import torch

from redthread.data.sequences import SequenceData
from redthread.experiments import depth
from redthread.experiments.depth import (
    FLOW_FRACTIONS,
    FLOW_KEYS,
    TINY,
    VARIANTS,
    Regime,
    StackLM,
    block_gradients,
    log_ratio,
    regimes,
    token_identity,
    worst_for_claim,
)
from redthread.experiments.report import Report
from redthread.experiments.stats import tuning_seed
from redthread.layers.blocks import DecoderBlock
from redthread.models.transformer import TransformerConfig, TransformerLM
from redthread.train.loop import TrainConfig, train
from tests.experiments.conftest import assert_parts

FLOW = [f"flow_{when}_{key}" for when in ("init", "trained") for key in FLOW_KEYS.values()]
PARTS = {"residuals": ["identity_residual", "identity_no_residual", "residual_trains", "residual_gap"],
         "gradient flow": FLOW, "LayerNorm": ["layernorm_gap"]}


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


def _zero_blocks(residual: bool) -> StackLM:
    """A two-block stack without LayerNorm whose blocks' weights and biases are all 0: each sublayer outputs 0."""
    torch.manual_seed(0)
    model = StackLM(TransformerConfig(vocab_size=5, block_size=4, n_layer=2, n_head=1, d_model=4), residual, norm=False)
    with torch.no_grad():
        for p in model.blocks.parameters():
            p.zero_()
    return model


@pytest.mark.parametrize("residual", [True, False])
def test_block_gradients_against_a_hand_computation(residual):
    # Every block's weights are 0, so every sublayer outputs 0 and the only gradients that reach a block's parameters
    # are those of the biases added last: the attention's out_proj.bias and the FFN's fc_out.bias (the others
    # multiply a zero weight or a zero input). The head sees h, the stream leaving the last block, with logits
    # W h (W the tied embedding, (V, C)); with L the mean cross-entropy over the N = B T positions,
    #     dL/dh_n = W^T (softmax(W h_n) - onehot(y_n)) / N,   and   g = sum over n of dL/dh_n.
    # With residual connections h = the embedding, each block's two biases add straight to the stream: both get g,
    # in both blocks, so each norm is sqrt(2) |g| and the ratio is 1. Without them h = 0 (uniform softmax); only the
    # last block's fc_out.bias gets g, and the first block nothing: its gradient vanishes (0, floored at TINY).
    model = _zero_blocks(residual)
    x = torch.tensor([[0, 1, 2, 3], [4, 3, 2, 1]])  # (B, T) = (2, 4)
    y = torch.tensor([[1, 2, 3, 4], [3, 2, 1, 0]])
    W = model.lm_head.weight.detach()  # (V, C)
    h = model.embed(x).detach() if residual else torch.zeros(2, 4, 4)  # (B, T, C)
    p = torch.softmax(h @ W.T, dim=-1)  # (B, T, V)
    g = ((p - torch.eye(5)[y]) @ W).sum((0, 1)) / y.numel()  # (C,)
    norms = block_gradients(model, x, y)
    if residual:
        assert norms == pytest.approx([math.sqrt(2) * g.norm().item()] * 2, rel=1e-5)
        assert log_ratio(norms) == pytest.approx(0.0, abs=1e-5)
    else:
        assert norms[0] == 0.0 and norms[1] == pytest.approx(g.norm().item(), rel=1e-5)
        assert log_ratio(norms) == pytest.approx(math.log10(TINY / norms[1]))
    assert all(p.grad is None for p in model.parameters())  # the measurement leaves no gradient behind


def test_log_ratio_and_the_worst_checkpoint():
    assert log_ratio([1.0, 5.0, 10.0]) == pytest.approx(-1.0) and log_ratio([3.0, 3.0]) == 0.0
    assert log_ratio([100.0, 1.0]) == pytest.approx(2.0) and math.isnan(log_ratio([math.nan, 1.0]))
    # with a residual connection the checkpoint furthest from 0 (sign kept), without it the smallest |ratio|
    assert worst_for_claim([0.2, -0.7, 0.5], residual=True) == -0.7
    assert worst_for_claim([-2.0, 1.5, -3.0], residual=False) == 1.5
    # a checkpoint that is not finite counts against the claim either way
    assert worst_for_claim([0.1, math.nan], residual=True) == pytest.approx(30.0)
    assert worst_for_claim([-3.0, math.nan], residual=False) == 0.0


def test_measuring_gradients_during_training_leaves_training_alone():
    seqs = torch.randint(6, (64, 8), generator=torch.Generator().manual_seed(0)).numpy()
    data = SequenceData(seqs[:48], seqs[48:], vocab_size=7, boundary=6, end_token=False)
    cfg = TrainConfig(max_iters=6, batch_size=8, lr=1e-2, warmup_iters=1, eval_interval=6, log_interval=6, seed=0,
                      device="cpu")
    x, y = data.batch("train", 8, torch.Generator().manual_seed(1))

    def measure(step, seconds, model) -> bool:  # what the experiment does at its checkpoints, here after every step
        block_gradients(model, x, y)
        return False

    models = []
    for monitor in (None, measure):
        torch.manual_seed(0)
        model = StackLM(TransformerConfig(vocab_size=7, block_size=8, n_layer=2, n_head=2, d_model=8), True, True)
        train(model, data, cfg, progress=False, monitor=monitor)
        models.append(model)
    for a, b in zip(*(m.state_dict().values() for m in models)):
        torch.testing.assert_close(a, b, rtol=0, atol=0)


def test_budget_scales_the_steps_and_tuning_picks_on_validation():
    assert depth.BUDGETS == (0.5, 1.0, 2.0)
    for quick in (True, False):
        one, two, half = regimes(quick), regimes(quick, 2.0), regimes(quick, 0.5)
        for r1, r2, r05 in zip(one[:2], two[:2], half[:2]):
            assert r2.steps == 2 * r1.steps and abs(r05.steps - r1.steps / 2) <= 0.5
    # the sweep runs on the tuning seed, records its grid and scores, and picks the lowest validation NLL
    report = Report("depth", "C11")
    tiny = Regime(1, 8, 2, 1.0, (1e-3, 1e-2, 1e-1))
    picked, tried = depth._tune(report, "residuals", ("residual + LayerNorm",), tiny, 0, False, depth._Ticker(None, 1))
    (t,) = report.tunings
    assert t["pick"] == picked["residual + LayerNorm"] == t["grid"][t["scores"].index(min(t["scores"]))]
    assert {r["seed"] for r in tried.values()} == {tuning_seed(0)}
    assert all(set(r["grads"]) == set(FLOW_FRACTIONS) and len(r["grads"][1.0]) == 1 for r in tried.values())


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
    assert data["tuning"] == []  # --quick tunes nothing: each arm at its grid's middle
    assert n["residuals_picked_lr"] == {v: res.quick_lr() for v in ("residual + LayerNorm", "LayerNorm only")}
    assert n["layernorm_picked_lr"] == {v: stress.quick_lr() for v in ("residual + LayerNorm", "residual only")}
    for key in ("residuals", "layernorm"):
        assert len(n[f"{key}_gap"]) >= 2 and all(math.isfinite(g) for g in n[f"{key}_gap"])

    # gradient flow: all four variants, per seed, at init and at each fraction of training
    seeds = report.checks[0].sets[0].seeds
    labels = ["init", *(f"{f:g}" for f in FLOW_FRACTIONS)]
    assert n["flow_fractions"] == list(FLOW_FRACTIONS) and set(n["flow_picked_lr"]) == set(VARIANTS)
    checks = {c["name"]: c for c in data["checks"]}
    for v, (residual, _) in VARIANTS.items():
        ratios, norms = n["flow_log10_ratio"][v], n["flow_block_grad_norms"][v]
        assert list(ratios) == labels and list(norms) == labels
        for lab in labels:
            assert len(norms[lab]) == len(seeds) and all(len(g) == res.depth for g in norms[lab])
            assert ratios[lab] == pytest.approx([log_ratio(g) for g in norms[lab]])
        key = FLOW_KEYS[v]
        assert checks[f"flow_init_{key}"]["direction"] == ("within" if residual else "above")
        init = [worst_for_claim([r], residual) for r in ratios["init"]]
        trained = [worst_for_claim([ratios[f"{f:g}"][i] for f in FLOW_FRACTIONS], residual) for i in range(len(seeds))]
        assert checks[f"flow_init_{key}"]["value"] == pytest.approx(sum(init) / len(init))
        assert checks[f"flow_trained_{key}"]["value"] == pytest.approx(sum(trained) / len(trained))
    # the recorded gradients at initialisation are the measurement itself, redone here for one variant and seed
    x, y = depth.probe_batch(seeds[0])
    again = block_gradients(depth.build("LayerNorm only", res.depth, res.d_model, seeds[0]), x, y)
    assert n["flow_block_grad_norms"]["LayerNorm only"]["init"][0] == pytest.approx(again, rel=1e-5)
    assert "(gradient_flow.png)" in md

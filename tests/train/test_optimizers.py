"""The optimizers: which parameters Muon takes, one state dict for two optimizers, exact resume, bad input."""

from __future__ import annotations

import pytest
import torch

from redthread.errors import InvalidValue
from redthread.models.mlp import MLPLM, MLPConfig
from redthread.models.regression import SoftmaxRegression
from redthread.models.transformer import TransformerConfig, TransformerLM
from redthread.train.checkpoint import read_checkpoint
from redthread.train.loop import TrainConfig, read_metrics, train
from redthread.train.optimizers import Combined, hidden_matrices, make_optimizer
from tests.train.test_loop import Interrupting, fresh_model, make_data

CPU = torch.device("cpu")


def names_of(model, params):
    ids = {id(p) for p in params}
    return sorted(n for n, p in model.named_parameters(remove_duplicate=False) if id(p) in ids)


@pytest.mark.parametrize("tie", [True, False])
def test_muon_takes_the_hidden_matrices_and_nothing_else(tie):
    model = TransformerLM(TransformerConfig(vocab_size=11, block_size=8, n_layer=2, n_head=2, d_model=16, tie_weights=tie, pos="learned"))
    names = names_of(model, hidden_matrices(model))
    assert len(names) == 2 * 4  # per block: the fused q, k, v projection, out and the FFN's two
    assert all(n.startswith("blocks.") and n.endswith(".weight") for n in names)
    assert not any("emb" in n or "lm_head" in n or "norm" in n for n in names)
    mlp = MLPLM(MLPConfig(vocab_size=11, context=3, d_embed=4, d_hidden=8))
    assert names_of(mlp, hidden_matrices(mlp)) == ["hidden.weight"]
    assert hidden_matrices(SoftmaxRegression(4, 3)) == []  # its one layer is the output layer


def test_muon_and_adamw_step_as_one_with_one_schedule():
    model = fresh_model()
    opt = make_optimizer(model, TrainConfig(optimizer="muon", lr=2e-3), CPU)
    assert isinstance(opt, Combined)
    adamw, muon = opt.optimizers
    assert isinstance(adamw, torch.optim.AdamW) and isinstance(muon, torch.optim.Muon)
    counted = sum(len(g["params"]) for g in opt.param_groups)
    assert counted == len(list(model.parameters()))  # every parameter once, in one of them
    for group in opt.param_groups:  # what the loop does each step
        group["lr"] = 1e-4
    assert all(g["lr"] == 1e-4 for o in opt.optimizers for g in o.param_groups)
    before = [p.detach().clone() for p in model.parameters()]
    model(torch.zeros(2, 8, dtype=torch.long)).sum().backward()
    opt.step()
    assert all(not torch.equal(a, b) for a, b in zip(before, model.parameters()) if b.grad is not None)


def test_the_state_dict_of_two_optimizers_round_trips_in_torchs_format():
    model = fresh_model()
    opt = make_optimizer(model, TrainConfig(optimizer="muon"), CPU)
    for _ in range(2):
        model(torch.randint(11, (2, 8))).logsumexp(-1).mean().backward()
        opt.step()
        opt.zero_grad()
    sd = opt.state_dict()
    indices = [i for g in sd["param_groups"] for i in g["params"]]
    assert indices == list(range(len(indices))) and set(sd["state"]) <= set(indices)
    again = make_optimizer(fresh_model(), TrainConfig(optimizer="muon"), CPU)
    again.load_state_dict(sd)
    for a, b in zip(opt.optimizers, again.optimizers):
        assert len(a.state) == len(b.state) > 0  # both optimizers' moments came back
        for sa, sb in zip(a.state.values(), b.state.values()):
            assert sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa if isinstance(sa[k], torch.Tensor))


def test_a_muon_run_resumes_exactly_and_learns(tmp_path):
    cfg = TrainConfig(max_iters=20, batch_size=4, eval_interval=5, eval_batches=2, log_interval=5, warmup_iters=3,
                      optimizer="muon", lr=3e-3)
    straight = fresh_model()
    train(straight, make_data(), cfg, run_dir=tmp_path / "a", progress=False)
    interrupted = fresh_model()
    with pytest.raises(KeyboardInterrupt):
        train(interrupted, Interrupting(make_data(), after=13), cfg, run_dir=tmp_path / "b", progress=False)
    resumed = fresh_model()
    train(resumed, make_data(), cfg, run_dir=tmp_path / "b", resume=True, progress=False)
    for (name, p), q in zip(straight.named_parameters(), resumed.parameters()):
        assert torch.equal(p, q), name
    losses = [r["loss"] for r in read_metrics(tmp_path / "a" / "metrics.jsonl") if "loss" in r]
    assert losses[-1] < losses[0] - 0.1


def test_an_adamw_checkpoint_does_not_resume_under_muon(tmp_path):
    cfg = TrainConfig(max_iters=2, batch_size=4, eval_interval=2, eval_batches=1, log_interval=1)
    train(fresh_model(), make_data(), cfg, run_dir=tmp_path / "run", progress=False)
    ckpt = read_checkpoint(tmp_path / "run")
    muon = make_optimizer(fresh_model(), TrainConfig(optimizer="muon"), CPU)
    with pytest.raises(InvalidValue, match="does not fit this optimizer"):
        ckpt.require_resumable(muon)


@pytest.mark.parametrize("bad, match", [({"optimizer": "sgd"}, "optimizer must be one of adamw, muon"),
                                        ({"momentum": 1.0}, "momentum"), ({"momentum": float("nan")}, "momentum")])
def test_bad_optimizer_settings_are_one_line_errors(bad, match):
    with pytest.raises(InvalidValue, match=match) as e:
        TrainConfig(**bad)
    assert "\n" not in str(e.value)


def test_muon_on_a_torch_without_it_says_which_torch_it_needs(monkeypatch):
    monkeypatch.delattr(torch.optim, "Muon")
    with pytest.raises(InvalidValue, match=r"optimizer muon needs torch >= 2.9 \(torch.optim.Muon\)"):
        make_optimizer(fresh_model(), TrainConfig(optimizer="muon"), CPU)


def test_muon_on_auto_precision_where_it_would_be_fp16_trains_in_fp32_and_refuses_fp16_asked_for(monkeypatch):
    """On a GPU without bf16 tensor cores auto means fp16, which Muon cannot train in (its loss
    scaling is AdamW's only): auto then falls back to fp32, and fp16 asked for is refused."""
    import redthread.train.loop as loop
    from redthread.train.precision import Precision

    real, asked = loop.choose_precision, []

    def no_bf16(requested, device):  # what choose_precision answers on such a GPU, on this CPU
        asked.append(requested)
        return Precision("fp16", "cuda") if requested in ("auto", "fp16") else real(requested, device)

    monkeypatch.setattr(loop, "choose_precision", no_bf16)
    cfg = TrainConfig(optimizer="muon", max_iters=2, batch_size=2, eval_interval=10**6, eval_batches=1, device="cpu")
    train(fresh_model(), make_data(), cfg, progress=False)
    assert asked == ["auto", "fp32"]
    with pytest.raises(InvalidValue, match="optimizer muon does not train in fp16"):
        train(fresh_model(), make_data(), TrainConfig(**{**cfg.to_dict(), "precision": "fp16"}), progress=False)

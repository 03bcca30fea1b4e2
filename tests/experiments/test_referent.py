import math

import pytest
import torch
from torch import nn

from redthread.data.targets import IGNORE_INDEX
from redthread.experiments import referent
from redthread.experiments.referent import (
    ANIMAL,
    CUE_ANIMAL,
    CUE_PLACE,
    N_CUE,
    N_ENTITY,
    PLACE,
    PRONOUN,
    PROP,
    PROPERTY,
    attribution,
    choose_head,
    cohen_kappa,
    make_items,
)


def kind(token: int) -> str:
    return "animal" if ANIMAL <= token < ANIMAL + N_ENTITY else "place" if PLACE <= token < PLACE + N_ENTITY else "?"


def test_the_referent_rule_holds_in_every_item():
    items = make_items(500, seed=3)
    x, y, pos, ref = items["x"], items["y"], items["pos"], items["referent"]
    assert x.shape == y.shape == (500, referent.LENGTH)
    for i in range(len(x)):
        a, b = int(x[i, pos[i, 0]]), int(x[i, pos[i, 1]])
        assert pos[i, 0] < pos[i, 1] < referent.MENTIONS and {kind(a), kind(b)} == {"animal", "place"}
        cues = [int(t) for t in x[i] if CUE_ANIMAL <= t < CUE_PLACE + N_CUE]
        assert len(cues) == 1 and x[i, -1] == PRONOUN
        wanted = "animal" if cues[0] < CUE_PLACE else "place"
        assert bool(items["animate"][i]) == (wanted == "animal")
        r, o = (a, b) if ref[i] == 0 else (b, a)
        assert kind(r) == wanted  # the referent is the candidate whose kind the cue names
        prop = lambda t: int(PROPERTY[t - (ANIMAL if kind(t) == "animal" else PLACE)])  # noqa: E731
        assert int(y[i, -1]) == PROP + prop(r) and prop(r) != prop(o)  # the target needs the referent
        assert (y[i, :-1] == IGNORE_INDEX).all()
    assert 0.4 < ref.double().mean() < 0.6 and 0.4 < items["animate"].double().mean() < 0.6  # both ways, balanced
    assert torch.equal(make_items(500, seed=3)["x"], x)  # a function of the seed


class FirstPositionOnly(nn.Module):
    """A toy model whose prediction at every position reads only the embedding of position 0."""

    def __init__(self, vocab: int = referent.VOCAB, width: int = 6):
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        self.head = nn.Linear(width, vocab)

    def forward(self, idx):
        e = self.embed(idx)  # (B, T, C)
        return self.head(e[:, :1]).expand(-1, idx.size(1), -1)  # (B, T, V)


def test_attribution_is_gradient_times_input_at_the_candidates():
    torch.manual_seed(0)
    items = make_items(30, seed=1)
    model = FirstPositionOnly()
    got = attribution(model, items)  # (N, 2)
    assert got.shape == (30, 2) and (got >= 0).all()
    for i in range(30):  # by hand: d log P(target) / d e at each candidate, times e, its norm
        e = model.embed(items["x"][i : i + 1]).detach().requires_grad_(True)
        logp = torch.log_softmax(model.head(e[:, :1]), -1)[0, 0, items["y"][i, -1]]
        (g,) = torch.autograd.grad(logp, e)
        want = (g * e)[0].norm(dim=-1)[items["pos"][i]]
        assert torch.allclose(got[i], want.detach(), atol=1e-6)
        first_at_zero = items["pos"][i, 0] == 0
        assert (got[i, 0] > 0) == bool(first_at_zero) and got[i, 1] == 0  # only position 0 can matter
    assert all(p.grad is None for p in model.parameters())  # the helper leaves no gradients behind


def test_kappa_and_head_choice_by_hand():
    a = torch.tensor([0, 1, 0, 1, 0, 1])
    assert cohen_kappa(a, a) == pytest.approx(1.0) and cohen_kappa(a, 1 - a) == pytest.approx(-1.0)
    assert cohen_kappa(torch.ones(6), torch.ones(6)) == 0.0  # both always pick the same side: no evidence
    assert math.isclose(cohen_kappa(torch.tensor([1, 1, 0, 0]), torch.tensor([1, 0, 1, 0])), 0.0, abs_tol=1e-12)
    margins = torch.zeros(5, 2, 4)
    margins[:, 1, 2] = 0.3
    assert choose_head(margins) == (1, 2)


def test_referent_quick_report(quick_report):
    report, md, data, folder = quick_report("referent")
    checks = {c["name"]: c for c in data["checks"]}
    assert set(checks) == {"competence", "attention_share", "attribution_kappa", "ablation_excess"}
    assert {c["part"] for c in checks.values()} == {"competence", "attention points at the referent",
                                                    "attention agrees with attribution and ablation"}
    n = data["numbers"]
    assert len(n["seeds"]) >= 2 and all(c["seeds"] == n["seeds"] and c["floor"] > 0 for c in checks.values())
    for key, name in (("accuracy", "competence"), ("share", "attention_share"), ("kappa", "attribution_kappa"),
                      ("ablation_excess", "ablation_excess")):
        assert checks[name]["value"] == pytest.approx(sum(n[key]) / len(n[key]))
    assert all(0 <= v <= 1 for key in ("accuracy", "share", "agreement", "attribution_share") for v in n[key])
    assert all(-1 <= v <= 1 for v in n["kappa"])
    for (layer, head), drops, excess in zip(n["chosen_heads"], n["ablation_drops"], n["ablation_excess"]):
        others = [d for lay, row in enumerate(drops) for h, d in enumerate(row) if (lay, h) != (layer, head)]
        assert excess == pytest.approx(drops[layer][head] - sum(others) / len(others), abs=1e-6)
    assert (folder / "attention.png").exists()
    assert "positive control" in md

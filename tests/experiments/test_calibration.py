import math

import numpy as np
import pytest
import torch

from redthread.data.sequences import SequenceData
from redthread.data.synthetic import MarkovSource
from redthread.experiments import calibration as exp
from redthread.models.bigram import BigramConfig, BigramLM
from redthread.train.calibration import calibration


def test_calibration_quick_report(quick_report):
    report, md, data, out = quick_report("calibration")
    checks = {c["name"]: c for c in data["checks"]}
    assert set(checks) == {"ece_bigram", "ece_mlp", "ece_transformer"}
    assert {c["part"] for c in checks.values()} == {"bigram", "MLP", "Transformer"}
    for c in checks.values():
        assert len(c["seeds"]) >= 2 and c["value"] > 0 and c["floor"] == 2.0
    n = data["numbers"]
    size = exp.sizes(quick=True)
    assert n["positions"] == size["test"] * exp.LENGTH
    for rung in exp.RUNGS:
        assert len(n[f"{rung}.ece"]) == len(n["seeds"]) == size["seeds"]
        assert all(f > 0 and math.isclose(e / f, r, rel_tol=1e-9)  # the ECE in units of the control's floor
                   for e, f, r in zip(n[f"{rung}.ece"], n[f"{rung}.floor"], n[f"{rung}.ratio"]))
        assert all(0.25 <= t <= 4 for t in n[f"{rung}.temperature"])
        assert all(lim <= nll + 0.05 for lim, nll in zip(n[f"{rung}.limit"], n[f"{rung}.nll"]))
        assert all(sum(r["counts"]) == n["positions"] for r in n[f"{rung}.reliability"])
    assert (out / "reliability.png").exists()


def test_reliability_bins_as_the_library_does():
    source = MarkovSource(order=1, vocab_size=6, concentration=0.5, seed=2)
    seqs = source.sample(64, 12, seed=1)
    data = SequenceData(seqs, seqs, vocab_size=7, boundary=6, end_token=False)
    torch.manual_seed(0)
    model = BigramLM(BigramConfig(vocab_size=7, block_size=12))
    torch.nn.init.normal_(model.logits.weight, std=2.0)
    expected = calibration(model, data, "val", n_bins=10, batch_size=16)
    z, y = exp.positions(model, data, "val")
    got = exp.reliability(z.softmax(-1), y, n_bins=10)
    assert got.n == expected.n == 64 * 12 and got.counts == expected.counts
    assert got.ece == pytest.approx(expected.ece, abs=1e-6)


def test_the_noise_floor_is_the_ece_of_labels_drawn_from_the_prediction():
    probs = torch.tensor([[0.7, 0.3]]).repeat(1000, 1)  # (N, 2): one bin, confidence 0.7 on class 0
    floors = exp.noise_floor(probs, draws=3, seed=5)
    generator = torch.Generator().manual_seed(5)
    for floor in floors:  # one bin: the ECE is |accuracy - 0.7|, accuracy the share of draws that are class 0
        labels = torch.multinomial(probs, 1, generator=generator)[:, 0]
        assert floor == pytest.approx(abs(float((labels == 0).double().mean()) - 0.7), abs=1e-6)


def test_fit_temperature_finds_the_scale_the_labels_were_drawn_at():
    generator = torch.Generator().manual_seed(0)
    logits = 3 * torch.randn(20000, 5, generator=generator)
    labels = torch.multinomial((logits / 2.0).softmax(-1), 1, generator=generator)[:, 0]
    t = exp.fit_temperature(logits, labels)
    grid = torch.linspace(1.5, 2.5, 1001)  # an independent search: the NLL on a dense grid
    nll = torch.stack([torch.nn.functional.cross_entropy(logits.double() / g, labels) for g in grid])
    assert t == pytest.approx(float(grid[nll.argmin()]), abs=2e-3)
    assert t == pytest.approx(2.0, abs=0.1)


def test_bigram_limit_is_the_bayes_nll_of_a_first_order_chain_and_a_count_estimate_otherwise():
    first = MarkovSource(order=1, vocab_size=5, concentration=0.5, seed=1)
    seqs = first.sample(200, 20, seed=3)
    assert exp.bigram_limit(first, seqs) == pytest.approx(first.bayes_nll(seqs), abs=1e-12)
    second = MarkovSource(order=2, vocab_size=4, concentration=1.0, hierarchy=5.0, seed=0)
    seqs = second.sample(4000, 50, seed=3)  # count P(next | previous) on a large sample, score the same sequences
    counts = np.zeros((4, 4))
    np.add.at(counts, (seqs[:, :-1], seqs[:, 1:]), 1)
    marginal = np.bincount(seqs[:, 0], minlength=4) / len(seqs)
    conditional = (counts / counts.sum(1, keepdims=True))[seqs[:, :-1], seqs[:, 1:]]  # (N, L - 1)
    counted = -(np.log(marginal[seqs[:, 0]]).sum() + np.log(conditional).sum()) / seqs.size
    assert exp.bigram_limit(second, seqs) == pytest.approx(counted, abs=2e-3)
    assert exp.bigram_limit(second, seqs) > second.bayes_nll(seqs)

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
    assert set(checks) == {"gap_falls", "gap_small", "temperature"}
    assert {c["part"] for c in checks.values()} == {"along the path", "well trained", "temperature"}
    assert {n: (c["floor"], c["direction"]) for n, c in checks.items()} == {
        "gap_falls": (0.005, "above"), "gap_small": (0.01, "below"), "temperature": (0.05, "within")}
    n = data["numbers"]
    size = exp.sizes(quick=True)
    steps = list(size["steps"])
    assert n["steps"] == steps and n["positions"] == size["test"] * exp.LENGTH
    assert len(n["seeds"]) >= 2 and all(len(c["seeds"]) == len(n["seeds"]) for c in checks.values())
    for key in exp.KEYS:  # [seed][point of the path]
        assert len(n[key]) == len(n["seeds"]) and all(len(row) == len(steps) for row in n[key]), key
    for s in range(len(n["seeds"])):
        for j in range(len(steps)):
            assert math.isclose(n["gap"][s][j], n["ece"][s][j] - n["control"][s][j], abs_tol=1e-12)
            assert math.isclose(n["excess"][s][j], n["nll"][s][j] - n["bayes"][s][j], abs_tol=1e-12)
            assert math.isclose(n["log_temperature"][s][j], math.log(n["temperature"][s][j]), abs_tol=1e-12)
            assert 0.25 <= n["temperature"][s][j] <= 4 and n["control"][s][j] > 0
            assert n["nll_scaled"][s][j] <= n["nll"][s][j] + 1e-3  # T is fitted on validation, scored on test
            assert sum(n["reliability"][s][j]["counts"]) == n["positions"]
    # the checks read the path's ends
    assert checks["gap_falls"]["value"] == pytest.approx(np.mean([g[0] - g[-1] for g in n["gap"]]))
    assert checks["gap_small"]["value"] == pytest.approx(np.mean([g[-1] for g in n["gap"]]))
    assert checks["temperature"]["value"] == pytest.approx(np.mean([t[-1] for t in n["log_temperature"]]))
    assert (out / "path.png").exists() and (out / "reliability.png").exists()


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


def test_the_control_is_the_ece_of_labels_drawn_from_the_prediction():
    probs = torch.tensor([[0.7, 0.3]]).repeat(1000, 1)  # (N, 2): one bin, confidence 0.7 on class 0
    eces = exp.control_eces(probs, draws=3, seed=5)
    generator = torch.Generator().manual_seed(5)
    for ece in eces:  # one bin: the ECE is |accuracy - 0.7|, accuracy the share of draws that are class 0
        labels = torch.multinomial(probs, 1, generator=generator)[:, 0]
        assert ece == pytest.approx(abs(float((labels == 0).double().mean()) - 0.7), abs=1e-6)


def test_calibration_gap_by_hand():
    probs = torch.tensor([[0.7, 0.3]], dtype=torch.float64).repeat(1000, 1)  # one bin at confidence 0.7
    targets = torch.zeros(1000, dtype=torch.long)
    targets[:200] = 1  # class 0 right 800 times in 1000: ECE |0.8 - 0.7| = 0.1
    got = exp.calibration_gap(probs, targets, seed=3, draws=4)
    control = float(np.mean(exp.control_eces(probs, 4, 3)))
    assert got["ece"] == pytest.approx(0.1, abs=1e-12)
    assert got["control"] == pytest.approx(control, abs=1e-12)
    assert got["gap"] == pytest.approx(0.1 - control, abs=1e-12)
    assert got["reliability"]["counts"][int(0.7 * exp.N_BINS)] == 1000


def test_a_calibrated_prediction_has_a_gap_near_zero_and_a_miscalibrated_one_its_ece():
    generator = torch.Generator().manual_seed(0)
    probs = (2 * torch.randn(20000, 5, generator=generator)).softmax(-1)  # (N, 5)
    drawn = torch.multinomial(probs, 1, generator=generator)[:, 0]  # labels from the prediction itself
    assert abs(exp.calibration_gap(probs, drawn, seed=1)["gap"]) < 0.005
    sharper = (probs.log() * 2).softmax(-1)  # the same top token, over-confident
    gap = exp.calibration_gap(sharper, drawn, seed=1)
    assert gap["gap"] > 0.05 and gap["gap"] <= gap["ece"]


def test_overconfidence_by_hand():
    probs = torch.tensor([[0.9, 0.1], [0.6, 0.4], [0.2, 0.8]], dtype=torch.float64)
    targets = torch.tensor([0, 1, 1])  # right, wrong, right: accuracy 2/3, mean confidence (0.9 + 0.6 + 0.8) / 3
    assert exp.overconfidence(probs, targets) == pytest.approx((0.9 + 0.6 + 0.8) / 3 - 2 / 3, abs=1e-12)


def test_pinsker_bound_holds_for_the_true_binned_ece():
    assert exp.pinsker_bound(0.02) == pytest.approx(0.1) and exp.pinsker_bound(-1e-4) == 0.0
    generator = torch.Generator().manual_seed(4)
    for scale in (0.5, 0.9, 1.5, 3.0):  # p the truth, q a distorted model of it
        logits = 2 * torch.randn(5000, 6, generator=generator, dtype=torch.float64)
        p, q = logits.softmax(-1), (scale * logits + 0.3 * torch.randn(5000, 6, generator=generator)).softmax(-1)
        kl = float((p * (p.log() - q.log())).sum(-1).mean())  # the expected excess NLL
        conf, top = q.max(-1)
        right = p.gather(1, top[:, None])[:, 0]  # the true probability that q's top token comes next
        b = (conf * exp.N_BINS).long().clamp(max=exp.N_BINS - 1)
        count = torch.bincount(b, minlength=exp.N_BINS).double()
        true_ece = float((torch.bincount(b, right - conf, minlength=exp.N_BINS)).abs().sum() / count.sum())
        assert true_ece <= exp.pinsker_bound(kl)


def test_fit_temperature_finds_the_scale_the_labels_were_drawn_at():
    generator = torch.Generator().manual_seed(0)
    logits = 3 * torch.randn(20000, 5, generator=generator)
    labels = torch.multinomial((logits / 2.0).softmax(-1), 1, generator=generator)[:, 0]
    t = exp.fit_temperature(logits, labels)
    grid = torch.linspace(1.5, 2.5, 1001)  # an independent search: the NLL on a dense grid
    nll = torch.stack([torch.nn.functional.cross_entropy(logits.double() / g, labels) for g in grid])
    assert t == pytest.approx(float(grid[nll.argmin()]), abs=2e-3)
    assert t == pytest.approx(2.0, abs=0.1)


def test_the_path_trains_only_for_longer():
    size = {"train": 40, "val": 8, "test": 8, "d_model": 16}
    _, fit, _ = exp.splits(0, size)
    a, _ = exp.fitted(fit, 7, 3, 1e-2, size)
    b, _ = exp.fitted(fit, 7, 3, 1e-2, size)
    c, _ = exp.fitted(fit, 7, 6, 1e-2, size)
    same = all(torch.equal(x, y) for x, y in zip(a.state_dict().values(), b.state_dict().values()))
    assert same  # one seed, one budget: one model
    assert not all(torch.equal(x, y) for x, y in zip(a.state_dict().values(), c.state_dict().values()))

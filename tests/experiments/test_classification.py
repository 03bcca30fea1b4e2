import math

import numpy as np
import torch
from torch import nn
from torch.distributions import Categorical, MultivariateNormal, kl_divergence

from redthread.data.images import load_digits
from redthread.data.regression import RegressionData
from redthread.experiments import classification
from redthread.experiments.classification import (
    BUDGET,
    DIGIT_LRS,
    GAUSS_LRS,
    GRID,
    calibrated_control,
    digit_lr,
    digit_models,
    digits_with_validation,
    gaussian_data,
    gaussian_lr,
    loglog_slope,
    mean_kl,
    three_classes,
    top1_ece,
)
from redthread.experiments.report import Report
from redthread.experiments.stats import BELOW, SEED_SETS, run_seeds, tuning_seed
from redthread.train.calibration import calibration


def test_classification_quick_structure(quick_report):
    report, md, data, out = quick_report("classification")
    names = {c["name"] for c in data["checks"]}
    assert names == {"kl_slope_softmax", "kl_slope_mlp", "ece_excess_softmax", "ece_excess_mlp"}
    assert set(data["parts"]) == {"known posterior, softmax regression", "known posterior, MLP",
                                  "calibration, softmax regression", "calibration, MLP"}
    for c in data["checks"]:
        assert c["claim"] == "C2" and c["direction"] == BELOW
        assert len(c["seeds"]) >= 2 and c["interval"] is not None
    nums = data["numbers"]
    assert len(nums["sizes"]) >= 3 and len(nums["seeds"]) >= 2
    for name in ("softmax regression", "MLP"):
        assert all(k >= 0 and math.isfinite(k) for row in nums["kl"][name] for k in row)
        d = nums["digits"][name]
        assert all(0 <= v <= 1 for key in ("accuracy", "ece", "floor") for v in d[key])
        assert all(math.isclose(e - f, x, abs_tol=1e-12) for e, f, x in zip(d["ece"], d["floor"], d["excess"]))
    assert (out / "kl_vs_n.png").is_file()
    assert data["tuning"] == []  # --quick: no sweep
    assert all(lrs == [GAUSS_LRS[name][1]] * len(nums["sizes"]) for name, lrs in nums["learning_rates"].items())


def test_posterior_is_bayes_rule():
    dist = three_classes(torch.float64)
    x, _ = dist.sample(200, torch.Generator().manual_seed(0))
    joint = torch.stack([MultivariateNormal(m, dist.cov).log_prob(x) for m in dist.means], -1) + dist.priors.log()
    assert torch.allclose(dist.posterior_logits(x).log_softmax(-1), joint.log_softmax(-1), atol=1e-10)


def test_samples_follow_the_priors_and_means():
    dist = three_classes(torch.float64)
    x, k = dist.sample(40000, torch.Generator().manual_seed(1))
    freq = torch.bincount(k, minlength=3).double() / len(k)
    assert torch.allclose(freq, dist.priors, atol=0.01)
    for j in range(3):
        assert torch.allclose(x[k == j].mean(0), dist.means[j], atol=0.05)
    assert torch.allclose(torch.cov((x[k == 0] - dist.means[0]).T), dist.cov, atol=0.05)


def test_mean_kl_matches_torch():
    g = torch.Generator().manual_seed(2)
    a, b = torch.randn(50, 4, generator=g, dtype=torch.float64), torch.randn(50, 4, generator=g, dtype=torch.float64)
    expected = kl_divergence(Categorical(logits=a), Categorical(logits=b)).mean()
    assert math.isclose(mean_kl(a, b), float(expected), rel_tol=1e-10)
    assert mean_kl(a, a + 3.0) < 1e-12  # a shift of every logit is the same distribution


def test_loglog_slope_matches_polyfit():
    xs, ys = [10, 20, 40, 80], [1.0, 0.6, 0.2, 0.13]
    assert math.isclose(loglog_slope(xs, ys), np.polyfit(np.log(xs), np.log(ys), 1)[0], rel_tol=1e-10)
    assert math.isclose(loglog_slope(xs, [3.0 / x for x in xs]), -1.0, rel_tol=1e-10)


def test_top1_ece_matches_the_library_calibration():
    g = torch.Generator().manual_seed(3)
    logits = 3 * torch.randn(300, 5, generator=g, dtype=torch.float64)
    labels = torch.randint(0, 5, (300,), generator=g)
    identity = nn.Linear(5, 5, bias=False).double()
    with torch.no_grad():
        identity.weight.copy_(torch.eye(5))
    data = RegressionData(logits[:10], labels[:10], logits, labels)
    ref = calibration(identity, data, "val", n_bins=15, batch_size=64)
    assert math.isclose(float(top1_ece(logits.softmax(-1), labels)), ref.ece, rel_tol=1e-9, abs_tol=1e-12)


def test_control_draws_many_eces_at_once():
    g = torch.Generator().manual_seed(4)
    probs = torch.randn(100, 3, generator=g, dtype=torch.float64).softmax(-1)
    draws = calibrated_control(probs, torch.Generator().manual_seed(5), draws=7)
    assert draws.shape == (7,) and bool(((draws >= 0) & (draws <= 1)).all())
    labels = torch.multinomial(probs, 7, replacement=True, generator=torch.Generator().manual_seed(5)).T  # (7, N)
    assert torch.allclose(draws, torch.stack([top1_ece(probs, row) for row in labels]))
    sure = torch.nn.functional.one_hot(torch.arange(100) % 3, 3).double()  # certain predictions: labels always agree
    assert float(calibrated_control(sure, g, draws=5).max()) == 0.0


def test_digits_validation_split():
    tune, final = digits_with_validation(3)
    (xt, yt), (xv, _) = tune.split("train"), tune.split("val")
    assert torch.equal(xt, final.split("train")[0]) and torch.equal(yt, final.split("train")[1])
    assert torch.equal(final.split("val")[0], load_digits(seed=3).split("val")[0])  # the test images of seed 3
    train_images = load_digits(seed=3).split("train")[0]
    train_rows = {r.numpy().tobytes() for r in train_images}
    assert all(r.numpy().tobytes() in train_rows for r in xv)  # validation images come from the training images
    assert len(xt) + len(xv) == len(train_images)


def test_the_module_declares_its_plan():
    assert not hasattr(classification, "BUDGETS")  # not a comparative claim: one budget
    assert BUDGET["steps"] > BUDGET["quick_steps"] and BUDGET["digit_steps"] > BUDGET["quick_digit_steps"]
    assert set(GRID.values()) == {*GAUSS_LRS.values(), *DIGIT_LRS.values()}


def _fake_fits(monkeypatch, best: float) -> list[int]:
    """fit and fit_gaussian record their seed and return the learning rate; val_nll scores it, lowest at `best`."""
    fitted = []
    monkeypatch.setattr(classification, "fit", lambda model, data, lr, *args, **kwargs: fitted.append(args[2]) or lr)
    monkeypatch.setattr(classification, "fit_gaussian",
                        lambda name, dist, data, lr, steps, seed: fitted.append(seed) or lr)
    monkeypatch.setattr(classification, "val_nll", lambda lr, data: (math.log(lr) - math.log(best)) ** 2)
    return fitted


def test_gaussian_learning_rates_are_tuned_on_the_tuning_seed_only(monkeypatch):
    best = GAUSS_LRS["MLP"][1]
    fitted = _fake_fits(monkeypatch, best)
    report = Report("classification", "C2")
    assert gaussian_lr(report, "MLP", three_classes(), 40, steps=5, seed=100, quick=False) == best
    assert set(fitted) == {tuning_seed(100)} and report.tunings[0]["setting"] == "lr, MLP, Gaussian classes, n = 40"
    assert not any(tuning_seed(o) in run_seeds(o, quick=False) for o in SEED_SETS)
    fitted.clear()
    assert gaussian_lr(report, "MLP", three_classes(), 40, steps=5, seed=100, quick=True) == best  # the middle
    assert fitted == [] and len(report.tunings) == 1  # --quick: no sweep


def test_digit_learning_rates_are_tuned_on_the_tuning_seed_and_verdict_models_trained_fresh(monkeypatch):
    best = DIGIT_LRS["softmax regression"][1]
    fitted = _fake_fits(monkeypatch, best)
    report = Report("classification", "C2")
    assert digit_lr(report, "softmax regression", steps=5, seed=0, quick=False) == best
    assert set(fitted) == {tuning_seed(0)} and not report.tunings[0]["edge"]
    fitted.clear()
    models = digit_models(lambda: None, best, run_seeds(0, quick=False), steps=5)
    assert fitted == run_seeds(0, quick=False) and all(m == best for m, _ in models)  # one fresh fit per verdict seed


def test_gaussian_draws_depend_on_seed_and_n():
    dist = three_classes()
    a, b = gaussian_data(dist, 40, seed=0), gaussian_data(dist, 40, seed=50)
    assert a.split("train")[0].shape == (40, 2) and a.split("val")[0].shape == (20, 2)
    assert not torch.equal(a.split("train")[0], b.split("train")[0])
    assert torch.equal(a.split("train")[0], gaussian_data(dist, 40, seed=0).split("train")[0])

"""The bottom rungs (C1, C2, C6): linear regression against scikit-learn, its Gaussian likelihood,
gradient descent through the shared loop landing on the closed form, Nadaraya-Watson as attention,
the classifiers, the regression data source, and the `run_regression` report."""

import math

import numpy as np
import pytest
import torch
from sklearn.linear_model import LinearRegression as SkLinearRegression
from sklearn.metrics import r2_score as sk_r2_score
from torch.distributions import Categorical, Normal

from redthread.commands.regression import run_regression
from redthread.data.regression import RegressionData, make_regression
from redthread.errors import RedthreadError
from redthread.models.likelihoods import normal_nll, token_nll
from redthread.models.regression import (
    LinearRegression,
    MLPClassifier,
    MLPRegressor,
    NadarayaWatson,
    SoftmaxRegression,
)
from redthread.train.fit import fit_gd
from redthread.train.loop import TrainConfig, train

ATOL64 = 1e-8


def random_linear(n=80, F=5, seed=0):
    """Features on very different scales and offsets, a linear mean and Gaussian noise (float64)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, F)) * rng.uniform(0.1, 10, F) + rng.uniform(-5, 5, F)
    y = X @ rng.normal(size=F) + 3.0 + rng.normal(scale=0.7, size=n)
    return X, y


def quick_cfg(**kw) -> TrainConfig:
    base = dict(max_iters=200, batch_size=64, lr=0.05, min_lr=1e-3, warmup_iters=10, weight_decay=0.0,
                eval_interval=10_000, eval_batches=1, log_interval=10_000, seed=0, device="cpu")
    base.update(kw)
    base["eval_interval"] = base["log_interval"] = base["max_iters"]
    return TrainConfig(**base)


# ---------------------------------------------------------------- linear regression (C1)

def test_linear_regression_matches_sklearn():
    X, y = random_linear()
    ours = LinearRegression().fit(X, y)
    ref = SkLinearRegression().fit(X, y)
    assert ours.coef_.dtype == torch.float64 and ours.coef_.shape == (X.shape[1],)
    np.testing.assert_allclose(ours.coef_.numpy(), ref.coef_, rtol=0, atol=ATOL64)
    assert ours.intercept_ == pytest.approx(ref.intercept_, rel=0, abs=ATOL64)
    np.testing.assert_allclose(ours.predict(X).numpy(), ref.predict(X), rtol=0, atol=ATOL64)


def test_linear_regression_without_intercept_matches_sklearn():
    X, y = random_linear(seed=1)
    ours = LinearRegression(fit_intercept=False).fit(X, y)
    ref = SkLinearRegression(fit_intercept=False).fit(X, y)
    np.testing.assert_allclose(ours.coef_.numpy(), ref.coef_, rtol=0, atol=ATOL64)
    assert ours.intercept_ == 0.0


def test_linear_regression_noise_var_is_rss_over_n():
    X, y = random_linear()
    model = LinearRegression().fit(X, y)
    rss = float(((y - model.predict(X).numpy()) ** 2).sum())
    n, p = X.shape[0], X.shape[1] + 1
    assert model.noise_var_ == pytest.approx(rss / n, rel=1e-12)  # the maximum-likelihood variance
    assert model.noise_var_unbiased_ == pytest.approx(rss / (n - p), rel=1e-12)


def test_linear_regression_distribution_matches_predict():
    X, y = random_linear()
    model = LinearRegression().fit(X, y)
    dist = model.distribution(X)
    assert isinstance(dist, Normal)
    torch.testing.assert_close(dist.mean, model.predict(X), rtol=0, atol=0)
    torch.testing.assert_close(dist.stddev, torch.full((X.shape[0],), math.sqrt(model.noise_var_), dtype=torch.float64))
    # nll is the mean Gaussian NLL: -log N(y; predict, noise_var_), the likelihood MSE stands for
    expected = -dist.log_prob(torch.as_tensor(y)).mean().item()
    assert model.nll(X, y) == pytest.approx(expected, rel=1e-12)
    # at the MLE variance, the NLL is 0.5 log(2 pi e s^2): MSE and likelihood carry the same information
    assert model.nll(X, y) == pytest.approx(0.5 * math.log(2 * math.pi * math.e * model.noise_var_), rel=1e-12)


def test_linear_regression_score_matches_sklearn_r2():
    X, y = random_linear()
    X_test, y_test = random_linear(seed=3)
    model = LinearRegression().fit(X, y)
    pred = model.predict(X_test).numpy()
    assert model.score(X_test, y_test) == pytest.approx(sk_r2_score(y_test, pred), rel=0, abs=1e-12)


def test_linear_regression_accepts_numpy_tensors_and_one_feature():
    X, y = random_linear(F=1)
    a = LinearRegression().fit(X, y)
    b = LinearRegression().fit(torch.as_tensor(X).float(), torch.as_tensor(y))
    c = LinearRegression().fit(X[:, 0], y)  # (N,) is one feature
    torch.testing.assert_close(a.coef_, c.coef_, rtol=0, atol=0)
    torch.testing.assert_close(a.coef_, b.coef_, rtol=1e-5, atol=1e-5)  # float32 input, float64 fit


def test_linear_regression_gd_matches_closed_form():
    """Maximising the Gaussian likelihood (mean and log-variance) with the Transformer's training loop
    lands on the least-squares solution and on the MLE variance RSS / n."""
    X, y = random_linear(n=200, F=4)
    closed = LinearRegression().fit(X, y)
    gd = fit_gd(LinearRegression(), X, y)  # 500 full-batch AdamW steps on standardised data
    np.testing.assert_allclose(gd.coef_.numpy(), closed.coef_.numpy(), rtol=0, atol=1e-6)
    assert gd.intercept_ == pytest.approx(closed.intercept_, abs=1e-6)
    assert gd.noise_var_ == pytest.approx(closed.noise_var_, rel=1e-4)
    assert gd.train_result_.step == 500


def test_fit_has_no_gd_method_any_more():
    X, y = random_linear(n=20, F=2)
    with pytest.raises(RedthreadError, match="unknown fit method 'gd'.*redthread.fit_gd"):  # the deprecated alias went
        LinearRegression().fit(X, y, method="gd")


@pytest.mark.parametrize(
    "X, y, fragment",
    [
        (np.zeros((5, 2)), np.zeros(4), "different lengths"),
        (np.zeros((0, 2)), np.zeros(0), "empty"),
        (np.array([[1.0], [np.nan], [2.0]]), np.zeros(3), "NaN"),
        (np.ones((3, 1)), np.array([1.0, np.inf, 2.0]), "NaN"),
        (np.zeros((2, 2, 2)), np.zeros(2), "2-D"),
        (np.zeros((3, 1)), np.zeros((3, 2)), "1-D"),
        ([[1.0], ["a"], [2.0]], np.zeros(3), "numeric"),
    ],
)
def test_linear_regression_bad_inputs_raise_one_line(X, y, fragment):
    with pytest.raises(RedthreadError) as e:
        LinearRegression().fit(X, y)
    assert fragment in str(e.value) and "\n" not in str(e.value)


def test_linear_regression_use_errors_raise_one_line():
    X, y = random_linear(F=3)
    with pytest.raises(RedthreadError, match="not fitted"):
        LinearRegression().predict(X)
    model = LinearRegression().fit(X, y)
    with pytest.raises(RedthreadError, match="X has 2 features, the model was fitted on 3"):
        model.predict(X[:, :2])
    with pytest.raises(RedthreadError, match="unknown fit method"):
        LinearRegression().fit(X, y, method="newton")


# ---------------------------------------------------------------- Nadaraya-Watson attention (C6)

def nw_memory(n=30, seed=0):
    g = torch.Generator().manual_seed(seed)
    X = torch.rand(n, 2, generator=g, dtype=torch.float64) * 4 - 2
    y = torch.sin(X[:, 0]) + X[:, 1] + 0.1 * torch.randn(n, generator=g, dtype=torch.float64)
    return X, y


def test_nadaraya_watson_weights_match_gaussian_kernel():
    X, y = nw_memory()
    model = NadarayaWatson(bandwidth=0.4).double().fit_memory(X, y).eval()
    q = torch.rand(7, 2, generator=torch.Generator().manual_seed(1), dtype=torch.float64) * 4 - 2
    h = model.bandwidth  # 0.4 up to the float32 rounding of log h at construction
    kernel = torch.exp(-((q[:, None, :] - X[None]) ** 2).sum(-1) / (2 * h**2))  # (7, 30), explicit
    expected = kernel / kernel.sum(-1, keepdim=True)
    att = model.attention_weights(q)
    torch.testing.assert_close(att, expected, rtol=0, atol=1e-12)
    mean, log_var = model(q)
    torch.testing.assert_close(mean, (expected * y).sum(-1), rtol=0, atol=1e-12)  # sum_i w_i y_i
    floor = model.log_noise_var.detach().exp()
    spread = (expected * (y - mean[:, None]) ** 2).sum(-1) + floor  # weighted variance + the noise floor
    torch.testing.assert_close(log_var.exp(), spread, rtol=1e-12, atol=0)


def test_nadaraya_watson_leaves_one_out_in_training():
    X, y = nw_memory()
    model = NadarayaWatson(bandwidth=0.5).double().fit_memory(X, y)
    loo = model.train().attention_weights(X, exclude_self=True)  # the query batch is the memory
    assert torch.all(loo.diagonal() == 0)  # a training query never attends to itself
    torch.testing.assert_close(loo.sum(-1), torch.ones(len(X), dtype=torch.float64))
    full = model.attention_weights(X, exclude_self=False)
    assert torch.all(full.diagonal() > loo.diagonal())
    # forward follows the mode: leave-one-out in training, the whole memory in evaluation
    torch.testing.assert_close(model.train()(X)[0], loo @ y)
    torch.testing.assert_close(model.eval()(X)[0], full @ y)


def test_nadaraya_watson_recovers_sine_far_better_than_linear():
    """The learned-width attention estimate of E[y|x] = sin(2x) is 4x closer to the truth than the best line."""
    problem = make_regression("sine", 450, seed=0)
    X, y = problem.X, problem.y
    data = RegressionData(X[:300], y[:300], X[300:], y[300:])
    grid = problem.grid(200)
    truth = problem.true_mean(grid)
    model = NadarayaWatson().fit_memory(X[:300], y[:300])
    h0 = model.bandwidth
    train(model, data, quick_cfg(max_iters=150, batch_size=100), objective=normal_nll, progress=False)
    model.eval()
    assert model.bandwidth < h0  # Silverman's width over-smooths a sine of period pi
    with torch.no_grad():
        nw_rmse = (model(grid)[0] - truth).pow(2).mean().sqrt().item()
    linear = LinearRegression().fit(X[:300], y[:300])
    lin_rmse = (linear.predict(grid) - truth.double()).pow(2).mean().sqrt().item()
    assert nw_rmse * 4 < lin_rmse, (nw_rmse, lin_rmse)


def test_nadaraya_watson_errors():
    with pytest.raises(RedthreadError, match="fit_memory"):
        NadarayaWatson(bandwidth=1.0)(torch.zeros(2, 1))
    with pytest.raises(RedthreadError, match="bandwidth"):
        NadarayaWatson(bandwidth=0.0)
    with pytest.raises(RedthreadError, match="different lengths"):
        NadarayaWatson().fit_memory(torch.zeros(4, 1), torch.zeros(3))


# ---------------------------------------------------------------- MLP regressor and the classifiers (C2)

def test_mlp_regressor_outputs_and_distribution():
    x = torch.randn(5, 3)
    homo = MLPRegressor(3, 8, 2)
    mean, log_var = homo(x)
    assert mean.shape == log_var.shape == (5,)
    assert torch.all(log_var == log_var[0])  # one learned variance for every x
    hetero = MLPRegressor(3, 8, 1, heteroscedastic=True)
    dist = hetero.distribution(x)
    assert isinstance(dist, Normal) and dist.mean.shape == (5,)
    y = torch.randn(5)
    torch.testing.assert_close(hetero.nll(x, y), -dist.log_prob(y).mean())
    with pytest.raises(RedthreadError, match="n_layer"):
        MLPRegressor(3, 8, 0)


def separable_blobs(n=300, seed=0):
    """Three well-separated Gaussian blobs in 2-D: linearly separable with high probability."""
    g = torch.Generator().manual_seed(seed)
    centres = torch.tensor([[0.0, 3.0], [-3.0, -2.0], [3.0, -2.0]])
    y = torch.randint(3, (n,), generator=g)
    X = centres[y] + 0.5 * torch.randn(n, 2, generator=g)
    return X, y


@pytest.mark.parametrize("make", [lambda: SoftmaxRegression(2, 3), lambda: MLPClassifier(2, 3, d_hidden=16, n_layer=1)])
def test_classifier_learns_separable_problem(make):
    X, y = separable_blobs(400)
    data = RegressionData(X[:300], y[:300], X[300:], y[300:])  # int64 labels through the same data source
    torch.manual_seed(0)
    model = make()
    train(model, data, quick_cfg(max_iters=150), objective=token_nll, progress=False)
    model.eval()
    with torch.no_grad():
        accuracy = (model.predict(X[300:]) == y[300:]).float().mean().item()
        dist = model.distribution(X[300:])
    assert accuracy >= 0.98
    assert isinstance(dist, Categorical) and dist.probs.shape == (100, 3)
    torch.testing.assert_close(dist.probs.sum(-1), torch.ones(100))
    torch.testing.assert_close(model.nll(X[300:], y[300:]), -dist.log_prob(y[300:]).mean())


# ---------------------------------------------------------------- data

def test_regression_data_batches_and_eval():
    X, y = torch.arange(10.0)[:, None], torch.arange(10.0)
    data = RegressionData(X[:7], y[:7], X[7:], y[7:])
    g = torch.Generator().manual_seed(0)
    xb, yb = data.batch("train", 5, g)
    assert xb.shape == (5, 1) and len(set(yb.tolist())) == 5  # without replacement
    xb, yb = data.batch("train", 100, g)
    assert sorted(yb.tolist()) == list(range(7))  # a batch as large as the split is the split
    seen = torch.cat([b[1] for b in data.eval_batches("val", 2)])
    assert seen.tolist() == [7.0, 8.0, 9.0]  # every example once
    assert len(list(data.eval_batches("train", 2, max_batches=2))) == 2
    assert data.tokens_per_char("val") is None
    with pytest.raises(RedthreadError, match="unknown split"):
        data.batch("test", 2, g)


def test_make_regression_kinds():
    sine = make_regression("sine", 4000, seed=0, noise=0.3)
    resid = sine.y - sine.true_mean(sine.X)
    assert sine.X.shape == (4000, 1) and abs(resid.std().item() - 0.3) < 0.02
    het = make_regression("heteroscedastic", 4000, seed=0)
    resid = (het.y - het.true_mean(het.X)).abs()
    near, far = het.X[:, 0].abs() < 0.5, het.X[:, 0].abs() > 2.5
    assert resid[far].mean() > 3 * resid[near].mean()  # the noise grows with |x|
    lin = make_regression("linear", 50, seed=0, n_features=3)
    assert lin.X.shape == (50, 3) and lin.grid(10).shape == (10, 3)
    with pytest.raises(RedthreadError, match="unknown regression kind"):
        make_regression("cubic", 10)


# ---------------------------------------------------------------- the report

def test_run_regression_writes_its_files(tmp_path):
    lines = []
    rows = run_regression("heteroscedastic", n=40, seed=0, out=tmp_path, say=lines.append, steps=5)
    assert [r["model"] for r in rows][:2] == ["linear regression"] * 2 and len(rows) == 4
    for r in rows:
        assert math.isfinite(r["rmse_true_mean"]) and math.isfinite(r["val_nll"]) and r["train_s"] >= 0
    for name in ("regression.csv", "regression.md", "regression.png"):
        assert (tmp_path / name).stat().st_size > 0
    assert len((tmp_path / "regression.csv").read_text().splitlines()) == 5  # header + one row per rung
    assert any("RMSE" in line for line in lines)

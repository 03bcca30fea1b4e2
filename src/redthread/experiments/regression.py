"""Claim C1: linear regression's prediction estimates E[y | x]; MSE is the Gaussian likelihood.

Set-up: y = w.x + 0.5 + noise (noise std 0.5, 3 features), so E[y | x] is known exactly. For each
training size n, fit least squares (the closed form) on R independent draws and measure the mean
squared error of the prediction against the true E[y | x] on held-out points. Ordinary least
squares is unbiased with covariance sigma^2 (X^T X)^-1, so that error shrinks as
sigma^2 (F + 1) / n: a slope of -1 on log-log axes. Then the same data fitted by gradient descent
on the Gaussian negative log-likelihood, through the shared training loop, lands on the same
coefficients as minimising the squared error.
"""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import torch

from redthread.data.regression import make_regression
from redthread.experiments.report import Report
from redthread.models.regression import LinearRegression
from redthread.train.fit import fit_gd

NAME, CLAIMS = "regression", "C1"
NOISE, FEATURES = 0.5, 3
SLOPE_RANGE = (-1.2, -0.8)  # the ~1/n trend
AGREE = 1e-3  # max |coef_MSE - coef_likelihood|


def run(quick: bool = False, seed: int = 0, progress=None) -> Report:
    sizes = [20, 50, 100, 300, 1000, 3000] + ([] if quick else [10000])
    reps = 20 if quick else 100
    report = Report(
        NAME, CLAIMS, quick=quick,
        setup=(
            f"y = w·x + 0.5 + ε, x uniform in [-2, 2]^{FEATURES}, ε ~ N(0, {NOISE}²). For n in {sizes}: least squares "
            f"on {reps} independent training sets; error = mean squared distance between the prediction and the true "
            "E[y|x] on 200 held-out points, averaged over the sets. Then n = 1000 fitted again by AdamW on the Gaussian "
            "negative log-likelihood through the shared training loop (full batch, 3000 steps)."
        ),
        criterion=(
            f"The log-log slope of error against n lies in [{SLOPE_RANGE[0]}, {SLOPE_RANGE[1]}] (theory: -1, error ≈ "
            f"σ²(F+1)/n), and the likelihood-trained coefficients equal the least-squares ones within {AGREE}."
        ),
    )
    errors, theory = [], []
    for i, n in enumerate(sizes):
        err = 0.0
        for r in range(reps):
            prob = make_regression("linear", n, seed=seed * 100_003 + r, noise=NOISE, n_features=FEATURES, dtype=torch.float64)
            grid = prob.grid(200)
            fit = LinearRegression().fit(prob.X, prob.y)
            err += torch.mean((fit.predict(grid) - prob.true_mean(grid)) ** 2).item() / reps
        errors.append(err)
        theory.append(NOISE**2 * (FEATURES + 1) / n)
        if progress is not None:
            progress.update(0.8 * (i + 1) / len(sizes), f"n={n}")
    logn, loge = torch.log(torch.tensor(sizes, dtype=torch.float64)), torch.log(torch.tensor(errors))
    slope = (((logn - logn.mean()) * (loge - loge.mean())).sum() / ((logn - logn.mean()) ** 2).sum()).item()

    prob = make_regression("linear", 1000, seed=seed, noise=NOISE, n_features=FEATURES, dtype=torch.float64)
    mse = LinearRegression().fit(prob.X, prob.y)
    nll = fit_gd(LinearRegression(), prob.X, prob.y, max_iters=3000, lr=0.05, batch_size=1000, seed=seed)
    gap = max((mse.coef_ - nll.coef_).abs().max().item(), abs(float(mse.intercept_) - float(nll.intercept_)))
    if progress is not None:
        progress.update(1.0)

    report.number("sizes", sizes)
    report.number("error_vs_true_mean", errors)
    report.number("theory", theory)
    report.number("slope", slope)
    report.number("coef_least_squares", mse.coef_)
    report.number("coef_likelihood", nll.coef_)
    report.number("intercepts", [float(mse.intercept_), float(nll.intercept_)])
    report.number("noise_var_estimate", float(mse.noise_var_))
    report.number("max_coef_gap", gap)

    report.decide(SLOPE_RANGE[0] <= slope <= SLOPE_RANGE[1], f"slope in [{SLOPE_RANGE[0]}, {SLOPE_RANGE[1]}]", f"{slope:.3f}")
    report.decide(gap <= AGREE, f"MSE and likelihood fits agree within {AGREE}", f"max gap {gap:.2e}")

    report.table(["n", "error vs E[y|x]", "theory σ²(F+1)/n", "ratio"],
                 [[n, e, t, e / t] for n, e, t in zip(sizes, errors, theory)], title="Error against the true conditional mean")
    report.table(["", "least squares (MSE)", "Gaussian likelihood (AdamW, loop)"],
                 [[f"w{j}", float(mse.coef_[j]), float(nll.coef_[j])] for j in range(FEATURES)]
                 + [["intercept", float(mse.intercept_), float(nll.intercept_)]], title="Same data, two objectives")
    fig, ax = plt.subplots(figsize=(5.5, 4), layout="constrained")
    ax.loglog(sizes, errors, "o-", label="least squares, measured")
    ax.loglog(sizes, theory, "--", label="σ²(F+1)/n")
    ax.set_xlabel("training examples n")
    ax.set_ylabel("mean (ŷ(x) − E[y|x])²")
    ax.set_title(f"slope {slope:.2f}")
    ax.legend()
    report.figure("error_vs_n", fig, f"The prediction converges to E[y|x] as 1/n (slope {slope:.2f}; noise variance estimate "
                  f"{float(mse.noise_var_):.3f}, true {NOISE**2}).")
    if not math.isfinite(slope):
        report.note("The slope is not finite: some error was zero or not a number.")
    return report

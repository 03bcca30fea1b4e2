"""Claim C1: linear regression's prediction estimates E[y | x]; MSE is the Gaussian likelihood.

Set-up: y = w.x + 0.5 + noise (noise std 0.5, 3 features), so E[y | x] is known exactly. For each
training size n, fit least squares (the closed form) on R independent draws and measure the mean
squared error of the prediction against the true E[y | x] on held-out points. Ordinary least
squares is unbiased with covariance sigma^2 (X^T X)^-1, so that error shrinks as
sigma^2 (F + 1) / n: a slope of -1 on log-log axes. Then the same data fitted by gradient descent
on the Gaussian negative log-likelihood, through the shared training loop, lands on the same
coefficients as minimising the squared error.

Over seeds: every seed draws its own training sets, so the slope and the coefficient gap are
measured once per seed and decided by their 95% interval over the seeds against thresholds fixed
in `experiments/criteria.py` (the slope between -1.5 and -0.5, two one-sided checks around the
theoretical -1; the gap under a tenth of the coefficients' standard error).
"""

from __future__ import annotations

import math

import torch

from redthread.data.regression import make_regression
from redthread.experiments.criteria import ABOVE, BELOW, Criterion
from redthread.experiments.report import Report
from redthread.experiments.stats import run_seeds
from redthread.lang import say
from redthread.models.regression import LinearRegression
from redthread.plotting import pyplot
from redthread.train.fit import fit_gd

plt = pyplot()

NAME, CLAIMS = "regression", "C1"
HYPOTHESIS = ("Least squares estimates E[y | x]: its error against the true conditional mean falls as 1/n (the "
              "unbiased rate), and minimising MSE gives the same fit as maximising the Gaussian likelihood.")
BUDGET = {"sizes": "20 .. 10000", "training sets per size": 40, "gradient steps (the likelihood fit)": 3000}
GRID: dict = {}  # nothing tuned: closed forms, and a fixed rate for the likelihood fit

# The pre-registered criteria: each floor is the smallest effect size of interest, with its reason.
CRITERIA: dict[str, Criterion] = {
    # OLS is unbiased with covariance s^2 (X^T X)^-1, so E||y_hat - E[y|x]||^2 = s^2 (F + 1) / n: slope -1 in log-log.
    # A plateau (an estimator that does not converge to E[y|x]) gives a slope near 0; -0.5 is the root-n rate of a
    # slower estimator, and -1.5 would be faster than any unbiased estimator can be. Two one-sided checks.
    "slope_above": Criterion("C1", "E[y|x]", "log-log slope of error vs true E[y|x] against n", -1.5, ABOVE,
                             "theory gives -1 (error = s^2 (F+1)/n); below -1.5 would beat the Cramer-Rao rate"),
    "slope_below": Criterion("C1", "E[y|x]", "log-log slope of error vs true E[y|x] against n", -0.5, BELOW,
                             "theory gives -1; a fit that does not converge to E[y|x] plateaus (slope -> 0), -0.5 is "
                             "half-way in the exponent"),
    "coef_gap": Criterion("C1", "MSE = Gaussian likelihood", "max |coefficient, least squares - Gaussian likelihood "
                          "(fit_gd)| at n = 1000", 1e-3, BELOW,
                          "a tenth of the coefficients' own standard error at n = 1000 (s / (sqrt(n) sd(x)) = 0.014): "
                          "the two fits cannot be told apart at the data's precision"),
}
NOISE, FEATURES = 0.5, 3
GD_N = 1000  # training examples of the MSE-vs-likelihood comparison


def log_log_slope(sizes: list[int], errors: list[float]) -> float:
    """Least-squares slope of log(error) against log(n)."""
    logn, loge = torch.log(torch.tensor(sizes, dtype=torch.float64)), torch.log(torch.tensor(errors, dtype=torch.float64))
    return (((logn - logn.mean()) * (loge - loge.mean())).sum() / ((logn - logn.mean()) ** 2).sum()).item()


def error_curve(sizes: list[int], reps: int, seed: int) -> list[float]:
    """Mean squared distance of the least-squares prediction from the true E[y|x], per n, over `reps` training sets."""
    errors = []
    for n in sizes:
        err = 0.0
        for r in range(reps):
            prob = make_regression("linear", n, seed=seed * 100_003 + r, noise=NOISE, n_features=FEATURES, dtype=torch.float64)
            grid = prob.grid(200)
            fit = LinearRegression().fit(prob.X, prob.y)
            err += torch.mean((fit.predict(grid) - prob.true_mean(grid)) ** 2).item() / reps
        errors.append(err)
    return errors


def two_fits(seed: int) -> tuple[LinearRegression, LinearRegression, float]:
    """The same data fitted by least squares (closed form) and by the Gaussian likelihood (fit_gd); their max gap."""
    prob = make_regression("linear", GD_N, seed=seed, noise=NOISE, n_features=FEATURES, dtype=torch.float64)
    mse = LinearRegression().fit(prob.X, prob.y)
    nll = fit_gd(LinearRegression(), prob.X, prob.y, max_iters=3000, lr=0.05, batch_size=GD_N, seed=seed)
    gap = max((mse.coef_ - nll.coef_).abs().max().item(), abs(float(mse.intercept_) - float(nll.intercept_)))
    return mse, nll, gap


def run(quick: bool = False, seed: int = 0, progress=None) -> Report:
    sizes = [20, 50, 100, 300, 1000, 3000] + ([] if quick else [10000])
    reps = 20 if quick else 40
    seeds = run_seeds(seed, quick)
    report = Report(
        NAME, CLAIMS, quick=quick,
        setup=(
            f"y = w·x + 0.5 + ε, x uniform in [-2, 2]^{FEATURES}, ε ~ N(0, {NOISE}²). Part E[y|x]: for n in {sizes}, "
            f"least squares on {reps} independent training sets per seed; error = mean squared distance between the "
            "prediction and the true E[y|x] on 200 held-out points, averaged over the sets; one log-log slope per seed. "
            f"Part MSE = Gaussian likelihood: n = {GD_N} fitted by least squares (closed form) and by AdamW on the "
            "Gaussian negative log-likelihood through the shared training loop (`redthread.train.fit.fit_gd`, full batch, "
            f"3000 steps). Seeds {seeds}."
        ),
        criterion=(
            "E[y|x]: the log-log slope of error against n lies between -1.5 and -0.5 (theory: -1, error = σ²(F+1)/n), "
            "both ends decided by the 95% interval over seeds. MSE = Gaussian likelihood: the largest gap between the "
            "likelihood-trained and the least-squares coefficients is below 1e-3, a tenth of their standard error."
        ),
    )
    curves, slopes, fits, gaps = [], [], [], []
    for i, s in enumerate(seeds):
        curves.append(error_curve(sizes, reps, s))
        slopes.append(log_log_slope(sizes, curves[-1]))
        mse, nll, gap = two_fits(s)
        fits.append((mse, nll))
        gaps.append(gap)
        if progress is not None:
            progress.update((i + 1) / len(seeds), f"seed {s}")
    errors = [sum(c[j] for c in curves) / len(curves) for j in range(len(sizes))]  # mean over seeds
    theory = [NOISE**2 * (FEATURES + 1) / n for n in sizes]

    report.check("slope_above", slopes, seeds)
    report.check("slope_below", slopes, seeds)
    report.check("coef_gap", gaps, seeds)

    mse, nll = fits[0]
    report.number("seeds", seeds)
    report.number("sizes", sizes)
    report.number("error_vs_true_mean", errors)
    report.number("error_by_seed", curves)
    report.number("theory", theory)
    report.number("slopes", slopes)
    report.number("coef_gaps", gaps)
    report.number("coef_least_squares", mse.coef_)
    report.number("coef_likelihood", nll.coef_)
    report.number("intercepts", [float(mse.intercept_), float(nll.intercept_)])
    report.number("noise_var_estimate", [float(m.noise_var_) for m, _ in fits])
    report.number("noise_var_likelihood", [float(g.noise_var_) for _, g in fits])

    report.table(["n", "error vs E[y|x] (mean over seeds)", "theory σ²(F+1)/n", "ratio"],
                 [[n, e, t, e / t] for n, e, t in zip(sizes, errors, theory)], title="Error against the true conditional mean")
    report.table(["seed", "slope", "max |coef gap|", "σ² least squares (RSS/n)", "σ² likelihood"],
                 [[s, sl, g, float(m.noise_var_), float(gd.noise_var_)] for s, sl, g, (m, gd) in zip(seeds, slopes, gaps, fits)],
                 title="Per seed")
    report.table(["", "least squares (MSE)", "Gaussian likelihood (AdamW, loop)"],
                 [[f"w{j}", float(mse.coef_[j]), float(nll.coef_[j])] for j in range(FEATURES)]
                 + [["intercept", float(mse.intercept_), float(nll.intercept_)]],
                 title=f"Same data, two objectives (seed {seeds[0]})")

    def draw():
        fig, ax = plt.subplots(figsize=(5.5, 4), layout="constrained")
        for c in curves:
            ax.loglog(sizes, c, "-", color="0.75", lw=1)
        ax.loglog(sizes, errors, "o-", label=say("least squares, mean over seeds", "最小二乘，各种子的平均"))
        ax.loglog(sizes, theory, "--", label="σ²(F+1)/n")
        ax.set_xlabel(say("training examples n", "训练样本数 n"))
        ax.set_ylabel(say("mean (ŷ(x) − E[y|x])²", "(ŷ(x) − E[y|x])² 的均值"))
        ax.set_title(say(f"slopes {min(slopes):.2f} … {max(slopes):.2f}", f"斜率 {min(slopes):.2f} … {max(slopes):.2f}"))
        ax.legend()
        return fig

    report.figure("error_vs_n", draw, "The prediction converges to E[y|x] as 1/n (grey: each seed; noise variance "
                  f"estimate {float(mse.noise_var_):.3f}, true {NOISE**2}).",
                  "预测以 1/n 的速度收敛到 E[y|x]（灰线：每个种子；噪声方差的估计值 "
                  f"{float(mse.noise_var_):.3f}，真实值 {NOISE**2}）。")
    if not all(math.isfinite(sl) for sl in slopes):
        report.note("Some slope is not finite: some error was zero or not a number.")
    return report

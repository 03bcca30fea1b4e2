"""`redthread regression`: every regression rung on one synthetic problem whose E[y | x] is known.

Claim C1 of the essay (a regression model estimates E[y | x], trained by Gaussian maximum
likelihood) and claim C6 (attention as a data-dependent weighted average): on one data set of
a `redthread.data.regression` kind it fits
    linear regression      closed form (least squares)
    linear regression      gradient descent on the Gaussian likelihood, the shared training loop
    MLP                    the shared loop (heteroscedastic for the heteroscedastic kind)
    Nadaraya-Watson        attention over the training set, bandwidth learned by the shared loop
and reports, for each, the RMSE of its mean against the TRUE E[y | x] on a held-out grid (and of
its std against the true std), the validation NLL in nats, the validation R^2 and the fitting
time. With `out`, it writes regression.csv, regression.md and regression.png.
"""

from __future__ import annotations

import csv
import io
import math
import time
from pathlib import Path

import torch

import redthread.lang as lang
from redthread.data.regression import RegressionData, make_regression
from redthread.errors import RedthreadError
from redthread.files import atomic_write, atomic_write_text, check_report_folder
from redthread.models.regression import (
    LinearRegression,
    MLPRegressor,
    NadarayaWatson,
    r2_score,
)
from redthread.train.fit import fit_gd
from redthread.train.loop import TrainConfig, train

MLP = dict(d_hidden=64, n_layer=2)
MLP_TRAIN = dict(max_iters=1500, batch_size=64, lr=1e-2, min_lr=1e-4, warmup_iters=50, weight_decay=0.0)
NW_TRAIN = dict(max_iters=200, batch_size=128, lr=0.05, min_lr=5e-3, warmup_iters=10, weight_decay=0.0)
GD_ITERS = 500
KINDS_ZH = {"linear": "线性", "sine": "正弦", "heteroscedastic": "异方差"}  # the problems' names in Chinese

GRID = 200  # held-out points where the estimates are compared with the truth
COLUMNS = ("model", "fit", "rmse_true_mean", "rmse_true_std", "val_nll", "val_r2", "train_s", "params")


def _train_cfg(base: dict, steps: int | None, seed: int, device: str) -> TrainConfig:
    max_iters = base["max_iters"] if steps is None else steps
    return TrainConfig(
        **{**base, "max_iters": max_iters, "warmup_iters": min(base["warmup_iters"], max_iters // 10)},
        eval_interval=max_iters, eval_batches=1, log_interval=max_iters, seed=seed, device=device,
    )


def _fit_all(problem, data: RegressionData, steps: int | None, seed: int, device: str):
    """(name, how it was fitted, short plot label, fitted model, seconds, parameters) for every rung."""
    X_tr, y_tr = data.split("train")
    fits = []

    t = time.perf_counter()
    closed = LinearRegression().fit(X_tr, y_tr)
    n_linear = X_tr.shape[1] + 2  # coefficients, intercept, noise variance
    fits.append(("linear regression", "closed form (least squares)", lang.say("linear, closed form", "线性回归，闭式解"),
                 closed, time.perf_counter() - t, n_linear))

    t = time.perf_counter()
    gd = fit_gd(LinearRegression(), X_tr, y_tr, max_iters=GD_ITERS if steps is None else steps, seed=seed)
    fits.append(("linear regression", "gradient descent, shared loop", lang.say("linear, gradient descent", "线性回归，梯度下降"),
                 gd, time.perf_counter() - t, n_linear))

    hetero = problem.kind == "heteroscedastic"
    torch.manual_seed(seed)
    mlp = MLPRegressor(X_tr.shape[1], heteroscedastic=hetero, **MLP)
    t = time.perf_counter()
    train(mlp, data, _train_cfg(MLP_TRAIN, steps, seed, device), progress=False)
    how = "shared loop, " + ("log_var(x) learned" if hetero else "one learned log_var")
    name = f"MLP {MLP['n_layer']}x{MLP['d_hidden']} tanh"
    fits.append((name, how, name, mlp.cpu().eval(), time.perf_counter() - t, _n_params(mlp)))

    t = time.perf_counter()
    nw = NadarayaWatson().fit_memory(X_tr, y_tr)
    train(nw, data, _train_cfg(NW_TRAIN, steps, seed, device), progress=False)
    nw = nw.cpu().eval()
    how = f"shared loop, leave-one-out; h = {nw.bandwidth:.3f}"
    label = lang.say(f"Nadaraya-Watson attention, h = {nw.bandwidth:.3f}", f"Nadaraya-Watson 注意力，h = {nw.bandwidth:.3f}")
    fits.append(("Nadaraya-Watson attention", how, label, nw, time.perf_counter() - t, _n_params(nw)))
    return fits


def _n_params(model: torch.nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


@torch.no_grad()
def run_regression(
    kind: str = "sine",
    n: int = 400,
    seed: int = 0,
    out: str | Path | None = None,
    say=print,
    noise: float | None = None,
    steps: int | None = None,
    device: str = "cpu",
) -> list[dict]:
    """Fit every regression rung on `n` training points of `kind`; report and return one row per rung.

    `steps` overrides the number of training steps of the gradient-trained rungs (None: their defaults).
    """
    if not isinstance(n, int) or n < 4:
        raise RedthreadError(f"n must be an integer >= 4, got {n!r}")
    if steps is not None and (not isinstance(steps, int) or steps < 1):
        raise RedthreadError(f"steps must be a positive integer, got {steps!r}")
    n_val = max(2, n // 2)
    problem = make_regression(kind, n + n_val, seed=seed, noise=noise)
    data = RegressionData(problem.X[:n], problem.y[:n], problem.X[n:], problem.y[n:])  # i.i.d. draws: a random split
    X_val, y_val = data.split("val")
    grid = problem.grid(GRID)  # (G, 1)
    true_mean, true_std = problem.true_mean(grid), problem.true_std(grid)  # (G,), (G,)

    with torch.enable_grad():
        fits = _fit_all(problem, data, steps, seed, device)
    rows, curves = [], []
    for name, how, label, model, seconds, n_params in fits:
        dist, dist_val = model.distribution(grid), model.distribution(X_val)
        mean, std = dist.mean.float(), dist.stddev.float()  # (G,), (G,)
        rows.append({
            "model": name,
            "fit": how,
            "rmse_true_mean": math.sqrt(float(((mean - true_mean) ** 2).mean())),
            "rmse_true_std": math.sqrt(float(((std - true_std) ** 2).mean())),
            "val_nll": float(-dist_val.log_prob(y_val.to(dist_val.mean.dtype)).mean()),
            "val_r2": r2_score(y_val.double(), dist_val.mean.double()),
            "train_s": seconds,
            "params": n_params,
        })
        curves.append((label, mean, std))

    say(lang.say(f"{kind}: {n} training / {n_val} validation points; RMSE against the true E[y|x] on {GRID} grid points",
                 f"{KINDS_ZH.get(kind, kind)}：训练集 {n} 个点，验证集 {n_val} 个点；RMSE 是在 {GRID} 个网格点上与真实的 "
                 "E[y|x] 之差"))
    say(_table(rows))
    if out is not None:
        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        atomic_write_text(out / "regression.csv", _csv(rows))
        atomic_write_text(out / "regression.md", _markdown(kind, n, n_val, rows))
        _plot(out / "regression.png", problem, data, grid, true_mean, true_std, curves)
        say(lang.say(f"wrote {out / 'regression.csv'}, {out / 'regression.md'}, {out / 'regression.png'}",
                     f"写出了 {out / 'regression.csv'}、{out / 'regression.md'}、{out / 'regression.png'}"))
    return rows


def _table(rows: list[dict]) -> str:
    head = f"{'model':28s} {'fit':40s} {'RMSE mean':>10s} {'RMSE std':>9s} {'val NLL':>8s} {'val R2':>7s} {'time s':>7s}"
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(
            f"{r['model']:28s} {r['fit']:40s} {r['rmse_true_mean']:>10.4f} {r['rmse_true_std']:>9.4f} "
            f"{r['val_nll']:>8.4f} {r['val_r2']:>7.4f} {r['train_s']:>7.2f}"
        )
    return "\n".join(lines)


def _csv(rows: list[dict]) -> str:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return buf.getvalue()


def _markdown(kind: str, n: int, n_val: int, rows: list[dict]) -> str:
    lines = [
        f"# Regression rungs on the `{kind}` problem",
        "",
        f"{n} training and {n_val} validation points. RMSE is measured against the true E[y|x] and the",
        f"true std(y|x) on {GRID} held-out grid points; NLL is the mean negative log-likelihood of the",
        "validation targets under each model's predictive Normal, in nats (claim C1).",
        "",
        "| model | fit | RMSE vs E[y\\|x] | RMSE vs std(y\\|x) | val NLL (nats) | val R² | time (s) | parameters |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['model']} | {r['fit']} | {r['rmse_true_mean']:.4f} | {r['rmse_true_std']:.4f} | "
            f"{r['val_nll']:.4f} | {r['val_r2']:.4f} | {r['train_s']:.2f} | {r['params']} |"
        )
    return "\n".join(lines) + "\n"


def _plot(path: Path, problem, data: RegressionData, grid, true_mean, true_std, curves) -> None:
    """The estimates of E[y|x] against the truth over the training points, one panel."""
    from redthread.plotting import pyplot

    plt = pyplot()

    X_tr, y_tr = data.split("train")
    x = grid[:, 0].numpy()
    with lang.figure_fonts():  # the words in the language chosen; Chinese in a CJK font
        fig, ax = _draw(plt, problem, X_tr, y_tr, x, true_mean, true_std, curves)
    atomic_write(path, lambda tmp: fig.savefig(tmp, format="png", dpi=110))
    plt.close(fig)


def _draw(plt, problem, X_tr, y_tr, x, true_mean, true_std, curves):
    fig, ax = plt.subplots(figsize=(8, 5))
    ax.scatter(X_tr[:, 0].numpy(), y_tr.numpy(), s=6, c="0.6", alpha=0.6, label=lang.say("training data", "训练集"))
    ax.plot(x, true_mean.numpy(), "k-", lw=2.5, label=lang.say("true E[y|x]", "真实的 E[y|x]"))
    bands = problem.kind == "heteroscedastic"
    if bands:
        for sign in (-2, 2):
            ax.plot(x, (true_mean + sign * true_std).numpy(), "k--", lw=1,
                    label=lang.say("true ±2 std", "真实的 ±2 个标准差") if sign < 0 else None)
    for i, (label, mean, std) in enumerate(curves):
        (line,) = ax.plot(x, mean.numpy(), lw=1.5, ls="--" if i == 1 else "-", label=label)
        if not bands or i == 1:  # the gradient-descent line retraces the closed form: one band is enough
            continue
        lo, hi, color = (mean - 2 * std).numpy(), (mean + 2 * std).numpy(), line.get_color()
        if float(std.max() - std.min()) > 1e-6:  # a band that follows x: shade it
            ax.fill_between(x, lo, hi, color=color, alpha=0.15)
        else:  # a constant band would cover the whole panel: outline it
            ax.plot(x, lo, ":", color=color, lw=1)
            ax.plot(x, hi, ":", color=color, lw=1)
    ax.set_xlabel("x")
    ax.set_ylabel("y")
    ax.set_title(lang.say(f"Estimates of E[y|x] on the {problem.kind} problem" + (" (bands: ±2 predicted std)" if bands else ""),
                          f"{KINDS_ZH.get(problem.kind, problem.kind)}问题上 E[y|x] 的估计"
                          + ("（带：预测的 ±2 个标准差）" if bands else "")))
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="best")
    fig.tight_layout()
    return fig, ax


def regression_ladder_command(args) -> None:
    """`redthread ladder --regression KIND`: the regression rungs on data with a known E[y|x]."""
    if args.data or args.lines or args.rungs:
        raise RedthreadError("--regression runs the regression rungs on its own data: drop --data/--lines/--rungs")
    out = Path(args.out)
    check_report_folder(out, args.overwrite)
    run_regression(args.regression, seed=args.seed, out=out)
    print(f"report: {out / 'regression.md'}")

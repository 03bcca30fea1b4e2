"""Linear regression fitted by maximum likelihood with the one training loop (claim C1).

`LinearRegression.fit` solves least squares in closed form. `fit_gd` reaches the same fit the way
every other rung is trained: a `LinearGaussian` module, y | x ~ N(x . w + b, s^2), minimises the
Gaussian negative log-likelihood with AdamW in `redthread.train`. At convergence the weights are
the least-squares ones and s^2 is RSS / n, which is the claim "MSE = Gaussian maximum likelihood"
made by the optimiser instead of by algebra.
"""

from __future__ import annotations

import torch

from redthread.data.regression import RegressionData, as_features, as_targets
from redthread.errors import check_int
from redthread.models.regression import LinearGaussian, LinearRegression
from redthread.train.loop import TrainConfig, train


def fit_gd(
    model: LinearRegression,
    X,
    y,
    *,
    max_iters: int = 500,
    lr: float = 0.05,
    batch_size: int | None = None,
    seed: int = 0,
) -> LinearRegression:
    """Fit `model` to (X, y) by maximising the Gaussian likelihood with the training loop; returns it.

    `max_iters` AdamW steps at peak learning rate `lr` (cosine-decayed), on minibatches of
    `batch_size` examples (None: min(N, 1024); N: full-batch gradient descent). The loop's result
    is kept as `model.train_result_`.
    """
    check_int("max_iters", max_iters)
    X = as_features(X, dtype=torch.float64)  # (N, F)
    y = as_targets(y, X.shape[0], dtype=torch.float64)  # (N,)
    # standardise, so one learning rate suits every feature; the fit is mapped back exactly below
    x_mean = X.mean(0) if model.fit_intercept else torch.zeros(X.shape[1], dtype=X.dtype)  # (F,)
    x_std = X.std(0, correction=0)  # (F,)
    x_std = torch.where(x_std > 0, x_std, 1.0)  # a constant feature is left unscaled
    y_mean = y.mean() if model.fit_intercept else torch.zeros((), dtype=y.dtype)
    y_std = y.std(correction=0)
    y_std = torch.where(y_std > 0, y_std, 1.0)
    Xs, ys = (X - x_mean) / x_std, (y - y_mean) / y_std
    gaussian = LinearGaussian(X.shape[1], bias=model.fit_intercept).double()
    cfg = TrainConfig(
        max_iters=max_iters, batch_size=min(X.shape[0], 1024) if batch_size is None else batch_size, lr=lr,
        min_lr=lr * 1e-3, warmup_iters=min(20, max_iters // 10), weight_decay=0.0, grad_clip=0.0,
        eval_interval=max_iters, eval_batches=1, log_interval=max_iters, seed=seed, device="cpu",
    )
    result = train(gaussian, RegressionData(Xs, ys, Xs, ys), cfg, progress=False)  # its objective: normal_nll
    with torch.no_grad():
        w = gaussian.linear.weight[0]  # (F,)
        b = gaussian.linear.bias[0] if model.fit_intercept else torch.zeros((), dtype=torch.float64)
        coef = y_std * w / x_std  # (F,)
        intercept = float(y_mean + y_std * b - x_mean @ coef)
        noise_var = float(y_std**2 * gaussian.log_var.exp())  # the learned MLE of s^2
    model.set_fit(X, y, coef, intercept, noise_var)
    model.train_result_ = result
    return model

"""Synthetic regression problems with a known E[y | x], and the data source that feeds them to the loop.

Rung on the ladder: the bottom, linear regression and the feed-forward network (claim C1 of the
seed: a regression model estimates E[y | x]; claim C2: a classifier estimates P(class | x)).
Because the data are drawn from a distribution we wrote down, every estimate can be scored
against the truth itself, `true_mean(X)` = E[y | x] and `true_std(X)` = sqrt(Var[y | x]), not
only against noisy held-out samples.

    kind             x                      E[y | x]             std(y | x)
    linear           U(-2, 2)^F             x . w + 0.5          noise
    sine             U(-3, 3)               sin(2x)              noise
    heteroscedastic  U(-3, 3)               sin(2x)              noise * (0.25 + |x|)

`RegressionData` is the data source `redthread.train.loop.train` expects (`batch`,
`eval_batches`, `tokens_per_char`), for real targets (float y) and class labels (int64 y) alike.

Shape legend: N examples, F features, B batch.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from redthread.errors import InvalidValue, check_int

KINDS = ("linear", "sine", "heteroscedastic")
DEFAULT_NOISE = {"linear": 0.5, "sine": 0.3, "heteroscedastic": 0.2}
DOMAIN = {"linear": (-2.0, 2.0), "sine": (-3.0, 3.0), "heteroscedastic": (-3.0, 3.0)}


def as_features(X, name: str = "X", dtype: torch.dtype | None = None) -> Tensor:
    """A numpy array, tensor or nested list -> a finite floating tensor (N, F); a 1-D input is one feature."""
    try:
        X = torch.as_tensor(np.asarray(X) if not isinstance(X, Tensor) else X)
    except (TypeError, ValueError, RuntimeError) as e:
        raise InvalidValue(f"{name} is not a numeric array: {e}") from None
    X = X.to(dtype or (X.dtype if X.dtype.is_floating_point else torch.get_default_dtype()))
    if X.dim() == 1:
        X = X[:, None]  # (N,) -> (N, 1)
    if X.dim() != 2:
        raise InvalidValue(f"{name} must be 2-D (examples, features), got shape {tuple(X.shape)}")
    if X.shape[0] == 0 or X.shape[1] == 0:
        raise InvalidValue(f"{name} is empty: shape {tuple(X.shape)}")
    if not torch.isfinite(X).all():
        raise InvalidValue(f"{name} contains NaN or infinite values")
    return X


def as_targets(y, n: int, name: str = "y", dtype: torch.dtype | None = None) -> Tensor:
    """Targets for n examples -> (N,): float (finite) for regression, int64 for class labels."""
    try:
        y = torch.as_tensor(np.asarray(y) if not isinstance(y, Tensor) else y)
    except (TypeError, ValueError, RuntimeError) as e:
        raise InvalidValue(f"{name} is not a numeric array: {e}") from None
    if y.dim() == 2 and y.shape[1] == 1:
        y = y[:, 0]  # a column vector (N, 1) -> (N,)
    if y.dim() != 1:
        raise InvalidValue(f"{name} must be 1-D (one target per example), got shape {tuple(y.shape)}")
    if y.shape[0] != n:
        raise InvalidValue(f"X and {name} have different lengths: {n} examples, {y.shape[0]} targets")
    if dtype is not None:
        y = y.to(dtype)
    elif not y.dtype.is_floating_point and y.dtype != torch.int64:
        y = y.to(torch.int64)  # int32 labels, bools
    if y.dtype.is_floating_point and not torch.isfinite(y).all():
        raise InvalidValue(f"{name} contains NaN or infinite values")
    return y


@dataclass(frozen=True)
class RegressionProblem:
    """n samples (X, y) from a known p(y | x), and the truth to score estimates against."""

    kind: str
    X: Tensor  # (N, F)
    y: Tensor  # (N,)
    true_mean: Callable[[Tensor], Tensor]  # X (M, F) -> E[y | x] (M,)
    true_std: Callable[[Tensor], Tensor]  # X (M, F) -> std(y | x) (M,)
    low: float  # every feature is drawn uniformly from [low, high]
    high: float

    def grid(self, m: int = 200, seed: int = 1) -> Tensor:
        """m held-out points to compare estimates with the truth: evenly spaced for one feature, uniform otherwise."""
        F = self.X.shape[1]
        if F == 1:
            return torch.linspace(self.low, self.high, m, dtype=self.X.dtype)[:, None]  # (m, 1)
        g = torch.Generator().manual_seed(seed)
        return self.low + (self.high - self.low) * torch.rand(m, F, generator=g, dtype=self.X.dtype)  # (m, F)


def make_regression(
    kind: str,
    n: int,
    seed: int = 0,
    noise: float | None = None,
    n_features: int = 1,
    dtype: torch.dtype = torch.float32,
) -> RegressionProblem:
    """Draw n examples of one of the `KINDS` (table above); `noise` scales the noise std (defaults in DEFAULT_NOISE)."""
    if kind not in KINDS:
        raise InvalidValue(f"unknown regression kind {kind!r}; use one of {', '.join(KINDS)}")
    check_int("n", n), check_int("n_features", n_features)
    if kind != "linear" and n_features != 1:
        raise InvalidValue(f"the {kind} problem has one feature, got n_features={n_features}")
    noise = DEFAULT_NOISE[kind] if noise is None else noise
    if not noise >= 0:
        raise InvalidValue(f"noise must be >= 0, got {noise}")
    g = torch.Generator().manual_seed(seed)
    low, high = DOMAIN[kind]

    if kind == "linear":
        w = torch.randn(n_features, generator=g, dtype=torch.float64)  # fixed by the seed

        def true_mean(X: Tensor) -> Tensor:
            return X @ w.to(X.dtype) + 0.5  # (M, F) @ (F,) -> (M,)

        def true_std(X: Tensor) -> Tensor:
            return torch.full((X.shape[0],), noise, dtype=X.dtype)
    elif kind == "sine":

        def true_mean(X: Tensor) -> Tensor:
            return torch.sin(2 * X[:, 0])  # (M,)

        def true_std(X: Tensor) -> Tensor:
            return torch.full((X.shape[0],), noise, dtype=X.dtype)
    else:

        def true_mean(X: Tensor) -> Tensor:
            return torch.sin(2 * X[:, 0])  # (M,)

        def true_std(X: Tensor) -> Tensor:
            return noise * (0.25 + X[:, 0].abs())  # grows away from x = 0

    X = low + (high - low) * torch.rand(n, n_features, generator=g, dtype=torch.float64)  # (N, F)
    y = true_mean(X) + true_std(X) * torch.randn(n, generator=g, dtype=torch.float64)  # (N,)
    return RegressionProblem(kind, X.to(dtype), y.to(dtype), true_mean, true_std, low, high)


class RegressionData:
    """A data source for the one training loop: (x (B, F), y (B,)) minibatches of a train and a val split.

    Training batches are drawn without replacement within a batch, so a batch as large as the
    split is the whole split (full-batch gradient descent). Evaluation visits every example once
    (`max_batches=None`) or the first `max_batches` batches, in order.
    """

    def __init__(self, X_train, y_train, X_val, y_val):
        X_train = as_features(X_train, "X_train")
        X_val = as_features(X_val, "X_val", dtype=X_train.dtype)
        if X_val.shape[1] != X_train.shape[1]:
            raise InvalidValue(f"X_train has {X_train.shape[1]} features but X_val has {X_val.shape[1]}")
        y_train = as_targets(y_train, X_train.shape[0], "y_train")
        y_val = as_targets(y_val, X_val.shape[0], "y_val")
        if y_train.dtype.is_floating_point:  # real targets share the features' dtype, as the model does
            y_train, y_val = y_train.to(X_train.dtype), y_val.to(X_train.dtype)
        self.splits = {"train": (X_train, y_train), "val": (X_val, y_val)}

    @classmethod
    def from_arrays(cls, X, y, val_fraction: float = 0.2, seed: int = 0) -> RegressionData:
        """A random split of one data set into train and val."""
        X = as_features(X)
        y = as_targets(y, X.shape[0])
        n_val = round(val_fraction * X.shape[0])
        if not 0 < val_fraction < 1 or n_val < 1 or n_val >= X.shape[0]:
            raise InvalidValue(f"val_fraction={val_fraction} leaves an empty split of {X.shape[0]} examples")
        perm = torch.randperm(X.shape[0], generator=torch.Generator().manual_seed(seed))
        val, train = perm[:n_val], perm[n_val:]
        return cls(X[train], y[train], X[val], y[val])

    def split(self, name: str) -> tuple[Tensor, Tensor]:
        if name not in self.splits:
            raise InvalidValue(f"unknown split {name!r}; use train or val")
        return self.splits[name]

    def batch(self, split: str, batch_size: int, generator: torch.Generator) -> tuple[Tensor, Tensor]:
        X, y = self.split(split)
        idx = torch.randperm(X.shape[0], generator=generator)[:batch_size]  # (B,), B = min(batch_size, N)
        return X[idx], y[idx]  # (B, F), (B,)

    def eval_batches(self, split: str, batch_size: int, max_batches: int | None = None) -> Iterator:
        X, y = self.split(split)
        for i, start in enumerate(range(0, X.shape[0], batch_size)):
            if max_batches is not None and i >= max_batches:
                return
            yield X[start : start + batch_size], y[start : start + batch_size]

    def tokens_per_char(self, split: str) -> None:
        return None  # no text, no characters

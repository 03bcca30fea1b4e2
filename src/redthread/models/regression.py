"""The bottom rungs of the ladder: linear regression, feed-forward networks, and kernel regression as attention.

Claim C1 of the essay: linear regression's prediction for x_new estimates E[y | x = x_new], and
minimising the mean squared error is maximising a Gaussian likelihood,
    -log N(y; mu(x), s^2) = 0.5 log(2 pi s^2) + (y - mu(x))^2 / (2 s^2),
whose minimiser over mu is the least-squares fit whatever s is, and whose minimiser over s^2 is
then RSS / n (Bishop, PRML 2006, eqs. 3.11-3.21). `LinearRegression` solves it in closed form;
`redthread.fit_gd` (`train/fit.py`) finds the same fit with the training loop that trains the Transformer.
Claim C2: with a softmax output the same machinery estimates P(class | x) (`SoftmaxRegression`,
`MLPClassifier`). `MLPRegressor` replaces the global linear function by a global non-linear one,
optionally with an x-dependent variance (heteroscedastic).
Claim C6: `NadarayaWatson` kernel regression (Nadaraya 1964; Watson 1964),
    E[y | x] ~ sum_i softmax_i(-||x - x_i||^2 / (2 h^2)) y_i,
IS attention: query = x, keys = the training inputs, values = the training targets, and the
weights are a data-dependent distribution over training points recomputed for every query,
where linear regression's weights are fixed and global. Expanding the square,
    -||q - k||^2 / (2 h^2) = (q . k - ||k||^2 / 2) / h^2 - ||q||^2 / (2 h^2),
and the last term is the same for every key, so softmax drops it: the Gaussian kernel is
dot-product attention on q' = [q, 1], k' = [k, -||k||^2 / 2] with the scale 1/h^2 in place of
1/sqrt(d_k) (C7), which is how `NadarayaWatson` computes it, through
`redthread.layers.attention.scaled_dot_product_attention`. The Transformer's attention learns
the projections that make q . k a good similarity; here the similarity is fixed and only its
width h is learned.

Every `nn.Module` here keeps the contract of `models/base.py`: it returns raw outputs
(regression: (mean, log_var), each (B,); classification: logits (B, K)) and names its likelihood.
Shape legend: B batch (queries), N training examples (keys), F features, K classes.
"""

from __future__ import annotations

import math
from itertools import pairwise

import torch
from torch import Tensor, nn
from torch.distributions import Normal

from redthread.data.regression import as_features, as_targets
from redthread.errors import InvalidValue, check_int
from redthread.layers.attention import scaled_dot_product_attention
from redthread.models.base import Classifier, GaussianRegressor
from redthread.models.likelihoods import gaussian_nll


def r2_score(y: Tensor, pred: Tensor) -> float:
    """The coefficient of determination 1 - RSS / TSS (1.0 for a perfect fit of constant y, as scikit-learn)."""
    rss = float(((y - pred) ** 2).sum())
    tss = float(((y - y.mean()) ** 2).sum())
    if tss == 0.0:
        return 1.0 if rss == 0.0 else 0.0
    return 1.0 - rss / tss


class LinearGaussian(GaussianRegressor):
    """y | x ~ N(x . w + b, s^2): linear regression as a module, one learned log-variance for all x."""

    def __init__(self, d_in: int, bias: bool = True):
        super().__init__()
        check_int("d_in", d_in)
        self.linear = nn.Linear(d_in, 1, bias=bias)
        self.log_var = nn.Parameter(torch.zeros(()))

    def forward(self, x: Tensor) -> tuple[Tensor, Tensor]:
        mean = self.linear(x).squeeze(-1)  # (B, F) -> (B,)
        return mean, self.log_var.expand_as(mean)


class LinearRegression:
    """Ordinary least squares, scikit-learn style, in float64: `fit(X, y)` then `predict`, `distribution`, `score`.

    Attributes after `fit`: `coef_` (F,) and `intercept_` (a float) as scikit-learn's;
    `noise_var_`, the maximum-likelihood noise variance RSS / n (biased: what maximises the
    Gaussian likelihood and what the predictive distribution uses; fitted by `redthread.fit_gd` it
    is the learned variance, RSS / n at convergence); `noise_var_unbiased_`,
    RSS / (n - p) with p = F + 1 parameters of the mean (F without an intercept); `n_features_in_`.
    X may be a numpy array or a tensor, (N, F) or (N,) for one feature; results are float64 tensors.
    """

    def __init__(self, fit_intercept: bool = True):
        self.fit_intercept = fit_intercept
        self.coef_: Tensor | None = None

    def fit(self, X, y, method: str = "closed_form") -> LinearRegression:
        """Fit by least squares: the maximum-likelihood mean, and noise_var_ = RSS / n. (Maximising the
        same Gaussian likelihood with the training loop instead: `redthread.fit_gd(LinearRegression(), X, y)`.)"""
        if method != "closed_form":
            raise InvalidValue(f"unknown fit method {method!r}; use closed_form (or redthread.fit_gd)")
        X = as_features(X, dtype=torch.float64)  # (N, F)
        y = as_targets(y, X.shape[0], dtype=torch.float64)  # (N,)
        # With an intercept column [X, 1], the intercept's normal equation puts the fitted plane
        # through the means: solving the centred problem is the same least-squares solution,
        # better conditioned (scikit-learn does the same).
        x_mean = X.mean(0) if self.fit_intercept else torch.zeros(X.shape[1], dtype=X.dtype)  # (F,)
        y_mean = y.mean() if self.fit_intercept else torch.zeros((), dtype=y.dtype)
        sol = torch.linalg.lstsq(X - x_mean, (y - y_mean)[:, None], driver="gelsd")  # minimum-norm if rank-deficient
        self.rank_ = int(sol.rank)
        return self.set_fit(X, y, sol.solution[:, 0], float(y_mean - x_mean @ sol.solution[:, 0]))

    def set_fit(self, X, y, coef: Tensor, intercept: float, noise_var: float | None = None) -> LinearRegression:
        """Record a fit of (X, y): coef (F,) and intercept, found here or elsewhere (`redthread.fit_gd`).

        noise_var: the fitted noise variance; None: the MLE given this mean, RSS / n. Returns self."""
        X = as_features(X, dtype=torch.float64)  # (N, F)
        y = as_targets(y, X.shape[0], dtype=torch.float64)  # (N,)
        n, F = X.shape
        self.coef_ = torch.as_tensor(coef, dtype=torch.float64).reshape(F).clone()  # (F,)
        self.intercept_ = float(intercept)
        self.n_features_in_ = F
        rss = float(((y - self.predict(X)) ** 2).sum())
        p = F + int(self.fit_intercept)
        self.noise_var_ = rss / n if noise_var is None else float(noise_var)
        self.noise_var_unbiased_ = rss / (n - p) if n > p else float("nan")
        return self

    def num_params(self) -> int:
        """The fitted parameters: F weights, the intercept (if fitted) and the noise variance."""
        self._check_fitted(None)
        return self.n_features_in_ + int(self.fit_intercept) + 1

    def _check_fitted(self, X) -> Tensor:
        if self.coef_ is None:
            raise InvalidValue("LinearRegression is not fitted: call fit(X, y) first")
        if X is None:
            return None
        X = as_features(X, dtype=torch.float64)
        if X.shape[1] != self.n_features_in_:
            raise InvalidValue(f"X has {X.shape[1]} features, the model was fitted on {self.n_features_in_}")
        return X

    def predict(self, X) -> Tensor:
        """The estimate of E[y | x] for each row of X: (N,) float64."""
        X = self._check_fitted(X)
        return X @ self.coef_ + self.intercept_  # (N, F) @ (F,) -> (N,)

    def distribution(self, X) -> Normal:
        """The predictive p(y | x) = N(predict(x), noise_var_), batch shape (N,)."""
        mean = self.predict(X)
        if not self.noise_var_ > 0:
            raise InvalidValue("the fit is exact (noise variance 0): the predictive distribution is degenerate")
        return Normal(mean, torch.full_like(mean, math.sqrt(self.noise_var_)))

    def score(self, X, y) -> float:
        """R^2 of the predictions on (X, y)."""
        X = self._check_fitted(X)
        return r2_score(as_targets(y, X.shape[0], dtype=torch.float64), self.predict(X))

    def nll(self, X, y) -> float:
        """The mean Gaussian negative log-likelihood of (X, y) under the predictive distribution, nats."""
        X = self._check_fitted(X)
        y = as_targets(y, X.shape[0], dtype=torch.float64)
        return float(gaussian_nll(self.predict(X), y, self.noise_var_))


class MLPRegressor(GaussianRegressor):
    """A feed-forward network for p(y | x): n_layer tanh layers of width d_hidden, then (mean, log_var).

    heteroscedastic=False: one learned log-variance for every x (the MLP's version of `noise_var_`);
    True: the network outputs log_var(x) too, so the noise may change with x.
    """

    def __init__(self, d_in: int, d_hidden: int = 64, n_layer: int = 2, heteroscedastic: bool = False):
        super().__init__()
        for name, value in (("d_in", d_in), ("d_hidden", d_hidden), ("n_layer", n_layer)):
            check_int(name, value)
        self.heteroscedastic = heteroscedastic
        dims = [d_in] + [d_hidden] * n_layer
        self.body = nn.Sequential(*(m for a, b in pairwise(dims) for m in (nn.Linear(a, b), nn.Tanh())))
        self.head = nn.Linear(d_hidden, 2 if heteroscedastic else 1)
        self.log_var = None if heteroscedastic else nn.Parameter(torch.zeros(()))

    def forward(self, x: Tensor) -> tuple[Tensor, Tensor]:
        out = self.head(self.body(x))  # (B, F) -> (B, 2) or (B, 1)
        mean = out[:, 0]  # (B,)
        return (mean, out[:, 1]) if self.heteroscedastic else (mean, self.log_var.expand_as(mean))


class SoftmaxRegression(Classifier):
    """P(class | x) = softmax(x W^T + b): multinomial logistic regression, the linear classifier (C2)."""

    def __init__(self, d_in: int, n_classes: int):
        super().__init__()
        check_int("d_in", d_in)
        check_int("n_classes", n_classes, 2)
        self.linear = nn.Linear(d_in, n_classes)

    def forward(self, x: Tensor) -> Tensor:
        return self.linear(x)  # (B, F) -> (B, K)


class MLPClassifier(Classifier):
    """P(class | x) = softmax(MLP(x)): n_layer tanh layers of width d_hidden, then logits."""

    def __init__(self, d_in: int, n_classes: int, d_hidden: int = 64, n_layer: int = 2):
        super().__init__()
        for name, value in (("d_in", d_in), ("d_hidden", d_hidden), ("n_layer", n_layer)):
            check_int(name, value)
        check_int("n_classes", n_classes, 2)
        dims = [d_in] + [d_hidden] * n_layer
        self.body = nn.Sequential(*(m for a, b in pairwise(dims) for m in (nn.Linear(a, b), nn.Tanh())))
        self.head = nn.Linear(d_hidden, n_classes)

    def forward(self, x: Tensor) -> Tensor:
        return self.head(self.body(x))  # (B, F) -> (B, K)


class NadarayaWatson(GaussianRegressor):
    """Gaussian-kernel regression written as attention over the training set (see the module docstring).

        att[b, i] = softmax_i(-||x_b - X_i||^2 / (2 h^2))     query x_b, key X_i    (B, N)
        mean[b]   = sum_i att[b, i] y_i                          value y_i             (B,)
        var[b]    = sum_i att[b, i] (y_i - mean[b])^2 + noise    the attended neighbours' spread

    `fit_memory(X, y)` stores the keys and values (buffers, not parameters: the memory is data).
    The learned parameters are log h and the log noise floor, fitted by the one training loop on
    the leave-one-out likelihood: in training mode a query never attends to a memory entry equal
    to itself (the diagonal, when the query batch is the memory), otherwise h -> 0 would copy
    every training target exactly. `bandwidth=None` starts from Silverman's rule of thumb.
    """

    def __init__(self, bandwidth: float | None = None, noise_var: float = 1e-2):
        super().__init__()
        if bandwidth is not None and not bandwidth > 0:
            raise InvalidValue(f"bandwidth must be > 0, got {bandwidth}")
        if not noise_var > 0:
            raise InvalidValue(f"noise_var must be > 0, got {noise_var}")
        self.rule_of_thumb = bandwidth is None
        self.log_bandwidth = nn.Parameter(torch.tensor(math.log(bandwidth or 1.0)))
        self.log_noise_var = nn.Parameter(torch.tensor(math.log(noise_var)))
        self.register_buffer("keys", None)  # (N, F) training inputs
        self.register_buffer("values", None)  # (N,) training targets
        self.register_buffer("center", None)  # (F,) mean of the keys: distances are shift-invariant

    @property
    def bandwidth(self) -> float:
        return float(self.log_bandwidth.detach().exp())

    def fit_memory(self, X, y) -> NadarayaWatson:
        """Store the training set as the keys and values attended over; returns self."""
        dtype = self.log_bandwidth.dtype
        X = as_features(X, dtype=dtype)  # (N, F)
        y = as_targets(y, X.shape[0], dtype=dtype)  # (N,)
        if X.shape[0] < 2:
            raise InvalidValue(f"the memory needs at least 2 examples (one to leave out), got {X.shape[0]}")
        device = self.log_bandwidth.device
        self.keys, self.values, self.center = X.to(device), y.to(device), X.mean(0).to(device)
        if self.rule_of_thumb:  # Silverman: h = 1.06 sigma N^(-1/5)
            sigma = float(X.std(0).mean())
            with torch.no_grad():
                self.log_bandwidth.fill_(math.log(max(1.06 * sigma * X.shape[0] ** -0.2, 1e-6)))
        return self

    def _attend(self, x: Tensor, exclude_self: bool | None) -> tuple[Tensor, Tensor]:
        if self.keys is None:
            raise InvalidValue("NadarayaWatson has no memory: call fit_memory(X, y) first")
        exclude_self = self.training if exclude_self is None else exclude_self
        q, k = x - self.center, self.keys - self.center  # (B, F), (N, F)
        q_aug = torch.cat([q, torch.ones_like(q[:, :1])], -1)  # (B, F + 1): [q, 1]
        k_aug = torch.cat([k, -0.5 * (k**2).sum(-1, keepdim=True)], -1)  # (N, F + 1): [k, -||k||^2 / 2]
        mask = (x[:, None, :] != self.keys[None]).any(-1) if exclude_self else None  # (B, N), True = may attend
        scale = (-2 * self.log_bandwidth).exp()  # 1 / h^2, the kernel's width as attention's temperature
        mean, att = scaled_dot_product_attention(q_aug, k_aug, self.values[:, None], mask, scale=scale)
        return att, mean[:, 0]  # (B, N), (B, 1) -> (B,)

    def attention_weights(self, x: Tensor, exclude_self: bool = False) -> Tensor:
        """att (B, N): how much each training point contributes to the estimate at each query; rows sum to 1."""
        return self._attend(x, exclude_self)[0]

    def forward(self, x: Tensor, exclude_self: bool | None = None) -> tuple[Tensor, Tensor]:
        """(mean, log_var), each (B,); exclude_self=None: leave-one-out in training mode only."""
        att, mean = self._attend(x, exclude_self)
        var = (att * (self.values[None, :] - mean[:, None]) ** 2).sum(-1)  # (B, N) -> (B,)
        return mean, (var + self.log_noise_var.exp()).log()

"""Claim C2: a softmax output layer estimates P(class | input).

Part 1, against a known posterior. K = 3 Gaussian classes in 2 dimensions with one shared
covariance S and priors pi_k: x | k ~ N(mu_k, S). By Bayes,

    P(k | x) = pi_k N(x; mu_k, S) / sum_j pi_j N(x; mu_j, S),
    log pi_k N(x; mu_k, S) = -1/2 x^T S^-1 x + mu_k^T S^-1 x - 1/2 mu_k^T S^-1 mu_k + log pi_k + const.

The quadratic term -1/2 x^T S^-1 x and the constant are the same for every class, so they cancel
between numerator and denominator, leaving

    P(k | x) = softmax_k(w_k . x + b_k),  w_k = S^-1 mu_k,  b_k = -1/2 mu_k^T S^-1 mu_k + log pi_k:

exactly softmax regression (linear discriminant analysis; Bishop, PRML 2006, eqs. 4.65-4.70).
Softmax regression (`SoftmaxRegression`, well specified here) and a one-layer tanh MLP
(`MLPClassifier`) are trained by the one loop (`redthread.train.loop.train`, full batch, no
weight decay: the maximum-likelihood fit) on n samples for several n. Each model's learning rate
is tuned for each n on the tuning seed (`tuning_seed`, which no verdict uses): n training samples
and a validation draw of n / 2 of its own; every verdict seed then draws its own n samples and
trains fresh at that pick. The error is
KL(true posterior || learned posterior), averaged over 4,000 held-out x from p(x). If the softmax
output estimates P(class | x), the error goes to zero as n grows: the slope of log KL against
log n is negative. For a well-specified model fitted by maximum likelihood the asymptotic theory
gives E[KL] ~ p / (2n) with p = (K - 1)(d + 1) free parameters: a slope of about -1.

Part 2, calibration on real data. The same two rungs on scikit-learn's digits (no known
posterior): of the test images predicted with top probability 0.9, about 90% should be right.
The expected calibration error (ECE, 15 equal-width bins of top-1 confidence; Guo et al. 2017)
of a finite test set is never 0, even for a perfectly calibrated predictor. The control measures
that noise floor: labels drawn from the model's own predicted probabilities (so the model is
calibrated for them by construction) on the same test images, 200 draws; the check is the model's
ECE minus the control's 95th percentile (below 0.01: no more miscalibration than a calibrated
predictor shows by chance, give or take one point of probability). Each model's learning rate is
tuned on the tuning seed's digits split (its validation images, 20% of its training images); each
verdict seed trains fresh at the pick on its own split (`digit_models`). The ViT's calibration is
measured the same way in the `vision` experiment.

Not a comparative claim: one training budget (`BUDGET`), no `BUDGETS`. With --quick nothing is
tuned (each grid's middle value): a smoke test.

Shape legend: N examples, D features, K classes, M control draws, B bins.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from redthread.data.images import ImageData, load_digits, stratified_split
from redthread.data.regression import RegressionData
from redthread.experiments.criteria import BELOW, Criterion
from redthread.experiments.report import Report
from redthread.experiments.stats import run_seeds, tuning_seed
from redthread.experiments.tuning import Tuned, tune
from redthread.lang import say
from redthread.models.regression import MLPClassifier, SoftmaxRegression
from redthread.plotting import pyplot
from redthread.train.loop import TrainConfig, evaluate, train

plt = pyplot()

NAME, CLAIMS = "classification", "C2"

HYPOTHESIS = ("A softmax output layer trained by maximum likelihood estimates P(class | input): where the true "
              "posterior is known (Gaussian classes) its KL to the truth falls with the sample size n at about the "
              "1/n rate of a well-specified fit, and on real images (digits) it is as well calibrated as a "
              "predictor that is calibrated by construction, give or take one point of probability.")

# The pre-registered criteria: each floor is the smallest effect size of interest, with its reason.
CRITERIA: dict[str, Criterion] = {
    "kl_slope_softmax": Criterion(
        "C2", "known posterior, softmax regression", "slope of log KL(true posterior || learned) against log n", -0.5, BELOW,
        "half the theoretical rate: for this well-specified model KL falls as 1/n (slope -1); a softmax layer that "
        "estimates P(class | x) converges at about that rate, one that stalls at a KL floor has slope 0"),
    "kl_slope_mlp": Criterion(
        "C2", "known posterior, MLP", "slope of log KL(true posterior || learned) against log n", -0.5, BELOW,
        "half the rate of a well-specified model (-1): the MLP holds the true posterior's form, so it converges at "
        "about that rate; slope 0 is no convergence"),
    "ece_excess_softmax": Criterion(
        "C2", "calibration, softmax regression", "test ECE on digits minus the 95% quantile of a calibrated control's ECE",
        0.01, BELOW, "the noise floor measured on a control (labels drawn from the model's own probabilities, same "
        "images), plus one point of probability, the least miscalibration that counts"),
    "ece_excess_mlp": Criterion(
        "C2", "calibration, MLP", "test ECE on digits minus the 95% quantile of a calibrated control's ECE",
        0.01, BELOW, "the noise floor measured on a control (labels drawn from the model's own probabilities, same "
        "images), plus one point of probability, the least miscalibration that counts"),
}
# Learning rates, tuned on the set's tuning seed (per n on the Gaussian classes); each grid extends past an edge pick.
GRID = {
    "lr, softmax regression, Gaussian": (0.03, 0.1, 0.3),
    "lr, MLP, Gaussian": (0.003, 0.01, 0.03),
    "lr, softmax regression, digits": (3e-3, 1e-2, 3e-2),  # around commands/images.py's
    "lr, MLP, digits": (1e-3, 3e-3, 1e-2),
}
ARMS = ("softmax regression", "MLP")
GAUSS_LRS = {arm: GRID[f"lr, {arm}, Gaussian"] for arm in ARMS}
DIGIT_LRS = {arm: GRID[f"lr, {arm}, digits"] for arm in ARMS}
BUDGET = {"steps": 400, "quick_steps": 150,  # full-batch steps on the Gaussian classes
          "digit_steps": 1000, "quick_digit_steps": 300}  # steps of batch 64 on digits
N_BINS, CONTROL_DRAWS, CONTROL_QUANTILE = 15, 200, 0.95
N_HELD_OUT = 4000
MLP_GAUSS = {"d_hidden": 16, "n_layer": 1}
MLP_DIGITS = {"d_hidden": 128, "n_layer": 2}  # commands/images.py's MLP_SIZE


# -- the known posterior ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GaussianClasses:
    """x | k ~ N(means[k], cov), k ~ priors: the true P(k | x) is a softmax of a linear function (module docstring)."""

    means: Tensor  # (K, D)
    cov: Tensor  # (D, D)
    priors: Tensor  # (K,)

    def sample(self, n: int, generator: torch.Generator) -> tuple[Tensor, Tensor]:
        """n draws (x (N, D), k (N,)) from the joint."""
        k = torch.multinomial(self.priors, n, replacement=True, generator=generator)  # (N,)
        chol = torch.linalg.cholesky(self.cov)  # (D, D)
        z = torch.randn(n, self.means.shape[1], generator=generator, dtype=self.cov.dtype)  # (N, D)
        return self.means[k] + z @ chol.T, k

    def posterior_logits(self, x: Tensor) -> Tensor:
        """log P(k | x) up to a constant per row: x (N, D) -> (N, K), w_k . x + b_k."""
        prec = torch.linalg.inv(self.cov)  # (D, D)
        w = self.means @ prec  # (K, D): w_k = S^-1 mu_k (S symmetric)
        b = -0.5 * (w * self.means).sum(-1) + self.priors.log()  # (K,)
        return x @ w.T + b


def three_classes(dtype=torch.float32) -> GaussianClasses:
    return GaussianClasses(
        means=torch.tensor([[0.0, 0.0], [2.0, 0.0], [1.0, 1.7]], dtype=dtype),
        cov=torch.tensor([[1.0, 0.3], [0.3, 1.0]], dtype=dtype),
        priors=torch.tensor([0.5, 0.3, 0.2], dtype=dtype),
    )


def mean_kl(true_logits: Tensor, model_logits: Tensor) -> float:
    """KL(softmax(true) || softmax(model)) in nats, averaged over the rows: (N, K), (N, K) -> a number."""
    log_p, log_q = true_logits.log_softmax(-1), model_logits.log_softmax(-1)  # (N, K) each
    return float((log_p.exp() * (log_p - log_q)).sum(-1).mean())


def loglog_slope(xs, ys) -> float:
    """The least-squares slope of log y against log x."""
    lx, ly = torch.log(torch.tensor(xs, dtype=torch.float64)), torch.log(torch.tensor(ys, dtype=torch.float64))
    lx, ly = lx - lx.mean(), ly - ly.mean()
    return float((lx * ly).sum() / (lx**2).sum())


# -- calibration and its control -------------------------------------------------------------------------------------


def top1_ece(probs: Tensor, labels: Tensor, n_bins: int = N_BINS) -> Tensor:
    """ECE = sum_b (n_b / N) |accuracy_b - confidence_b| over equal-width bins of top-1 confidence.

    probs (N, K); labels (N,) for one ECE (a 0-dim tensor), or (M, N) for M label draws at once (M,)."""
    conf, top = probs.max(-1)  # (N,) each
    bins = (conf * n_bins).long().clamp(max=n_bins - 1)  # (N,)
    onehot = torch.nn.functional.one_hot(bins, n_bins).to(probs.dtype)  # (N, B)
    gap = (labels == top).to(probs.dtype) - conf  # (N,) or (M, N): hit - confidence
    return (gap @ onehot).abs().sum(-1) / probs.shape[0]  # per bin |sum(hit - conf)| / N, summed over bins


def calibrated_control(probs: Tensor, generator: torch.Generator, draws: int = CONTROL_DRAWS) -> Tensor:
    """The ECE of a perfectly calibrated predictor: labels drawn from probs itself, `draws` times -> (M,)."""
    labels = torch.multinomial(probs.double(), draws, replacement=True, generator=generator).T  # (M, N)
    return top1_ece(probs, labels)


def excess_ece(probs: Tensor, labels: Tensor, generator: torch.Generator) -> tuple[float, float, float]:
    """(ECE, the control's 95th percentile, ECE minus it)."""
    ece = float(top1_ece(probs, labels))
    floor = float(torch.quantile(calibrated_control(probs, generator), CONTROL_QUANTILE))
    return ece, floor, ece - floor


# -- training by the one loop ----------------------------------------------------------------------------------------


def fit(model: nn.Module, data, lr: float, steps: int, batch_size: int, seed: int, weight_decay: float = 0.0) -> nn.Module:
    """Maximum likelihood by the shared loop: AdamW, warm-up, cosine decay to lr / 20 (no weight decay by default)."""
    cfg = TrainConfig(max_iters=steps, batch_size=batch_size, lr=lr, min_lr=lr / 20, warmup_iters=steps // 10,
                      weight_decay=weight_decay, eval_interval=steps, eval_batches=1, log_interval=steps, seed=seed,
                      device="cpu")
    train(model, data, cfg, progress=False)
    return model.eval()


def quick_lr(grid) -> float:
    """--quick tunes nothing: the grid's middle value."""
    return grid[len(grid) // 2]


def val_nll(model: nn.Module, data) -> float:
    return evaluate(model, data, "val", batch_size=4096)["nll"]


def tune_digit_lr(make: Callable[[], nn.Module], grid, seed: int, steps: int, flat: bool = True,
                  weight_decay: float = 0.0) -> Tuned:
    """The learning rate of `grid` (extended past an edge pick) with the lowest NLL on the validation images of seed
    `seed`'s digits split, each model trained from seed's initialisation, batch 64. Call it with a tuning seed: the
    models it trains are scored and dropped, and no verdict uses them."""
    data, _ = digits_with_validation(seed)  # train minus validation, vs validation
    data = data.flattened() if flat else data

    def score(lr: float) -> float:
        torch.manual_seed(seed)
        return val_nll(fit(make(), data, lr, steps, 64, seed, weight_decay), data)

    return tune(score, grid)


def digit_models(make: Callable[[], nn.Module], lr: float, seeds: list[int], steps: int, flat: bool = True,
                 weight_decay: float = 0.0) -> list[tuple[nn.Module, ImageData]]:
    """One model per seed, trained fresh at `lr` on that seed's digits split (its training images minus the
    validation ones, batch 64): [(model, data whose "val" split is the test images)]. flat: pixel vectors, else
    images."""
    out = []
    for s in seeds:
        _, final = digits_with_validation(s)
        final = final.flattened() if flat else final
        torch.manual_seed(s)
        out.append((fit(make(), final, lr, steps, 64, s, weight_decay), final))
    return out


@torch.no_grad()
def predict_proba(model: nn.Module, x: Tensor, batch_size: int = 512) -> Tensor:
    """P(class | x) for every row (or image) of x -> (N, K)."""
    model.eval()
    return torch.cat([model(x[i : i + batch_size]).softmax(-1) for i in range(0, x.shape[0], batch_size)])


def digits_with_validation(seed: int) -> tuple[ImageData, ImageData]:
    """Seed `seed`'s stratified digits split (`load_digits(seed=...)`): (train minus validation vs
    validation, for tuning; train minus validation vs test, for the result). The validation images
    are 20% of the training images, per class; the test images are never used to choose anything."""
    data = load_digits(seed=seed)
    (x, y), test = data.split("train"), data.split("val")
    fit_idx, val_idx = stratified_split(y, seed=seed + 1)
    tune = ImageData(x[fit_idx], y[fit_idx], x[val_idx], y[val_idx], data.n_classes)
    final = ImageData(x[fit_idx], y[fit_idx], *test, data.n_classes)
    return tune, final


# -- the experiment --------------------------------------------------------------------------------------------------


def gaussian_data(dist: GaussianClasses, n: int, seed: int) -> RegressionData:
    """n training samples and a validation draw of n / 2 (at least 20), both from `seed` and n. The validation draw
    is what a tuning seed scores; a verdict seed trains on the same kind of draw and is scored by its KL."""
    g = torch.Generator().manual_seed(seed * 1_000_003 + n)
    (x, y), (xv, yv) = dist.sample(n, g), dist.sample(max(n // 2, 20), g)  # (n, D), (n,); (n / 2, D), (n / 2,)
    return RegressionData(x, y, xv, yv)


def fit_gaussian(name: str, dist: GaussianClasses, data: RegressionData, lr: float, steps: int, seed: int) -> nn.Module:
    """`name` (softmax regression or the MLP) fitted on data's n training samples, full batch, from seed's
    initialisation."""
    D, K = dist.means.shape[1], dist.priors.numel()
    torch.manual_seed(seed)
    model = SoftmaxRegression(D, K) if name == "softmax regression" else MLPClassifier(D, K, **MLP_GAUSS)
    return fit(model, data, lr, steps, len(data.split("train")[1]), seed)


def tune_gaussian_lr(name: str, dist: GaussianClasses, n: int, steps: int, seed: int) -> Tuned:
    """`name`'s learning rate for n samples: the lowest validation NLL over GAUSS_LRS[name] (extended past an edge
    pick) on seed's draw. Call it with a tuning seed."""
    data = gaussian_data(dist, n, seed)
    return tune(lambda lr: val_nll(fit_gaussian(name, dist, data, lr, steps, seed), data), GAUSS_LRS[name])


def gaussian_kl(name: str, dist: GaussianClasses, n: int, lr: float, steps: int, seed: int, held_out: Tensor) -> float:
    """`name` trained fresh at lr on seed's n samples: its mean KL(true posterior || learned) on held_out (N, D)."""
    model = fit_gaussian(name, dist, gaussian_data(dist, n, seed), lr, steps, seed)
    with torch.no_grad():
        return mean_kl(dist.posterior_logits(held_out), model(held_out))


def digit_model(name: str) -> Callable[[], nn.Module]:
    return (lambda: SoftmaxRegression(64, 10)) if name == "softmax regression" else (lambda: MLPClassifier(64, 10, **MLP_DIGITS))


def digit_arm(name: str, lr: float, seeds: list[int], steps: int) -> dict:
    """`name` trained at lr on digits for every seed (`digit_models`): test accuracy, ECE and its control."""
    models = digit_models(digit_model(name), lr, seeds, steps)
    out = {"lr": lr, "accuracy": [], "ece": [], "floor": [], "excess": []}
    for s, (model, data) in zip(seeds, models):
        x, y = data.split("val")  # the test images
        probs = predict_proba(model, x).double()  # (N, 10)
        ece, floor, excess = excess_ece(probs, y, torch.Generator().manual_seed(s))
        for key, v in (("accuracy", float((probs.argmax(-1) == y).double().mean())), ("ece", ece), ("floor", floor),
                       ("excess", excess)):
            out[key].append(v)
    return out


def gaussian_lr(report: Report, name: str, dist: GaussianClasses, n: int, steps: int, seed: int, quick: bool) -> float:
    """The learning rate `name` trains at on n samples: tuned on tuning_seed(seed) and recorded; --quick: no sweep."""
    if quick:
        return quick_lr(GAUSS_LRS[name])
    return report.tuned(f"lr, {name}, Gaussian classes, n = {n}", tune_gaussian_lr(name, dist, n, steps, tuning_seed(seed)))


def digit_lr(report: Report, name: str, steps: int, seed: int, quick: bool) -> float:
    """The learning rate `name` trains at on digits: tuned on tuning_seed(seed)'s split and recorded; --quick: no sweep."""
    if quick:
        return quick_lr(DIGIT_LRS[name])
    return report.tuned(f"lr, {name}, digits", tune_digit_lr(digit_model(name), DIGIT_LRS[name], tuning_seed(seed), steps))


def run(quick: bool = False, seed: int = 0, progress=None) -> Report:
    sizes = [40, 160, 640] if quick else [40, 80, 160, 320, 640, 1280]
    seeds = run_seeds(seed, quick)
    steps = BUDGET["quick_steps" if quick else "steps"]
    digit_steps = BUDGET["quick_digit_steps" if quick else "digit_steps"]
    dist = three_classes()
    K, D = dist.priors.numel(), dist.means.shape[1]
    n_params = (K - 1) * (D + 1)
    tuning = ("(quick run: no sweep, each grid's middle value)" if quick else
              f"(extended past an edge pick) by validation NLL on seed {tuning_seed(seed)}, which no verdict uses")
    report = Report(
        NAME, CLAIMS, quick=quick,
        setup=(
            f"Part 1 (known posterior): {K} Gaussian classes in {D} dimensions, means (0, 0), (2, 0), (1, 1.7), shared "
            "covariance [[1, 0.3], [0.3, 1]], priors (0.5, 0.3, 0.2), so P(class | x) is exactly a softmax of a linear "
            f"function (derivation in the module docstring). For n in {sizes} and seeds {seeds}: softmax regression "
            f"and a 1x{MLP_GAUSS['d_hidden']} tanh MLP, each trained by the shared loop ({steps} full-batch AdamW steps, "
            "no weight decay: maximum likelihood) on the seed's own n samples. Learning rate per model and n: picked "
            f"from {GAUSS_LRS['softmax regression']} (softmax regression) or {GAUSS_LRS['MLP']} (MLP) {tuning}, "
            "there on n training samples and a validation draw of n/2; each verdict seed trains fresh at the pick. "
            f"Error: KL(true posterior || learned) averaged over {N_HELD_OUT} held-out x from p(x). "
            f"Part 2 (calibration): softmax regression and a 2x128 tanh MLP on scikit-learn's digits ({digit_steps} "
            "steps of batch 64, the recipe of `redthread ladder --images`, no weight decay), each seed its own "
            "stratified split (80% train, of which 20% validation; 20% test), trained on its training images minus "
            f"the validation ones. Learning rate per model: picked from {DIGIT_LRS['softmax regression']} (softmax "
            f"regression) or {DIGIT_LRS['MLP']} (MLP) {tuning}, there on its split's validation images; each verdict "
            f"seed trains fresh at the pick. ECE: top-1 confidence in {N_BINS} equal bins on the test images. Control: "
            f"a perfectly calibrated predictor at the same n — labels drawn from the model's own predicted "
            f"probabilities, {CONTROL_DRAWS} draws — whose ECE is pure finite-sample noise."
        ),
        criterion=(
            HYPOTHESIS + " Part 1 (for each model): the slope of log KL against log n, one per seed, is below "
            f"{CRITERIA['kl_slope_softmax'].floor:g} (half the rate the theory for a well-specified maximum-likelihood "
            f"fit gives, about -1: E[KL] ~ p/(2n) with p = {n_params}). Part 2 (for each model): the test ECE minus "
            f"the {CONTROL_QUANTILE:.0%} quantile of the calibrated control's ECE is below "
            f"{CRITERIA['ece_excess_softmax'].floor:g} (no more miscalibration than a calibrated predictor shows by "
            "chance on the same images, give or take one point of probability). Each by its 95% interval over seeds."
        ),
    )
    tick = _ticker(progress, 2 * len(sizes) * (len(seeds) + 1) + 4)

    # Part 1: a learning rate per model and n, from the tuning seed; each verdict seed's KL, trained fresh at it.
    held_out, _ = dist.sample(N_HELD_OUT, torch.Generator().manual_seed(10**6 + seed))  # (N_HELD_OUT, D)
    lrs, kl = {}, {}  # model -> [lr per n]; model -> seed -> [KL per n]
    for name in ARMS:
        lrs[name] = []
        for n in sizes:
            lrs[name].append(gaussian_lr(report, name, dist, n, steps, seed, quick))
            tick(f"{name}, n={n}, learning rate")
        kl[name] = []
        for s in seeds:
            kl[name].append([gaussian_kl(name, dist, n, lr, steps, s, held_out) for n, lr in zip(sizes, lrs[name])])
            tick(f"{name}, seed {s}", len(sizes))
    slopes = {name: [loglog_slope(sizes, kl[name][si]) for si in range(len(seeds))] for name in ARMS}

    # Part 2: a learning rate per model from the tuning seed's digits; each verdict seed's calibration at it.
    digits = {}
    for name in ARMS:
        lr = digit_lr(report, name, digit_steps, seed, quick)
        tick(f"digits, {name}, learning rate")
        digits[name] = digit_arm(name, lr, seeds, digit_steps)
        tick(f"digits, {name}")

    for name, key in (("softmax regression", "softmax"), ("MLP", "mlp")):
        report.check(f"kl_slope_{key}", slopes[name], seeds)
    for name, key in (("softmax regression", "softmax"), ("MLP", "mlp")):
        report.check(f"ece_excess_{key}", digits[name]["excess"], seeds)

    write_gaussian_results(report, sizes, seeds, kl, lrs, slopes, n_params)
    write_digit_results(report, seeds, digits)
    return report


def _ticker(progress, total: int):
    """tick(text, units): `units` more of `total` done."""
    done = [0]

    def tick(text: str, units: int = 1) -> None:
        done[0] += units
        if progress is not None:
            progress.update(min(done[0] / total, 1.0), text)

    return tick


def write_gaussian_results(report: Report, sizes, seeds, kl, lrs, slopes, n_params: int) -> None:
    report.number("sizes", sizes)
    report.number("seeds", seeds)
    report.number("kl", kl)
    report.number("learning_rates", lrs)  # model -> one per n, as `sizes`
    report.number("kl_slopes", slopes)
    theory = [n_params / (2 * n) for n in sizes]
    report.number("theory_p_over_2n", theory)
    mean = {name: [sum(kl[name][si][ni] for si in range(len(seeds))) / len(seeds) for ni in range(len(sizes))]
            for name in kl}
    report.number("kl_mean", mean)
    report.table(["n", "KL softmax regression (mean over seeds)", "KL MLP (mean over seeds)", "theory p/(2n)"],
                 [[n, mean["softmax regression"][i], mean["MLP"][i], theory[i]] for i, n in enumerate(sizes)],
                 title="KL(true posterior || learned) against n (nats, mean over held-out x)")
    report.table(["seed", "slope softmax regression", "slope MLP"],
                 [[s, slopes["softmax regression"][i], slopes["MLP"][i]] for i, s in enumerate(seeds)],
                 title="Slope of log KL against log n, per seed")

    def draw() -> plt.Figure:
        fig, ax = plt.subplots(figsize=(5.5, 4), layout="constrained")
        for name, style in (("softmax regression", "o-"), ("MLP", "s-")):
            for si in range(len(seeds)):
                ax.loglog(sizes, kl[name][si], style, alpha=0.25, color="C0" if style == "o-" else "C1")
            ax.loglog(sizes, mean[name], style, color="C0" if style == "o-" else "C1",
                      label=say(f"{name} (mean slope {sum(slopes[name]) / len(seeds):.2f})",
                                f"{name.replace('softmax regression', 'softmax 回归')}"
                                f"（平均斜率 {sum(slopes[name]) / len(seeds):.2f}）"))
        ax.loglog(sizes, theory, "k--", label=f"p/(2n), p = {n_params}")
        ax.set_xlabel(say("training examples n", "训练样本数 n"))
        ax.set_ylabel(say("KL(true || learned), nats", "KL(真实 || 学到的)，奈特"))

        ax.legend(fontsize=8)
        return fig

    report.figure("kl_vs_n", draw, "The learned posterior approaches the true P(class | x): each seed faint, the mean "
                  "bold, the asymptotic theory for a well-specified maximum-likelihood fit dashed.",
                  "学到的后验逼近真实的 P(类别 | x)：淡线是各个种子，粗线是平均，虚线是模型设定正确时最大似然拟合"
                  "的渐近理论。")


def write_digit_results(report: Report, seeds, digits: dict) -> None:
    report.number("digits", digits)
    rows = []
    for name, d in digits.items():
        rows.append([name, d["lr"], *(sum(d[k]) / len(seeds) for k in ("accuracy", "ece", "floor", "excess"))])
    report.table(["model", "lr", "test accuracy", "ECE", "control ECE 95% quantile",
                  "ECE minus control"], rows, title="Calibration on digits (means over seeds)")
    if any(not math.isfinite(v) for d in digits.values() for v in d["ece"]):
        report.note("An ECE is not finite.")

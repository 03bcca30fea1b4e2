"""Claim C12, first half: training is maximum likelihood (cross-entropy), so the learned
P(next | context) is a probability that means what it says: of the tokens predicted with
probability 0.7, about 70% come true. This experiment tests how that follows from the likelihood,
along a path of training that brings the model closer to the likelihood's maximum.

Why it should hold. Cross-entropy is a proper scoring rule: its expectation is lowest only at the
true conditional probabilities p, and a model q pays for every departure from them exactly
KL(p || q) nats per token, its excess NLL over the Bayes limit. That excess bounds the calibration
error. At a position the top token's true probability and the model's differ by at most the
total-variation distance between p and q, which Pinsker's inequality bounds by sqrt(KL / 2); the
binned calibration error of the top-1 probabilities (ECE, below) averages such differences, so

    true ECE  <=  mean over positions of TV(p, q)  <=  sqrt(excess NLL / 2)      (Jensen)

As training brings the excess NLL towards 0, the calibration error must follow it down. The
converse does not hold: a model far from the maximum can be calibrated too (the source's own
P(next | previous token) is, with a large excess), so the claim is a statement about the path,
not about any one model: along the likelihood's path, the calibration error falls as the excess
NLL falls, and the well-trained end is calibrated, with its temperature at 1.

Set-up: an order-2 Markov chain over 16 symbols (`redthread.data.synthetic.MarkovSource`,
hierarchical Dirichlet rows), whose Bayes limit is known exactly; a new chain, data and
initialisation for every seed. A one-layer Transformer LM is trained by maximum likelihood (AdamW
without weight decay, a prior that would shrink the logits) for each budget of the path, 100, 300
and 1000 steps, each run with its own warm-up and cosine decay: the same seed, data and learning
rate, only the number of steps differs. The learning rate is tuned once, on a seed no verdict uses
(`tuning_seed`), by validation NLL at the longest budget: the likelihood chooses it, never the ECE.

The measurements, at every point of the path, on the same held-out test positions (a fixed n):

    excess NLL      test NLL minus the chain's Bayes NLL of the same sequences (nats per token)
    ECE             positions grouped by the top next-token probability (the confidence) into 15
                    equal bins; the count-weighted mean |accuracy - confidence| (Guo et al. 2017, eq. 3)
    control ECE     the same positions and predictions, with labels drawn from the model's own
                    distribution: calibrated by construction, yet its ECE is not 0 (each bin's
                    accuracy is a frequency of finitely many draws); mean over 10 draws
    ECE gap         ECE minus control ECE

The ECE gap is what the checks read. For a calibrated model it is about 0 in expectation whatever
n; for a miscalibrated one it lies between the true ECE less the control's and the true ECE, and
tends to the true ECE as n grows. So a bar on it stays where it is as the test grows (the ECE in
units of the control's, the previous criterion, has a bar 2 x control that shrinks as 1 / sqrt(n):
any fixed miscalibration fails it at a large enough n). The signed over-confidence, mean
confidence minus accuracy over all positions, says which way a gap leans, and is reported at the
excess NLL where it was measured.

Temperature scaling (Guo et al. 2017, section 4.2) is the control for "how much of the gap is the
logits' scale": the one parameter T of softmax(logits / T) fitted by NLL on the validation split,
applied to the test split. At the maximum of the likelihood the NLL's derivative along the logits'
scale is 0, so a well-trained maximum-likelihood model needs T near 1; what is left of the gap
after scaling is miscalibration that no temperature removes.

(An earlier version judged three rungs, bigram, MLP and Transformer, at one budget, by the ECE in
units of the control's: that bar tightened with the test size alone, its verdicts moved with
floating-point noise, and the ratio tracked under-fitting; see the report's history.)
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from redthread.data.sequences import SequenceData
from redthread.data.synthetic import MarkovSource
from redthread.data.targets import IGNORE_INDEX
from redthread.experiments.criteria import ABOVE, BELOW, WITHIN, Criterion
from redthread.experiments.report import Report
from redthread.experiments.stats import estimate, run_seeds, tuning_seed
from redthread.experiments.tuning import tune
from redthread.lang import say
from redthread.models.transformer import TransformerConfig, TransformerLM
from redthread.plotting import pyplot
from redthread.train.calibration import Calibration
from redthread.train.loop import TrainConfig, train

plt = pyplot()

NAME, CLAIMS = "calibration", "C12"

HYPOTHESIS = ("A Transformer LM trained by maximum likelihood on a source with a known Bayes limit becomes calibrated as "
              "it approaches the likelihood's maximum: along a path of longer training, its ECE gap (its top-1 ECE "
              "minus a calibrated control's at the same test positions) falls as its excess NLL falls, the "
              "best-trained model's gap is below one point of probability, and its fitted temperature is near 1.")
_POINT = ("one point of probability, the least miscalibration that counts (as in the classification and vision "
          "experiments); the ECE gap is about 0 for a calibrated model at any test size and at most the true ECE, so "
          "the bar does not move with the number of test positions")
# The pre-registered criteria: each floor is the smallest effect size of interest, with its reason.
CRITERIA: dict[str, Criterion] = {
    "gap_falls": Criterion(
        "C12", "along the path", "the Transformer's ECE gap (top-1 ECE minus a calibrated control's, same test positions) "
        "at the least-trained point of the path (100 steps) minus at the most-trained (1000 steps), probability",
        0.005, ABOVE,
        "half a point of probability: probabilities are read to the nearest point, so a fall smaller than half a point "
        "can vanish in the rounding (gap_small's bar is one point)", bounds=(-2.0, 2.0)),
    "gap_small": Criterion(
        "C12", "well trained", "the Transformer's ECE gap (top-1 ECE minus a calibrated control's, same test positions) "
        "at the most-trained point of the path (1000 steps), probability", 0.01, BELOW, _POINT, bounds=(-1.0, 1.0)),
    "temperature": Criterion(
        "C12", "temperature", "log of the temperature fitted by validation NLL to the most-trained Transformer (1000 "
        "steps)", 0.05, WITHIN,
        "at the likelihood's maximum the NLL's derivative along the logits' scale is 0, so T = 1; a temperature within "
        "e^(±0.05) moves a two-way confidence p by at most 0.05 x max over p of p(1 - p) logit(p) = 0.011, one point "
        "of probability, the least miscalibration that counts"),
}
ORDER, VOCAB, CONCENTRATION, HIERARCHY = 2, 16, 1.0, 5.0  # as the sampling experiment's chain
LENGTH, N_BINS, BATCH = 32, 15, 32
CONTROL_DRAWS = 10  # label draws from the model's own prediction, averaged into the control's ECE
N_HEAD = 4
GRID = {"lr": (3e-3, 1e-2, 3e-2)}  # tuned once, at the path's longest budget, on the set's tuning seed; extends past an edge
QUICK_LR = 1e-2
BUDGET = {"steps": (100, 300, 1000), "quick_steps": (25, 50, 100)}  # the path: training steps, each a run of its own


def sizes(quick: bool) -> dict:
    """Sequences per split, the path's budgets, and the Transformer's width."""
    if quick:
        return {"train": 2000, "val": 250, "test": 500, "steps": BUDGET["quick_steps"], "d_model": 32}
    return {"train": 8000, "val": 1000, "test": 2000, "steps": BUDGET["steps"], "d_model": 64}


def run(quick: bool = False, seed: int = 0, progress=None) -> Report:
    size = sizes(quick)
    seeds, steps = run_seeds(seed, quick), size["steps"]
    report = Report(NAME, CLAIMS, quick=quick, setup=setup_text(size, seeds, seed, quick), criterion=(
        HYPOTHESIS + f" Checked on the path of {', '.join(map(str, steps))} steps: (a) the ECE gap at {steps[0]} steps "
        f"minus at {steps[-1]} exceeds 0.005 (half a point of probability); (b) the gap at {steps[-1]} steps is below "
        f"0.01 (one point); (c) |log T| < 0.05 for the temperature fitted on validation at {steps[-1]} steps. Each is "
        "a mean over seeds with its 95% interval; the control's ECE is the mean over "
        f"{CONTROL_DRAWS} label draws from the model's own prediction at the same positions. The excess NLL and the "
        "signed over-confidence (mean confidence minus accuracy) are reported at every point, not decided on."
    ))
    if quick:
        lr = QUICK_LR
    else:
        _, tuning_data, _ = splits(tuning_seed(seed), size)

        def val_nll(lr: float) -> float:
            return fitted(tuning_data, tuning_seed(seed), steps[-1], lr, size)[1]

        lr = report.tuned(f"lr, Transformer, {steps[-1]} steps", tune(val_nll, GRID["lr"]))
    points: list[list[dict]] = []  # per seed, one measurement per point of the path
    for i, s in enumerate(seeds):
        source, fit, test = splits(s, size)
        points.append([])
        for j, n_steps in enumerate(steps):
            model, _ = fitted(fit, s, n_steps, lr, size)
            points[-1].append(measure(model, source, fit, test, s))
            if progress is not None:
                progress.update((i * len(steps) + j + 1) / (len(seeds) * len(steps)), f"seed {s}, {n_steps} steps")
    decide(report, points, seeds, steps)
    describe(report, points, seeds, steps, lr)
    return report


def setup_text(size: dict, seeds: list[int], seed: int, quick: bool) -> str:
    return (
        f"Source: an order-{ORDER} Markov chain over {VOCAB} symbols (MarkovSource, concentration {CONCENTRATION}, "
        f"hierarchy {HIERARCHY}), a new chain for every seed ({', '.join(map(str, seeds))}); sequences of {LENGTH} "
        f"tokens, {size['train']} to train on, {size['val']} to validate (learning rate, temperature), {size['test']} "
        f"to test ({size['test'] * LENGTH:,} positions, the same at every point of the path). Model: a 1-layer "
        f"Transformer LM, {N_HEAD} heads, d_model {size['d_model']}, learned positions, trained by maximum likelihood "
        f"(AdamW without weight decay, which would add a prior that shrinks the logits), batch {BATCH}, warm-up over "
        f"5% of the steps and cosine decay to a tenth of the rate. The path: {', '.join(map(str, size['steps']))} steps, "
        "each a run of its own from the same initialisation and data, at one learning rate: "
        + (f"{QUICK_LR} (quick run: no tuning). " if quick else
           f"the best validation NLL of {', '.join(f'{lr:g}' for lr in GRID['lr'])} (extended past an edge) at "
           f"{size['steps'][-1]} steps on seed {tuning_seed(seed)}, which no verdict uses. ")
        + f"Calibration: top-1 confidence in {N_BINS} equal bins over every test position. Control: the same positions "
        f"with labels drawn from the model's own distribution, {CONTROL_DRAWS} draws. Temperature: one T fitted by "
        "NLL on the validation split, applied to the test split. The 95% intervals are over seeds."
    )


def splits(seed: int, size: dict) -> tuple[MarkovSource, SequenceData, SequenceData]:
    """The chain of this seed, its train/val data, and test data (both splits the test sequences; 'val' is read)."""
    source = MarkovSource(order=ORDER, vocab_size=VOCAB, concentration=CONCENTRATION, hierarchy=HIERARCHY, seed=seed)
    seqs = source.sample(size["train"] + size["val"] + size["test"], LENGTH, seed)  # (N, L)
    a, b = size["train"], size["train"] + size["val"]
    fit = SequenceData(seqs[:a], seqs[a:b], vocab_size=VOCAB + 1, boundary=VOCAB, end_token=False)
    test = SequenceData(seqs[b:], seqs[b:], vocab_size=VOCAB + 1, boundary=VOCAB, end_token=False)
    return source, fit, test


def fitted(data: SequenceData, seed: int, steps: int, lr: float, size: dict) -> tuple[nn.Module, float]:
    """A Transformer trained by maximum likelihood for `steps` steps, and its NLL on the whole validation split."""
    torch.manual_seed(seed)  # the same initialisation at every point of the path
    model = TransformerLM(TransformerConfig(vocab_size=data.vocab_size, block_size=LENGTH, n_layer=1, n_head=N_HEAD,
                                            d_model=size["d_model"], pos="learned"))
    result = train(model, data, TrainConfig(max_iters=steps, batch_size=BATCH, lr=lr, min_lr=lr / 10,
                                            warmup_iters=max(steps // 20, 1), eval_interval=steps, eval_batches=5,
                                            log_interval=steps, seed=seed, device="cpu", weight_decay=0.0),
                   progress=False)  # no prior: the plain likelihood; the final evaluation scores the whole split
    return model.eval(), float(result.val_nll)


@torch.no_grad()
def positions(model: nn.Module, data: SequenceData, split: str) -> tuple[torch.Tensor, torch.Tensor]:
    """Every scored position of a split: the logits (N, V) and the targets (N,)."""
    model.eval()
    logits, targets = [], []
    for x, y in data.eval_batches(split, 256, None):
        keep = y != IGNORE_INDEX  # (B, T)
        logits.append(model(x).float()[keep])
        targets.append(y[keep])
    return torch.cat(logits), torch.cat(targets)


def reliability(probs: torch.Tensor, targets: torch.Tensor, n_bins: int = N_BINS) -> Calibration:
    """The reliability diagram and ECE of top-1 probabilities (N, V) against targets (N,), binned as
    `redthread.train.calibration.calibration` bins a model's."""
    conf, top = probs.double().max(-1)  # (N,), (N,)
    hit = (top == targets).double()
    b = (conf * n_bins).long().clamp(max=n_bins - 1)  # the bin of each position
    count = torch.bincount(b, minlength=n_bins).double()
    safe = count.clamp(min=1)
    confidence = torch.bincount(b, conf, minlength=n_bins) / safe
    accuracy = torch.bincount(b, hit, minlength=n_bins) / safe
    empty = count == 0
    return Calibration(
        ece=float(((accuracy - confidence).abs() * count).sum() / count.sum()), counts=count.long().tolist(),
        confidence=confidence.masked_fill(empty, float("nan")).tolist(),
        accuracy=accuracy.masked_fill(empty, float("nan")).tolist(), n=int(count.sum()),
    )


def control_eces(probs: torch.Tensor, draws: int, seed: int) -> list[float]:
    """ECEs of a perfectly calibrated control: the same predictions (N, V), labels drawn from them."""
    generator = torch.Generator().manual_seed(seed)
    return [reliability(probs, torch.multinomial(probs, 1, generator=generator)[:, 0]).ece for _ in range(draws)]


def calibration_gap(probs: torch.Tensor, targets: torch.Tensor, seed: int, draws: int = CONTROL_DRAWS) -> dict:
    """The ECE of predictions (N, V) against targets (N,), the control's mean ECE at the same positions, and the gap."""
    cal = reliability(probs, targets)
    control = control_eces(probs, draws, seed)
    return {"ece": cal.ece, "control": float(np.mean(control)), "gap": cal.ece - float(np.mean(control)),
            "reliability": cal.to_dict()}


def overconfidence(probs: torch.Tensor, targets: torch.Tensor) -> float:
    """Mean top-1 probability minus top-1 accuracy over all positions: > 0 over-confident, < 0 under-confident."""
    conf, top = probs.double().max(-1)  # (N,), (N,)
    return float(conf.mean() - (top == targets).double().mean())


def pinsker_bound(excess_nll: float) -> float:
    """sqrt(excess NLL / 2): the most calibration error (true top-1 ECE) a model with this excess NLL can have."""
    return math.sqrt(max(excess_nll, 0.0) / 2)


def fit_temperature(logits: torch.Tensor, targets: torch.Tensor, lo: float = 0.25, hi: float = 4.0) -> float:
    """The T in [lo, hi] minimising the NLL of softmax(logits / T): golden-section search on 1 / T, in which the
    NLL is convex (a log-sum-exp of linear functions minus a linear one)."""
    def nll(beta: float) -> float:
        return float(F.cross_entropy(logits.double() * beta, targets))

    a, b = 1 / hi, 1 / lo
    g = (math.sqrt(5) - 1) / 2
    c, d = b - g * (b - a), a + g * (b - a)
    for _ in range(60):
        if nll(c) < nll(d):
            b, d = d, c
            c = b - g * (b - a)
        else:
            a, c = c, d
            d = a + g * (b - a)
    return 2 / (a + b)


def measure(model: nn.Module, source: MarkovSource, fit: SequenceData, test: SequenceData, seed: int) -> dict:
    """One point of the path: the excess NLL, the ECE gap and over-confidence, before and after temperature scaling."""
    z, y = positions(model, test, "val")  # (N, V), (N,)
    t = fit_temperature(*positions(model, fit, "val"))
    probs, scaled = z.softmax(-1), (z / t).softmax(-1)
    before, after = calibration_gap(probs, y, seed), calibration_gap(scaled, y, seed)
    nll, bayes = float(F.cross_entropy(z, y)), source.bayes_nll(np.stack(test.sequences("val")))
    return {
        "nll": nll, "bayes": bayes, "excess": nll - bayes, "bound": pinsker_bound(nll - bayes),
        "ece": before["ece"], "control": before["control"], "gap": before["gap"], "over": overconfidence(probs, y),
        "temperature": t, "log_temperature": math.log(t), "nll_scaled": float(F.cross_entropy(z / t, y)),
        "ece_scaled": after["ece"], "control_scaled": after["control"], "gap_scaled": after["gap"],
        "over_scaled": overconfidence(scaled, y), "positions": len(y),
        "reliability": before["reliability"], "reliability_scaled": after["reliability"],
    }


KEYS = ("nll", "bayes", "excess", "bound", "ece", "control", "gap", "over", "temperature", "log_temperature",
        "nll_scaled", "ece_scaled", "control_scaled", "gap_scaled", "over_scaled")


def per_seed(points: list[list[dict]], key: str, at: int) -> list[float]:
    """One value per seed at point `at` of the path."""
    return [p[at][key] for p in points]


def decide(report: Report, points: list[list[dict]], seeds: list[int], steps: tuple[int, ...]) -> None:
    def est(values, name):
        return estimate(values, CRITERIA[name].bounds)

    excess = [estimate(per_seed(points, "excess", j)) for j in range(len(steps))]
    falls = [p[0]["gap"] - p[-1]["gap"] for p in points]
    report.check("gap_falls", falls, seeds, seen=(
        f"{est(falls, 'gap_falls')}: gap {np.mean(per_seed(points, 'gap', 0)):.4f} at excess NLL "
        f"{excess[0].mean:.3f} ({steps[0]} steps) → {np.mean(per_seed(points, 'gap', -1)):.4f} at "
        f"{excess[-1].mean:.3f} ({steps[-1]} steps)"))
    last = per_seed(points, "gap", -1)
    report.check("gap_small", last, seeds, seen=(
        f"{est(last, 'gap_small')} at excess NLL {excess[-1]} nats; ECE {np.mean(per_seed(points, 'ece', -1)):.4f}, "
        f"control {np.mean(per_seed(points, 'control', -1)):.4f}; over-confidence "
        f"{estimate(per_seed(points, 'over', -1))}"))
    log_t = per_seed(points, "log_temperature", -1)
    report.check("temperature", log_t, seeds, seen=(
        f"log T {est(log_t, 'temperature')}, T {np.mean(per_seed(points, 'temperature', -1)):.4f}; gap after "
        f"scaling {np.mean(per_seed(points, 'gap_scaled', -1)):.4f}"))


def describe(report: Report, points: list[list[dict]], seeds: list[int], steps: tuple[int, ...], lr: float) -> None:
    for key in KEYS:
        report.number(key, [[p[key] for p in seed_points] for seed_points in points])  # [seed][point]
    report.number("seeds", seeds)
    report.number("steps", list(steps))
    report.number("learning_rate", lr)
    report.number("positions", points[0][0]["positions"])
    report.number("reliability", [[p["reliability"] for p in seed_points] for seed_points in points])
    report.number("reliability_scaled", [[p["reliability_scaled"] for p in seed_points] for seed_points in points])

    def mean(key: str, j: int) -> float:
        return float(np.mean(per_seed(points, key, j)))

    report.table(
        ["steps", "test NLL", "Bayes NLL", "excess NLL", "sqrt(excess / 2)", "ECE", "control ECE", "ECE gap",
         "over-confidence", "fitted T", "ECE gap at fitted T"],
        [[n, mean("nll", j), mean("bayes", j), mean("excess", j), mean("bound", j), mean("ece", j), mean("control", j),
          mean("gap", j), mean("over", j), mean("temperature", j), mean("gap_scaled", j)]
         for j, n in enumerate(steps)],
        title=f"The path on the same {points[0][0]['positions']:,} test positions, mean over {len(seeds)} seeds "
              "(NLL in nats/token)")
    report.note("sqrt(excess / 2) is Pinsker's bound on the true ECE at that excess NLL (module docstring): the most "
                "miscalibration the likelihood leaves room for. Over-confidence is mean top-1 confidence minus "
                "accuracy (> 0 over-confident, < 0 under-confident). With 95% intervals over seeds: " + "; ".join(
                    f"{n} steps: excess NLL {estimate(per_seed(points, 'excess', j))}, ECE gap "
                    f"{estimate(per_seed(points, 'gap', j))}, over-confidence {estimate(per_seed(points, 'over', j))}, "
                    f"fitted T {estimate(per_seed(points, 'temperature', j))}" for j, n in enumerate(steps)) + ".")
    report.figure("path", lambda: plot_path(points, steps),
                  "Left: each seed's ECE gap against its excess NLL along the path (grey lines; means in colour, one "
                  "per budget), with gap_small's bar (one point of probability). Right: the temperature fitted on "
                  "validation at each point, with the band |log T| < 0.05.",
                  "左：沿着训练路径，每个种子的 ECE 差距随它超出贝叶斯极限的 NLL 的变化（灰线；彩色标记是平均，"
                  "每个训练预算一个），并标出判据 gap_small 的界（概率的一个百分点）。右：每一点上在验证集上拟合出的"
                  "温度，并标出 |log T| < 0.05 的范围。")
    report.figure("reliability", lambda: plot_reliability(points[0], steps),
                  f"Reliability diagrams on seed {seeds[0]}'s test positions at the least- and the most-trained point "
                  "(rows), before and after temperature scaling (columns); bars: accuracy per confidence bin, grey: "
                  "share of positions.",
                  f"种子 {seeds[0]} 在测试位置上的可靠性图：两行分别是训练最少和最多的点，两列分别是温度缩放之前和之后；"
                  "柱：每个置信度区间里的准确率，灰色：位置所占的比例。")


def plot_path(points: list[list[dict]], steps: tuple[int, ...]) -> plt.Figure:
    fig, axes = plt.subplots(1, 2, figsize=(10, 4), layout="constrained")
    excess = np.array([[p["excess"] for p in seed_points] for seed_points in points])  # (S, P)
    for ax, key, label in ((axes[0], "gap", say("ECE gap (ECE − control ECE)", "ECE 差距（ECE − 对照的 ECE）")),
                           (axes[1], "temperature", say("fitted T", "拟合出的 T"))):
        values = np.array([[p[key] for p in seed_points] for seed_points in points])  # (S, P)
        for x, v in zip(excess, values):
            ax.plot(x, v, "-", color="grey", lw=0.8, alpha=0.6)
        for j, n in enumerate(steps):
            ax.plot(excess[:, j], values[:, j], "o", color=f"C{j}", ms=4, alpha=0.6)
            ax.plot(excess[:, j].mean(), values[:, j].mean(), "D", color=f"C{j}", ms=9, mec="k",
                    label=say(f"{n} steps", f"{n} 步"))
        if excess.min() > 0:
            ax.set_xscale("log")
        ax.set(xlabel=say("excess NLL over the Bayes limit (nats/token)", "超出贝叶斯极限的 NLL（奈特/词元）"), ylabel=label)
    axes[0].axhline(0, color="grey", ls=":", lw=1)
    axes[0].axhline(CRITERIA["gap_small"].floor, color="r", ls="--", lw=1,
                    label=say("gap_small's bar", "判据 gap_small 的界"))
    axes[0].set_title(say("Calibration along the likelihood's path", "沿着最大似然训练的路径看校准"))
    band = CRITERIA["temperature"].floor
    axes[1].axhspan(math.exp(-band), math.exp(band), color="green", alpha=0.15, label="|log T| < 0.05")
    axes[1].axhline(1, color="grey", ls=":", lw=1)
    axes[1].set_title(say("Temperature fitted on validation", "在验证集上拟合的温度"))
    for ax in axes:
        ax.legend(fontsize=8)
    return fig


def plot_reliability(seed_points: list[dict], steps: tuple[int, ...]) -> plt.Figure:
    fig, axes = plt.subplots(2, 2, figsize=(8, 8), layout="constrained")
    centers = [(i + 0.5) / N_BINS for i in range(N_BINS)]
    for row, j in enumerate((0, len(steps) - 1)):
        p = seed_points[j]
        for col, (key, when) in enumerate((("reliability", "T = 1"), ("reliability_scaled", f"T = {p['temperature']:.3f}"))):
            ax, c = axes[row, col], p[key]
            ax.bar(centers, [0.0 if math.isnan(a) else a for a in c["accuracy"]], width=1 / N_BINS, edgecolor="k",
                   lw=0.4, alpha=0.8, label=say("accuracy", "准确率"))
            ax.bar(centers, [n / c["n"] for n in c["counts"]], width=1 / N_BINS, color="grey", alpha=0.4,
                   label=say("share of positions", "位置所占的比例"))
            ax.plot([0, 1], [0, 1], "r--", lw=1, label=say("calibrated", "完全校准"))
            gap = p["gap"] if col == 0 else p["gap_scaled"]
            ax.set_title(say(f"{steps[j]} steps, {when}: ECE {c['ece']:.4f}, gap {gap:.4f}",
                             f"{steps[j]} 步，{when}：ECE {c['ece']:.4f}，差距 {gap:.4f}"), fontsize=9)
            ax.set(xlim=(0, 1), ylim=(0, 1), xlabel=say("confidence (top probability)", "置信度（最大概率）"),
                   ylabel=say("accuracy", "准确率"))

            ax.legend(fontsize=8, loc="upper left")
    return fig

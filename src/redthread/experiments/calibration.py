"""Claim C12: training is maximum likelihood (cross-entropy), so the learned P(next | context) means
what it says: of the tokens predicted with probability 0.7, about 70% come true.

Set-up: a small character-level Transformer trained on Shakespeare's plays (the default corpus, as
`redthread demo` reads it: 33 plays to train, 4 whole plays held out) through the shared loop.
On held-out text, `redthread.train.calibration.calibration` groups every position by the model's
top next-character probability (its confidence) into equal-width bins and compares each bin's
mean confidence with how often that character came next: the reliability diagram, and its
count-weighted mean gap, the expected calibration error (ECE, Guo et al. 2017, eq. 3). Real text
rather than a synthetic chain, because the claim is about language models, and calibration needs
no known truth: the held-out characters are the check.

Why the criterion: the cross-entropy is a proper scoring rule, minimised in expectation only by
the true conditional probabilities, so a model fitted by it is pushed towards calibration. The
scale of the logits is one direction the fit can move: dividing them by a temperature T sharpens
(T < 1) or flattens (T > 1) every prediction, and at the maximum of the likelihood the derivative
along it vanishes, so the held-out NLL must be lowest near T = 1 if the fit generalises. The same
model with its logits sharpened (T = 0.5) or flattened (T = 2) is miscalibrated on purpose; the
diagram must see that, or a small ECE would say nothing.
"""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F
from torch import nn

from redthread.data.corpus import load_corpus, split_corpus
from redthread.data.dataset import prepare_splits
from redthread.data.lm import LMData
from redthread.data.targets import IGNORE_INDEX
from redthread.data.tokenizers import train_tokenizer
from redthread.errors import RedthreadError
from redthread.experiments.report import Report
from redthread.models.transformer import TransformerConfig, TransformerLM
from redthread.train.calibration import Calibration, calibration
from redthread.train.loop import TrainConfig, evaluate, train

NAME, CLAIMS = "calibration", "C12"
BLOCK, N_BINS = 64, 15
ECE_MAX = 0.03  # the trained model's top-1 ECE on held-out text
T_RANGE = (0.9, 1.1)  # where the held-out NLL's best temperature must lie
DISTORTIONS = (0.5, 2.0)  # sharpened and flattened copies of the model, miscalibrated on purpose
GRID = torch.exp(torch.linspace(math.log(0.5), math.log(2.0), 41))  # temperatures searched, 3.5% apart; 1 included


class Tempered(nn.Module):
    """The model with its logits divided by t: the same ranking, a sharper (t < 1) or flatter distribution."""

    def __init__(self, model: nn.Module, t: float):
        super().__init__()
        self.model, self.t = model, t

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        return self.model(idx) / self.t  # (B, T, V)


def run(quick: bool = False, seed: int = 0, progress=None) -> Report:
    n_layer, d_model, steps = (2, 64, 200) if quick else (3, 96, 600)
    eval_batches = 20 if quick else 50  # of 64 windows of BLOCK characters
    report = Report(
        NAME, CLAIMS, quick=quick,
        setup=(
            f"Corpus: Shakespeare's plays, characters; 33 plays to train on, 4 held out whole (Cymbeline, Julius Caesar, "
            f"Pericles, The Two Gentlemen of Verona). Model: a "
            f"{n_layer}-layer character Transformer (4 heads, d_model {d_model}, rotary positions, context {BLOCK}) "
            f"trained by maximum likelihood for {steps} steps of batch 32 (AdamW, lr 3e-3 with warm-up and cosine "
            f"decay, seed {seed}). Calibration on {eval_batches} x 64 held-out windows of {BLOCK} characters (the same "
            f"fixed windows for every measurement): top-1 confidence in {N_BINS} equal bins. Held-out NLL for "
            f"logits divided by T on a grid of {len(GRID)} temperatures from 0.5 to 2."
        ),
        criterion=(
            f"(1) The trained model's ECE on held-out text is at most {ECE_MAX}. (2) The temperature that minimises "
            f"the held-out NLL lies in [{T_RANGE[0]}, {T_RANGE[1]}]. (3) The same model sharpened (T = "
            f"{DISTORTIONS[0]}) and flattened (T = {DISTORTIONS[1]}) each has an ECE above {ECE_MAX}."
        ),
    )
    try:
        corpus = load_corpus(None)
    except RedthreadError as e:
        report.skip(f"the default corpus is not installed here ({e})")
        return report
    train_text, val_text = split_corpus(corpus)
    tokenizer = train_tokenizer("char", corpus.text)
    data = LMData(*prepare_splits(train_text, val_text, tokenizer), block_size=BLOCK)
    torch.manual_seed(seed)
    model = TransformerLM(TransformerConfig(vocab_size=tokenizer.vocab_size, block_size=BLOCK, n_layer=n_layer, n_head=4,
                                            d_model=d_model, pos="rope"))
    train(model, data, TrainConfig(max_iters=steps, batch_size=32, lr=3e-3, min_lr=3e-4, warmup_iters=30,
                                   eval_interval=steps, eval_batches=5, seed=seed, device="cpu"), progress=False)
    if progress is not None:
        progress.update(0.7, "trained")

    val = evaluate(model, data, "val", batch_size=64, max_batches=eval_batches)
    cals = {t: calibration(Tempered(model, t) if t != 1.0 else model, data, "val", N_BINS, 64, eval_batches)
            for t in (1.0, *DISTORTIONS)}
    nll_by_t = nll_over_temperatures(model, data, eval_batches)
    best_t = float(GRID[nll_by_t.argmin()])
    if progress is not None:
        progress.update(1.0)

    cal = cals[1.0]
    report.number("val_nll", val["nll"])
    report.number("val_bpc", val["bpc"])
    report.number("positions", cal.n)
    report.number("vocab_size", tokenizer.vocab_size)
    for t, c in cals.items():
        report.number(f"T={t:g}", c.to_dict())
    report.number("temperatures", GRID)
    report.number("nll_by_temperature", nll_by_t)
    report.number("best_temperature", best_t)
    report.number("nll_at_best", float(nll_by_t.min()))
    report.number("nll_at_1", float(nll_by_t[GRID.sub(1.0).abs().argmin()]))

    report.decide(cal.ece <= ECE_MAX, f"ECE <= {ECE_MAX}", f"{cal.ece:.4f} over {cal.n:,} held-out positions")
    report.decide(T_RANGE[0] <= best_t <= T_RANGE[1], f"NLL-optimal temperature in [{T_RANGE[0]}, {T_RANGE[1]}]",
                  f"{best_t:.3f} (NLL {float(nll_by_t.min()):.4f} vs {val['nll']:.4f} at T = 1)")
    distorted = [cals[t].ece for t in DISTORTIONS]
    report.decide(min(distorted) > ECE_MAX, f"ECE above {ECE_MAX} when sharpened or flattened",
                  ", ".join(f"T = {t:g}: {e:.4f}" for t, e in zip(DISTORTIONS, distorted)))

    report.table(["bin", "positions", "mean confidence", "accuracy", "gap"],
                 [[f"{i / N_BINS:.2f}-{(i + 1) / N_BINS:.2f}", n, c, a, a - c]
                  for i, (n, c, a) in enumerate(zip(cal.counts, cal.confidence, cal.accuracy)) if n > 0],
                 title="Reliability of the trained model's top next-character probability (held out)")
    report.table(["logits divided by", "ECE", "mean confidence", "accuracy"],
                 [[t, c.ece, mean_confidence(c), mean_accuracy(c)] for t, c in cals.items()],
                 title="The same model, sharpened and flattened")
    report.note(f"Held-out NLL {val['nll']:.4f} nats/character ({val['bpc']:.3f} bits/character), vocabulary "
                f"{tokenizer.vocab_size} characters.")
    report.figure("reliability", plot(cals, nll_by_t, best_t),
                  f"Reliability diagrams (bars: accuracy per confidence bin, grey: share of positions) and the held-out "
                  f"NLL against the temperature, lowest at T = {best_t:.2f}.")
    return report


@torch.no_grad()
def nll_over_temperatures(model: nn.Module, data: LMData, max_batches: int) -> torch.Tensor:
    """Held-out NLL (nats/token) of softmax(logits / T) for every T in GRID, from one pass."""
    model.eval()
    total, count = torch.zeros(len(GRID), dtype=torch.float64), 0
    for x, y in data.eval_batches("val", 64, max_batches):
        logits = model(x).float()  # (B, T, V)
        keep = y != IGNORE_INDEX
        z, y = logits[keep], y[keep]  # (N, V), (N,)
        for i, t in enumerate(GRID):
            total[i] += F.cross_entropy(z / t, y, reduction="sum").double()
        count += y.numel()
    return total / count


def mean_confidence(c: Calibration) -> float:
    return sum(n * x for n, x in zip(c.counts, c.confidence) if n) / c.n


def mean_accuracy(c: Calibration) -> float:
    return sum(n * x for n, x in zip(c.counts, c.accuracy) if n) / c.n


def plot(cals: dict[float, Calibration], nll_by_t: torch.Tensor, best_t: float) -> plt.Figure:
    fig, axes = plt.subplots(1, len(cals) + 1, figsize=(4 * (len(cals) + 1), 4), layout="constrained")
    for ax, (t, c) in zip(axes, cals.items()):
        centers = [(i + 0.5) / N_BINS for i in range(N_BINS)]
        ax.bar(centers, [0.0 if math.isnan(a) else a for a in c.accuracy], width=1 / N_BINS, edgecolor="k", lw=0.4,
               alpha=0.8, label="accuracy")
        ax.bar(centers, [n / c.n for n in c.counts], width=1 / N_BINS, color="grey", alpha=0.4, label="share of positions")
        ax.plot([0, 1], [0, 1], "r--", lw=1, label="calibrated")
        name = "trained model" if t == 1.0 else f"logits / {t:g}"
        ax.set_title(f"{name}: ECE {c.ece:.3f}")
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        ax.set_xlabel("confidence (top probability)")
        ax.set_ylabel("accuracy")
        ax.legend(fontsize=8, loc="upper left")
    ax = axes[-1]
    ax.plot(GRID, nll_by_t, "-")
    ax.axvline(best_t, color="r", ls="--", lw=1, label=f"best T = {best_t:.2f}")
    ax.axvspan(*T_RANGE, color="green", alpha=0.1, label="criterion")
    ax.set_xscale("log")
    ax.set_xticks([0.5, 0.7, 1.0, 1.4, 2.0], ["0.5", "0.7", "1", "1.4", "2"])
    ax.minorticks_off()
    ax.set_xlabel("temperature T (logits / T)")
    ax.set_ylabel("held-out NLL (nats/character)")
    ax.set_title("Held-out NLL against the temperature")
    ax.legend(fontsize=8)
    return fig

"""Calibration: does P(next token | context) mean what it says?

A model trained by maximum likelihood is pushed towards calibrated probabilities (the NLL is a
proper scoring rule), but a finite model on finite data need not get there. The standard check
(Guo et al. 2017): take the model's most probable next token at every scored position, group
positions by that top probability ("confidence") into equal-width bins, and compare each bin's
mean confidence with how often the top token was right. A calibrated model lies on the
diagonal; the expected calibration error (ECE) is the count-weighted mean gap:

    ECE = sum_b (n_b / N) * |accuracy_b - confidence_b|
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from redthread.data.targets import IGNORE_INDEX
from redthread.models.base import model_device


@dataclass
class Calibration:
    ece: float
    counts: list[int]  # positions per bin
    confidence: list[float]  # mean top probability per bin (nan where empty)
    accuracy: list[float]  # how often the top token was the target, per bin
    n: int

    def to_dict(self) -> dict:
        return {"ece": self.ece, "counts": self.counts, "confidence": self.confidence, "accuracy": self.accuracy, "n": self.n}


@torch.no_grad()
def calibration(model: nn.Module, data, split: str = "val", n_bins: int = 15, batch_size: int = 32,
                max_batches: int | None = None) -> Calibration:
    """Reliability of a token model's top-1 next-token probabilities on a split of `data`."""
    was_training = model.training
    model.eval()
    device = model_device(model)
    count = torch.zeros(n_bins, dtype=torch.float64)
    conf_sum = torch.zeros(n_bins, dtype=torch.float64)
    hit_sum = torch.zeros(n_bins, dtype=torch.float64)
    for x, y in data.eval_batches(split, batch_size, max_batches):
        logits = model(x.to(device)).float()  # (B, T, V)
        y = y.to(device)
        keep = y != IGNORE_INDEX
        conf, top = logits.softmax(-1).max(-1)  # (B, T) each
        conf, hit = conf[keep].double().cpu(), (top[keep] == y[keep]).double().cpu()
        b = (conf * n_bins).long().clamp(max=n_bins - 1)  # bin of each position
        count += torch.bincount(b, minlength=n_bins)
        conf_sum += torch.bincount(b, conf, minlength=n_bins)
        hit_sum += torch.bincount(b, hit, minlength=n_bins)
    model.train(was_training)
    n = int(count.sum())
    safe = count.clamp(min=1)
    confidence, accuracy = conf_sum / safe, hit_sum / safe
    ece = float(((accuracy - confidence).abs() * count).sum() / max(n, 1))
    empty = count == 0
    return Calibration(
        ece=ece,
        counts=count.long().tolist(),
        confidence=confidence.masked_fill(empty, float("nan")).tolist(),
        accuracy=accuracy.masked_fill(empty, float("nan")).tolist(),
        n=n,
    )


def plot_reliability(results: dict[str, Calibration], path: str | Path) -> None:
    """Reliability diagrams, one panel per model: accuracy against confidence, with the diagonal."""
    from redthread.plotting import pyplot

    plt = pyplot()

    from redthread.files import atomic_write
    from redthread.lang import figure_fonts, say

    names = list(results)
    cols = min(4, len(names))
    rows = (len(names) + cols - 1) // cols
    with figure_fonts(names):  # the words in the language chosen (redthread.lang); Chinese in a CJK font
        fig, axes = plt.subplots(rows, cols, figsize=(3.2 * cols, 3.2 * rows), squeeze=False)
        for ax, name in zip(axes.flat, names):
            r = results[name]
            n_bins = len(r.counts)
            centers = [(i + 0.5) / n_bins for i in range(n_bins)]
            ax.bar(centers, [0.0 if math.isnan(a) else a for a in r.accuracy], width=1 / n_bins, edgecolor="k",
                   lw=0.4, alpha=0.8, label=say("accuracy", "准确率"))
            ax.plot([0, 1], [0, 1], "r--", lw=1, label=say("calibrated", "完全校准"))
            ax.set_title(f"{name}  (ECE {r.ece:.3f})", fontsize=9)
            ax.set_xlim(0, 1)
            ax.set_ylim(0, 1)
            ax.set_xlabel(say("confidence (top probability)", "置信度（最大的概率）"), fontsize=8)
            ax.set_ylabel(say("accuracy", "准确率"), fontsize=8)
        for ax in list(axes.flat)[len(names):]:
            ax.axis("off")
        fig.tight_layout()
    atomic_write(Path(path), lambda tmp: fig.savefig(tmp, format=Path(path).suffix.lstrip(".") or "png", dpi=110))
    plt.close(fig)

